"""The one decode loop: every policy, every model, the same accounting.

Each step runs the denoiser once on the rows that still have masks (1 NFE for each of them), asks
the policy which masked positions to reveal, and fills them with the token rule. Revealed tokens
never change again. A finished row stops counting NFE while others go on.

What the loop is given and what the denoiser returns are checked (one :class:`UnmaskError` each, never
silent garbage): ids ``(B, L)`` in ``0..max(V - 1, mask id)``, one seed per sequence; logits
``(B, L, V)`` with ``V = denoiser.vocab_size``, no NaN or +inf, not all −inf at a masked position (a −inf
entry is a token the model rules out); hidden states ``(B, L, D)``. One reduction over the logits per
forward pass.

:func:`decode_steps` is the loop itself, a generator that yields every :class:`Step` (what the
policy saw, what it revealed, the values and the log-probability of a sampled reveal set) and
returns the :class:`DecodeResult`; it runs under whatever gradient mode the caller chose, which is
what a learned order policy trained by REINFORCE needs. :func:`decode` drives it without gradients.
Every tensor stays on the device of ``tokens``: put them where the model is.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Protocol

import torch

from unmask.decode.policy import Policy, as_selection
from unmask.decode.state import DecodeState
from unmask.denoiser import Denoiser, never_mask
from unmask.errors import UnmaskError

TOKEN_SALT = 0x70C  # salt of the uniforms used by the token rule (policies use other salts)


class Rule(Protocol):
    """How a revealed position gets its value."""

    def choose(self, state: DecodeState) -> torch.Tensor:
        """``(B, L)`` a value for every masked position (other positions keep their token)."""
        ...


@dataclass(frozen=True)
class TokenRule:
    """How a revealed position gets its value: argmax (temperature 0) or a tempered sample."""

    temperature: float = 0.0  # 0 = argmax; > 0 samples from softmax(logits / temperature)

    def __post_init__(self) -> None:
        if not self.temperature >= 0:  # also refuses NaN
            raise UnmaskError(f"temperature must be >= 0, got {self.temperature}")
        if math.isinf(self.temperature):  # logits / inf: -inf entries become NaN
            raise UnmaskError(f"temperature must be finite, got {self.temperature}")
        if 0 < self.temperature < torch.finfo(torch.float32).tiny:  # rounds to 0 or a subnormal in float32
            raise UnmaskError(f"temperature {self.temperature:g} is below float32's range; use 0 for argmax")

    def choose(self, state: DecodeState) -> torch.Tensor:
        """``(B, L)`` a value for every masked position (other positions keep their token)."""
        if self.temperature == 0:
            return state.logits.argmax(-1)
        # Inverse-CDF sampling with one batch-invariant uniform per position, over masked rows only:
        # memory stays O(masked · V) even for a 100k-token vocabulary.
        logits = state.logits[state.masked].float()  # (K, V)
        logits = logits - logits.amax(-1, keepdim=True)  # the best value is 0, so a tiny temperature gives -inf, never NaN
        probs = torch.softmax(logits / self.temperature, dim=-1)  # (K, V)
        cdf = probs.cumsum(-1)  # (K, V)
        u = state.uniform(TOKEN_SALT)[state.masked]  # (K,)
        picked = torch.searchsorted(cdf, (u * cdf[:, -1])[:, None], right=True).squeeze(1)  # first cdf > u
        values = state.tokens.clone()
        values[state.masked] = picked.clamp_max(probs.shape[-1] - 1)
        return values


@dataclass(frozen=True)
class DecodeResult:
    """Outcome of :func:`decode`."""

    tokens: torch.Tensor  # (B, L) final ids, nothing masked
    nfe: torch.Tensor  # (B,) forward passes of the denoiser spent on each row by the loop
    reveal_step: torch.Tensor  # (B, L) step (0-based pass) at which each position was revealed; -1 = given
    extra_passes: torch.Tensor  # (B,) forward passes a policy spent itself (exact-MI probes); reported apart from NFE


@dataclass(frozen=True)
class Step:
    """One step of :func:`decode_steps`, over the rows that were still running."""

    state: DecodeState  # what the policy saw (``state.rows``: the rows of the batch it covers)
    reveal: torch.Tensor  # (R, L) bool positions revealed at this step
    values: torch.Tensor  # (R, L) ids after this step (revealed positions filled, others unchanged)
    log_prob: torch.Tensor | None  # (R,) log-probability of ``reveal`` under a sampling policy, else None


def _is_ids(t: torch.Tensor) -> bool:
    return not (t.is_floating_point() or t.is_complex() or t.dtype == torch.bool)


def checked_inputs(denoiser: Denoiser, tokens: torch.Tensor, seeds: torch.Tensor | None) -> torch.Tensor:
    """Refuse ids or seeds the loop cannot decode (one line); the ``(B,)`` int64 seeds on the tokens' device."""
    if not isinstance(tokens, torch.Tensor) or tokens.dim() != 2 or not _is_ids(tokens):
        what = f"{tokens.dtype} of shape {tuple(tokens.shape)}" if isinstance(tokens, torch.Tensor) else type(tokens).__name__
        raise UnmaskError(f"tokens must be integer ids of shape (B, L), got {what}")
    v, m = denoiser.vocab_size, denoiser.mask_id
    if v < 1:
        raise UnmaskError(f"{type(denoiser).__name__}: vocab_size must be >= 1, got {v}")
    # A model reads ids 0..max(V - 1, mask id): the V it predicts, then input-only ids up to the mask (e.g. the
    # protein task's end marker V, before its mask V + 1), as unmask.model.TransformerDenoiser embeds them.
    top = max(v - 1, m)
    ok = (tokens >= 0) & (tokens <= top)  # (B, L)
    if not ok.all():
        b, pos = (~ok).nonzero()[0].tolist()
        raise UnmaskError(f"token id {int(tokens[b, pos])} (sequence {b}, position {pos}) is outside the model's inputs "
                          f"0..{top} ({v} predicted ids, mask id {m})")
    b = tokens.shape[0]
    if seeds is None:
        return torch.arange(b, device=tokens.device)
    if not isinstance(seeds, torch.Tensor) or seeds.shape != (b,) or not _is_ids(seeds):
        what = f"{seeds.dtype} of shape {tuple(seeds.shape)}" if isinstance(seeds, torch.Tensor) else type(seeds).__name__
        raise UnmaskError(f"seeds must be integers of shape (B,) = ({b},), one per sequence; got {what}")
    return seeds.to(device=tokens.device, dtype=torch.int64)


