"""Every decoding policy of the library, by spec, with what it needs attached.

The front door for users, commands and benchmarks: importing this module registers every policy
family (the baselines of :mod:`unmask.decode`, the MI-guided ones of :mod:`unmask.mi.policies`, the
learned order of :mod:`unmask.order.policy`), so a spec parses the same whatever was imported before;
:func:`policies_in_tier` lists them by :class:`Tier` (stable, research, oracle), and
:func:`build_policy` turns a spec such as ``mi:gamma=0.1,lam=2`` into a policy whose declared
resources are filled — the model to probe, the MI head saved beside the model — loading only what
this policy instance needs.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from unmask import mi, order  # noqa: F401  (registers the mi, demask, research, oracle and learned policies)
from unmask.decode import POLICIES, attach, needed_resources, parse_policy, policy_spec, with_budget
from unmask.decode.policy import budget_policies
from unmask.decode.registry import RENAMED, Tier, describe_policies, policies_in_tier, spec_keys
from unmask.denoiser import Denoiser
from unmask.errors import SpecRenamed, UnmaskError


def _mi_head(denoiser: Denoiser, folder: str | os.PathLike | None, base: str | os.PathLike | None, named: bool):
    from unmask.mi.estimator import load_head

    if folder is None:
        raise UnmaskError("this policy needs an MI head: give the folder it is saved in (--head DIR)")
    return load_head(folder, base=base, named=named).to(denoiser.device)


def _order_policy(denoiser: Denoiser, folder: str | os.PathLike | None, base: str | os.PathLike | None, named: bool):
    from unmask.order.net import load_order_net

    if folder is None:
        raise UnmaskError("the learned policy needs an order policy: give the folder it is saved in (--order DIR)")
    return load_order_net(folder, base=base, named=named).to(denoiser.device)


# How each declared resource is found, from the denoiser, the folder of that resource, the model weights an
# add-on must have been trained for, and whether its folder was named on its own (then it must name its model).
LOADERS: dict[str, Callable[[Denoiser, str | os.PathLike | None, str | os.PathLike | None, bool], object]] = {
    "denoiser": lambda denoiser, folder, base, named: denoiser,
    "mi_head": _mi_head,
    "order_policy": _order_policy,
}
ADDON_FLAGS = {"mi_head": "head", "order_policy": "order"}  # the CLI flag naming each add-on's folder


def build_policy(spec: str, denoiser: Denoiser | None = None, model_dir: str | os.PathLike | None = None,
                 budget: int | None = None, resolve: bool = True, *, head_dir: str | os.PathLike | None = None,
                 order_dir: str | os.PathLike | None = None, base: str | os.PathLike | None = None):
    """Parse ``spec``, set a fixed ``budget`` if given, and attach every resource the policy needs.

    Args:
        denoiser: the model the policy will decode with (probed by the oracles, e.g. ``exact``).
        model_dir: where that model was loaded from (the shipped models keep their MI head and order
            policy there).
        budget: passes for a fixed-budget policy (a :class:`~unmask.decode.FixedBudget`: ``random``,
            ``top_prob``, ``margin``, ``learned``, ``mi_steps``, ``exact_steps``); refused for others, and
            for a spec that names its own ``steps`` (two budgets would be ambiguous).
        resolve: attach the resources (False: only check the spec and the budget, e.g. before a load).
        head_dir: the folder of the MI head (``unmask mi train --out``); default ``model_dir``.
        order_dir: the folder of the order policy (``unmask <task> train-order --out``); default ``model_dir``.
        base: the model's weights (an unmask model directory, a Hugging Face folder or a weights file):
            an add-on recording another model's digest is refused (:func:`unmask.artifacts.check_base`).
            Default: the unmask model in ``model_dir``, if there is one.

    A ``head_dir`` or ``order_dir`` the policy does not use is refused, so that a mistyped spec never runs
    without the add-on its user meant.
    """
    from unmask import artifacts

    policy = parse_policy(spec)
    if budget is not None and "steps" in spec_keys(spec):
        raise UnmaskError(f"{spec}: the spec sets steps and --budget {budget} is given too; give one")
    policy = with_budget(policy, budget)
    needed = needed_resources(policy)
    folders = {"mi_head": head_dir, "order_policy": order_dir}
    unused = [f"--{ADDON_FLAGS[name]} {folder}" for name, folder in folders.items() if folder is not None and name not in needed]
    if unused:
        raise UnmaskError(f"{', '.join(unused)}: {spec} does not read it (mi reads --head when lam > 0, learned --order)")
    if not resolve:
        return policy
    if base is None and model_dir is not None and artifacts.exists(model_dir, artifacts.MODEL):
        base = model_dir
    named = [f"{ADDON_FLAGS[name]}_dir" for name, folder in folders.items() if folder is not None]
    if named and base is None:
        raise UnmaskError(f"{', '.join(named)}: give base= too (the model's folder or weights file), which the add-on is "
                          "checked against")
    objects = {}
    for name in sorted(needed):
        if denoiser is None:
            raise UnmaskError(f"{policy_spec(policy)} needs the {name.replace('_', ' ')} of a model; give the model")
        objects[name] = LOADERS[name](denoiser, folders.get(name) or model_dir, base, folders.get(name) is not None)
    return attach(policy, **objects)


__all__ = ["ADDON_FLAGS", "LOADERS", "POLICIES", "RENAMED", "SpecRenamed", "Tier", "attach", "budget_policies", "build_policy",
           "describe_policies",
           "needed_resources", "parse_policy", "policies_in_tier", "policy_spec", "spec_keys", "with_budget"]
