"""The ELBO of learned orders and its gradient estimators (Fox et al. 2026, arXiv 2602.23968).

For a generation of at most T steps with reveal sets r_t, order policy P_ψ and posterior Q_φ:

    log p(x_0) ≥ E_Q [ Σ_t ( Σ_{n∈r_t} log p_θ(x_0^n | x_t) + log P_ψ(r_t | x_t) − log Q_φ(r_t | x_t, x_0) ) ]

Rao-Blackwellised: the per-step log P − log Q is replaced by its expectation under Q given x_t,
−KL(Q_t ‖ P_t), in closed form for factorised Bernoulli reveal distributions. ψ gets the pathwise
gradient of the KL terms; φ gets that plus REINFORCE on the reward-to-go with a leave-one-out
baseline over K rollouts of each sequence (RLOO; Kool et al. 2019), which is unbiased only if each
rollout's own reward stays out of its baseline and the K rollouts draw independent reveal sets
(distinct seeds, checked by :func:`rollout`). θ (``finetune``) gets every term that depends on it:
the likelihood terms, and, since P_ψ and Q_φ read the denoiser's hidden states and confidences,
the KL terms (pathwise) and the score-function term through log Q_φ. Rollouts reveal the true
tokens (teacher forcing).

A step cost c (nats per forward pass) turns the bound into the objective ELBO − c·NFE: without it
nothing in the ELBO pays for a pass, so a policy spends its whole budget T; with it, Q_φ learns
when revealing more at once costs less likelihood than a pass is worth, and P_ψ, which matches Q_φ
through the KL, follows. c enters only φ's reward-to-go (the number of steps after t is what r_t
decides).

P's certain positions (p = 1: its best one) would make KL(Q‖P) infinite whenever Q may skip them,
so the KL and the bound use P̃ with p̃ = ε + (1 − 2ε)·p, a smooth floor that keeps p̃ in [ε, 1 − ε]
and dp̃/dp = 1 − 2ε everywhere. (A hard clamp of p to [ε, 1 − ε] gives P_ψ no gradient at all at a
position scoring more than τ·ln(1/ε) below the best, 0.46 at τ = 0.05: exactly where it must learn
to reveal what Q_φ reveals.) Where P and Q are both certain of the same outcome (both 1: the last
step, a shared best position; both 0) p̃ = p and the term is exactly 0. Sampling at inference uses
P itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from unmask.decode import decode_steps
from unmask.decode.loop import run_steps
from unmask.errors import UnmaskError
from unmask.order.net import log_p_clean
from unmask.order.policy import PosteriorOrder, TrueTokens

EPS = 1e-4  # ε: how far P̃ keeps its probabilities from 0 and 1


def smoothed(p: torch.Tensor, q: torch.Tensor, eps: float = EPS) -> torch.Tensor:
    """P̃ ``(B, L)``: ε + (1 − 2ε)·p, except where p and q are both certain of the same thing (both 1:
    the last step, a shared best position; both 0), where it is p itself.

    A smooth floor, not a clamp: dKL/dp stays finite and non-zero however small p is (a clamp gave 0
    below ε). Symmetric: ``smoothed(1 − p, 1 − q) = 1 − smoothed(p, q)``, which :func:`bernoulli_kl`
    uses for 1 − p̃ near p = 1."""
    agree = ((p >= 1) & (q >= 1)) | ((p <= 0) & (q <= 0))
    return torch.where(agree, p, eps + (1 - 2 * eps) * p)


def bernoulli_kl(q: torch.Tensor, p: torch.Tensor, masked: torch.Tensor, eps: float = EPS) -> torch.Tensor:
    """``(B,)`` KL(Q ‖ P̃) = Σ_n q log(q/p̃) + (1−q) log((1−q)/(1−p̃)) over masked positions."""
    pt, not_pt = smoothed(p, q, eps), smoothed(1 - p, 1 - q, eps)  # p̃ and 1 − p̃
    log = lambda x: x.clamp_min(1e-12).log()  # noqa: E731  finite gradients where q is 0 or 1 (their terms vanish)
    kl = q * (log(q) - log(pt)) + (1 - q) * (log(1 - q) - log(not_pt))
    return torch.where(masked, kl, 0.0).sum(1)


@dataclass(frozen=True)
class Rollout:
    """Per-step terms of K rollouts of each sequence, rows ordered (sequence, sample)."""

    loglik: torch.Tensor  # (N, T) Σ_{n∈r_t} log p_θ(x_0^n | x_t) (0 after a row finished)
    kl: torch.Tensor  # (N, T) KL(Q_t ‖ P̃_t) (0 after a row finished)
    log_q: torch.Tensor  # (N, T) log Q_φ(r_t | x_t, x_0) of the sampled set
    nfe: torch.Tensor  # (N,) steps each rollout used
    masked: torch.Tensor  # (N,) positions to generate in each row

    @property
    def elbo(self) -> torch.Tensor:
        """``(N,)`` the Rao-Blackwellised ELBO of each rollout."""
        return (self.loglik - self.kl).sum(1)

    def objective(self, step_cost: float = 0.0) -> torch.Tensor:
        """``(N,)`` ELBO − c·NFE: what training maximises under a step cost of c nats per pass."""
        return self.elbo - step_cost * self.nfe.to(self.elbo.dtype)

    def steps_after(self) -> torch.Tensor:
        """``(N, T)`` how many steps each rollout took after step t (0 from its last step on)."""
        t = torch.arange(self.loglik.shape[1], device=self.nfe.device)
        return (self.nfe[:, None] - t - 1).clamp_min(0).to(self.loglik.dtype)


def check_seeds(seeds: torch.Tensor, batch: int, samples: int) -> None:
    """Refuse rollout seeds ``(B·K,)`` unless there is one per rollout and the K of each sequence differ.

    Rollouts of one sequence that share a seed draw the same reveal sets, so every RLOO advantage is
    exactly 0 and Q_φ gets no REINFORCE signal, silently (the KL terms still train)."""
    if seeds.shape != (batch * samples,):
        raise UnmaskError(f"rollout needs one seed per rollout ({batch} sequences × {samples}), got shape {tuple(seeds.shape)}")
    s = seeds.reshape(batch, samples).sort(1).values  # (B, K)
    if bool((s[:, 1:] == s[:, :-1]).any()):
        raise UnmaskError("the K rollouts of a sequence share a seed: they would draw the same reveal sets and "
                          "leave Q_φ no gradient (give each rollout its own seed)")


def rollout(denoiser, start: torch.Tensor, clean: torch.Tensor, prior, posterior, budget: int, samples: int,
            seeds: torch.Tensor) -> Rollout:
    """K = ``samples`` rollouts of Q_φ from each start ``(B, L)`` (true tokens revealed), through the
    one decode loop; gradients flow into ``prior`` (P_ψ), ``posterior`` (Q_φ) and any trainable denoiser.

    ``seeds`` ``(B·K,)``: one per rollout (rows ordered sequence-major), the K of a sequence distinct
    (:func:`check_seeds`)."""
    check_seeds(seeds, len(start), samples)
    tokens = start.repeat_interleave(samples, 0)  # (N, L), N = B·K
    x0 = clean.repeat_interleave(samples, 0)
    q_policy = PosteriorOrder(posterior, x0, budget)
    n = len(tokens)
    loglik, kl, log_q = [], [], []

    def record(step) -> None:
        st, rows = step.state, step.state.rows
        true_lp = log_p_clean(st, x0[rows])  # (R, L) log p_θ(x_0^n | x_t)
        q = q_policy.probs(st)
        p = prior.probs(st, budget)
        zeros = torch.zeros(n, device=tokens.device)
        loglik.append(zeros.index_put((rows,), (true_lp * step.reveal).sum(1)))
        kl.append(zeros.index_put((rows,), bernoulli_kl(q, p, st.masked)))
        log_q.append(zeros.index_put((rows,), step.log_prob))

    result = run_steps(decode_steps(denoiser, tokens, q_policy, TrueTokens(x0), seeds), record)
    pad = budget - len(loglik)  # rows that all finished early leave no later steps
    stack = lambda xs: torch.nn.functional.pad(torch.stack(xs, 1), (0, pad))  # noqa: E731  (N, T)
    return Rollout(stack(loglik), stack(kl), stack(log_q), result.nfe, (tokens == denoiser.mask_id).sum(1))


def order_loss(roll: Rollout, samples: int, finetune: bool = False, step_cost: float = 0.0) -> torch.Tensor:
    """The surrogate whose gradient is −∇(ELBO − c·NFE) in expectation (per generated position, mean
    over rows; c = ``step_cost`` nats per pass).

    ψ: ∇ Σ_t KL_t. φ: ∇ Σ_t KL_t − Σ_t ∇log Q(r_t) · (G_t − b_t), with G_t the reward-to-go
    Σ_{t'≥t} loglik_{t'} − Σ_{t'>t} KL_{t'} − c·(steps after t) and b_t its mean over the other K − 1
    rollouts of the same sequence (RLOO; never its own reward, which would shrink the REINFORCE term
    by 1/K). θ (``finetune``): all three, −∇ Σ_t loglik_t plus the KL and score-function terms, which
    reach θ through the hidden states and confidences P_ψ and Q_φ read.
    """
    if samples < 2:
        raise ValueError("RLOO needs at least 2 rollouts per sequence")
    ll, kl = roll.loglik.detach(), roll.kl.detach()
    to_go = ll.flip(1).cumsum(1).flip(1) - (kl.flip(1).cumsum(1).flip(1) - kl)  # (N, T) G_t
    to_go = to_go - step_cost * roll.steps_after()
    g = to_go.view(-1, samples, to_go.shape[1])  # (B, K, T)
    baseline = (g.sum(1, keepdim=True) - g) / (samples - 1)
    adv = (g - baseline).reshape_as(to_go)
    per_row = roll.kl.sum(1) - (roll.log_q * adv).sum(1)
    if finetune:
        per_row = per_row - roll.loglik.sum(1)
    return (per_row / roll.masked.clamp_min(1)).mean()
