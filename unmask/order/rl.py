"""Outcome reinforcement learning of the order network: the field's alternative to the ELBO.

UPO (arXiv 2510.05725), Apple's unmasking policies (arXiv 2512.09106) and DCoLT/LLaDOU (arXiv
2505.10446) learn where to unmask from the task's outcome alone. Here the same order network P_ψ that
:mod:`unmask.order.elbo` trains by variational inference (Fox et al. 2026, arXiv 2602.23968) is trained
that way, so the two objectives can be compared on one network, model, budget and compute:

- roll P_ψ out K times per example through the one decode loop, the model choosing the tokens as it
  does at evaluation (greedy unless a temperature is given): no teacher forcing, no posterior;
- reward each rollout R = success − c·NFE (success: the task's own check, e.g. the exact answer or a
  valid grid; c in reward units per forward pass);
- advantage A_k = R_k − mean_{j≠k} R_j over the K rollouts of the same example (group-relative, as
  GRPO; leave-one-out, as RLOO (Kool et al. 2019), so the estimate stays unbiased at any K ≥ 2);
- loss −A_k · Σ_t log P_ψ(r_t | x_t), plus β · Σ_t KL(P_ψ,t ‖ P_start,t), an optional pull towards the
  untrained network (the entropy-ordered heuristic it starts as), evaluated on the rollout's own states.

The gradient of the first term is ∇E[R] in expectation (the score-function identity). The second is a
per-state penalty, as in GRPO: its gradient is taken through P_ψ at the states the rollouts visited, not
through which states they visit, so it is not ∇E[KL]; it is a sum over positions and steps, so the same
β pulls harder on longer sequences.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from unmask.decode import TokenRule, decode_steps
from unmask.decode.loop import run_steps
from unmask.errors import UnmaskError
from unmask.order.elbo import bernoulli_kl, check_seeds
from unmask.order.net import OrderNet
from unmask.order.policy import Learned

# (tokens (N, L) on the model's device, example numbers (N,) on the CPU) → (N,) success in [0, 1]
Reward = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class OutcomeRollout:
    """K rollouts of P_ψ for each example, rows ordered (example, sample)."""

    log_p: torch.Tensor  # (N,) Σ_t log P_ψ(r_t | x_t) of the sampled reveal sets (differentiable in ψ)
    kl_start: torch.Tensor  # (N,) Σ_t KL(P_ψ,t ‖ P_start,t) on the rollout's states (0 without a start network)
    success: torch.Tensor  # (N,) the task's check of the decoded sequence (1 = right)
    nfe: torch.Tensor  # (N,) forward passes each rollout spent

    def reward(self, step_cost: float = 0.0) -> torch.Tensor:
        """``(N,)`` R = success − c·NFE."""
        return self.success - step_cost * self.nfe.to(self.success.dtype)


def outcome_rollout(denoiser, start: torch.Tensor, index: torch.Tensor, prior: OrderNet, budget: int, samples: int,
                    seeds: torch.Tensor, success: Reward, reference: OrderNet | None = None,
                    rule: TokenRule = TokenRule()) -> OutcomeRollout:
    """K = ``samples`` rollouts of P_ψ (``prior``) from each start ``(B, L)``, the model's own tokens
    chosen by ``rule``; ``index`` ``(B,)``: the examples' numbers, passed on to ``success``;
    ``seeds`` ``(B·K,)``: one per rollout, sequence-major; ``reference``: P_start for the KL term."""
    check_seeds(seeds, len(start), samples)
    tokens = start.repeat_interleave(samples, 0)  # (N, L), N = B·K
    n = len(tokens)
    policy = Learned(steps=budget, net=prior)
    log_p = torch.zeros(n, device=tokens.device)
    kl = torch.zeros(n, device=tokens.device)

    def record(step) -> None:
        nonlocal log_p, kl
        st, rows = step.state, step.state.rows
        log_p = log_p.index_add(0, rows, step.log_prob)
        if reference is not None:
            with torch.no_grad():
                p_start = reference.probs(st, budget)  # (R, L)
            kl = kl.index_add(0, rows, bernoulli_kl(prior.probs(st, budget), p_start, st.masked))

    result = run_steps(decode_steps(denoiser, tokens, policy, rule, seeds), record)
    done_ok = torch.as_tensor(success(result.tokens.detach(), index.cpu().repeat_interleave(samples)))
    if done_ok.shape != (n,):
        raise UnmaskError(f"the task's check gave shape {tuple(done_ok.shape)} for {n} rollouts; it must give one value each")
    return OutcomeRollout(log_p, kl, done_ok.to(log_p.dtype).to(log_p.device), result.nfe)


def leave_one_out(reward: torch.Tensor, samples: int) -> torch.Tensor:
    """``(N,)`` A_k = R_k − mean of the other K − 1 rewards of the same example (rows sequence-major)."""
    r = reward.view(-1, samples)  # (B, K)
    return (r - (r.sum(1, keepdim=True) - r) / (samples - 1)).reshape(-1)


def outcome_loss(roll: OutcomeRollout, samples: int, step_cost: float = 0.0, kl_start: float = 0.0) -> torch.Tensor:
    """The surrogate whose gradient is −∇E[success − c·NFE] in expectation, plus β × the gradient of the KL to the
    start at the visited states (a per-state penalty, see the module docstring); mean over rows."""
    if samples < 2:
        raise ValueError("leave-one-out advantages need at least 2 rollouts per example")
    adv = leave_one_out(roll.reward(step_cost).detach(), samples)
    return (-(adv * roll.log_p) + kl_start * roll.kl_start).mean()
