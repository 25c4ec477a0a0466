"""Decoding: one loop (:func:`decode`) and one small frozen dataclass per policy."""

from unmask.decode import adaptive, budget, mi_guided, sequential  # noqa: F401  (registers the policies)
from unmask.decode.loop import DecodeResult, Policy, TokenRule, decode
from unmask.decode.registry import POLICIES, attach, parse_policy, policy_spec
from unmask.decode.state import DecodeState

__all__ = ["DecodeResult", "DecodeState", "POLICIES", "Policy", "attach", "TokenRule", "decode", "parse_policy", "policy_spec"]
