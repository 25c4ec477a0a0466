"""Decoding: one loop (:func:`decode`, over the step generator :func:`decode_steps`) and one small
frozen dataclass per policy. This package knows nothing of MI, learned orders or tasks; the MI
policies live in :mod:`unmask.mi.policies`, and :mod:`unmask.policies` gathers every family."""

import importlib
import inspect
import sys
import types

from unmask.decode import adaptive, budget, sequential  # noqa: F401  (registers the policies)
from unmask.decode.loop import DecodeResult, Rule, Step, TokenRule, decode, decode_steps
from unmask.decode.policy import FixedBudget, Policy, Selection, attach, needed_resources, resource, with_budget
from unmask.decode.registry import POLICIES, parse_policy, policy_spec
from unmask.decode.semi_ar import SemiAR
from unmask.decode.state import DecodeState

__all__ = [
    "DecodeResult", "DecodeState", "FixedBudget", "POLICIES", "Policy", "Rule", "SemiAR", "Selection", "Step",
    "TokenRule", "attach", "decode", "decode_steps", "needed_resources", "parse_policy", "policy_spec", "resource",
    "with_budget",
]


class _Loop(types.ModuleType):
    """This package's module type: ``unmask.decode(denoiser, tokens, policy, ...)`` runs :func:`decode`.

    The public name ``unmask.decode`` is this subpackage (Python binds a subpackage to its parent's
    attribute of the same name on import), so calling it is calling the loop.
    """

    def __call__(self, *args, **kwargs) -> DecodeResult:
        return decode(*args, **kwargs)

    def __reduce__(self):  # pickled (e.g. handed to a worker process) as the module it is, by name
        return importlib.import_module, (self.__name__,)


sys.modules[__name__].__class__ = _Loop
__signature__ = inspect.signature(decode)  # what help() and IDEs show for unmask.decode(...)