def checked_output(denoiser: Denoiser, out, masked: torch.Tensor, rows: torch.Tensor,
                   device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """``(logits, hidden)`` of one forward pass on ``device``, the mask id at −∞ (:func:`never_mask`),
    after refusing a malformed output in one line. ``masked`` ``(R, L)``: the inputs' masked positions;
    ``rows`` ``(R,)``: their sequences in the batch (named in the message)."""
    name = type(denoiser).__name__
    if not (isinstance(out, (tuple, list)) and len(out) == 2 and all(isinstance(t, torch.Tensor) for t in out)):
        raise UnmaskError(f"{name} returned {type(out).__name__}, not a pair of tensors (logits, hidden)")
    logits, hidden = out[0].to(device), out[1].to(device)  # no-ops for a model on the tokens' device
    r, n = masked.shape
    v = denoiser.vocab_size
    if logits.shape != (r, n, v) or not logits.is_floating_point():
        raise UnmaskError(f"{name} returned logits {logits.dtype} of shape {tuple(logits.shape)} for ids of shape ({r}, {n}); "
                          f"expected floats (B, L, V) = ({r}, {n}, {v}), V its vocab_size")
    if hidden.dim() != 3 or hidden.shape[:2] != (r, n):
        raise UnmaskError(f"{name} returned hidden states of shape {tuple(hidden.shape)} for ids of shape ({r}, {n}); "
                          f"expected (B, L, D) = ({r}, {n}, D)")
    logits = never_mask(logits, denoiser.mask_id)
    top = logits.amax(-1)  # (R, L) NaN if any entry is NaN, +inf if one is +inf, -inf if all are
    bad = top.isnan() | (top == float("inf")) | ((top == float("-inf")) & masked)  # (R, L)
    if bad.any():
        k, pos = bad.nonzero()[0].tolist()
        what = "NaN" if top[k, pos].isnan() else "+inf" if top[k, pos] > 0 else "only -inf (no token possible)"
        raise UnmaskError(f"{name} returned logits with {what} at sequence {int(rows[k])}, position {pos} "
                          f"({int(bad.sum())} such positions in this pass)")
    return logits, hidden


def decode_steps(
    denoiser: Denoiser,
    tokens: torch.Tensor,
    policy: Policy,
    rule: Rule = TokenRule(),
    seeds: torch.Tensor | None = None,
) -> Generator[Step, None, DecodeResult]:
    """The decode loop as a generator: yields each :class:`Step`, returns the :class:`DecodeResult`.

    Arguments as :func:`decode`. Use ``result = yield from decode_steps(...)`` in a generator, or
    iterate and read ``StopIteration.value``; gradients flow if the caller has them enabled.
    """
    seeds = checked_inputs(denoiser, tokens, seeds)  # (B,)
    b, n = tokens.shape
    device = tokens.device
    tokens = tokens.clone()
    masked = tokens == denoiser.mask_id  # (B, L)
    nfe = torch.zeros(b, dtype=torch.long, device=device)
    extra = torch.zeros(b, dtype=torch.long, device=device)
    reveal_step = torch.full((b, n), -1, dtype=torch.long, device=device)
    step = 0
    while True:
        rows = masked.any(1).nonzero().squeeze(1)  # (R,) rows still running
        if rows.numel() == 0:
            break
        running = masked[rows]  # (R, L)
        logits, hidden = checked_output(denoiser, denoiser(tokens[rows]), running, rows, device)  # (R, L, V), (R, L, D)
        state = DecodeState(tokens[rows], running, logits, hidden, step, seeds[rows], rows)
        sel = as_selection(policy.select(state))
        reveal = sel.reveal & state.masked  # (R, L)
        if not reveal.any(1).all():
            raise RuntimeError(f"{policy!r} revealed nothing in some row at step {step}")
        values = torch.where(reveal, rule.choose(state), state.tokens)
        tokens[rows] = values
        masked[rows] = state.masked & ~reveal
        reveal_step[rows] = torch.where(reveal, step, reveal_step[rows])
        nfe[rows] += 1
        if sel.extra_passes is not None:
            extra[rows] += sel.extra_passes.to(device)
        yield Step(state, reveal, values, sel.log_prob)
        step += 1
    return DecodeResult(tokens, nfe, reveal_step, extra)


@torch.no_grad()
def decode(
    denoiser: Denoiser,
    tokens: torch.Tensor,
    policy: Policy,
    rule: Rule = TokenRule(),
    seeds: torch.Tensor | None = None,
) -> DecodeResult:
    """Fill every masked position of ``tokens`` ``(B, L)``.

    Args:
        denoiser: any :class:`~unmask.denoiser.Denoiser`.
        tokens: ids with ``denoiser.mask_id`` where a value is to be generated, on the device the
            loop should run on (the model's: ``tokens.to(denoiser.device)``).
        policy: which masked positions to reveal at each step (see :mod:`unmask.policies`).
        rule: the value of a revealed position.
        seeds: ``(B,)`` per-row seeds for random policies and sampling; default ``arange(B)``.
            Give each sequence its own fixed seed (e.g. its index in the dataset) and results do
            not depend on how sequences are batched.
    """
    return run_steps(decode_steps(denoiser, tokens, policy, rule, seeds))


def run_steps(steps: Generator[Step, None, DecodeResult], each: Callable[[Step], None] | None = None) -> DecodeResult:
    """Drive the loop ``steps`` (from :func:`decode_steps`) to its end, calling ``each`` on every
    :class:`Step` (a trainer's bookkeeping); return the :class:`DecodeResult`."""
    while True:
        try:
            step = next(steps)
        except StopIteration as done:
            return done.value
        if each is not None:
            each(step)
