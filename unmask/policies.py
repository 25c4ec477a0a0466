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
from unmask.decode.registry import RENAMED, Tier, describe_policies, policies_in_tier, spec_keys
from unmask.denoiser import Denoiser
from unmask.errors import SpecRenamed, UnmaskError


def _mi_head(denoiser: Denoiser, model_dir: str | os.PathLike | None):
    from unmask.mi.estimator import load_head

    if model_dir is None:
        raise UnmaskError("this policy needs an MI head: give the model directory it is saved in")
    return load_head(model_dir).to(denoiser.device)


def _order_policy(denoiser: Denoiser, model_dir: str | os.PathLike | None):
    from unmask.order.net import load_order_net

    if model_dir is None:
        raise UnmaskError("the learned policy needs an order policy: give the model directory it is saved in")
    return load_order_net(model_dir).to(denoiser.device)


# How each declared resource is found, from the denoiser and the directory it was loaded from.
LOADERS: dict[str, Callable[[Denoiser, str | os.PathLike | None], object]] = {
    "denoiser": lambda denoiser, model_dir: denoiser,
    "mi_head": _mi_head,
    "order_policy": _order_policy,
}


def build_policy(spec: str, denoiser: Denoiser | None = None, model_dir: str | os.PathLike | None = None,
                 budget: int | None = None, resolve: bool = True):
    """Parse ``spec``, set a fixed ``budget`` if given, and attach every resource the policy needs.

    Args:
        denoiser: the model the policy will decode with (probed by the oracles, e.g. ``exact``).
        model_dir: where that model was loaded from (MI heads and order policies are saved there).
        budget: passes for a fixed-budget policy (a :class:`~unmask.decode.FixedBudget`: ``random``,
            ``top_prob``, ``margin``, ``learned``, ``mi_steps``, ``exact_steps``); refused for others, and
            for a spec that names its own ``steps`` (two budgets would be ambiguous).
        resolve: attach the resources (False: only check the spec and the budget, e.g. before a load).
    """
    policy = parse_policy(spec)
    if budget is not None and "steps" in spec_keys(spec):
        raise UnmaskError(f"{spec}: the spec sets steps and --budget {budget} is given too; give one")
    policy = with_budget(policy, budget)
    if not resolve:
        return policy
    objects = {}
    for name in sorted(needed_resources(policy)):
        if denoiser is None:
            raise UnmaskError(f"{policy_spec(policy)} needs the {name.replace('_', ' ')} of a model; give the model")
        objects[name] = LOADERS[name](denoiser, model_dir)
    return attach(policy, **objects)


__all__ = ["LOADERS", "POLICIES", "RENAMED", "SpecRenamed", "Tier", "attach", "build_policy", "describe_policies",
           "needed_resources", "parse_policy", "policies_in_tier", "policy_spec", "spec_keys", "with_budget"]
