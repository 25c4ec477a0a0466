"""The order networks of learned generation orders (Fox et al. 2026, arXiv 2602.23968: variational
inference over reveal sets).

A light network scores every masked position from the frozen denoiser's hidden state and its
confidence features; the scores become *max-normalised* reveal probabilities

    p_n = exp((s_n − max_m s_m) / τ)        over the masked positions m of a sequence,

so the best position is revealed with probability 1 (every step reveals ≥ 1 token) and positions
scoring close to the best go with it. At the last step of the budget every masked position has
p = 1. The order policy P_ψ(r_t | x_t) sees only x_t; the posterior Q_φ(r_t | x_t, x_0) also sees
the clean sequence (log p_θ(x_0^n | x_t) and whether the denoiser's argmax is right).

The score starts as −entropy (a linear term initialised to it, the network's output layer at 0), so
an untrained policy is the entropy-ordered heuristic and training can only move away from it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn as nn

from unmask import artifacts
from unmask.decode.scores import entropy, margin, top_prob
from unmask.decode.state import DecodeState
from unmask.errors import UnmaskError

CONFIDENCE_FEATURES = ("entropy", "top_prob", "margin", "progress", "masked_share")  # what P_ψ sees besides hidden states
CLEAN_FEATURES = ("log_p_true", "argmax_right")  # what Q_φ sees besides (it knows x_0)


@dataclass
class OrderConfig:
    """Shape and settings of an :class:`OrderNet`."""

    d_in: int  # D: width of the denoiser's hidden states
    d_hidden: int = 64  # hidden width of the per-position scorer
    tau: float = 1.0  # τ: temperature of the max-normalisation (small: one token per step; large: many)
    budget: int = 4  # T: steps the policy was trained for (everything left is revealed at step T)
    posterior: bool = False  # Q_φ (sees x_0) rather than P_ψ


def confidence_features(state: DecodeState, budget: int) -> torch.Tensor:
    """``(B, L, 5)`` entropy, top-prob, margin, t/T and the masked share — the heuristics' inputs."""
    p = state.probs  # (B, L, V)
    b, n = state.masked.shape
    progress = torch.full((b, n), state.step / max(budget, 1), device=p.device)
    share = state.masked.float().mean(1, keepdim=True).expand(b, n)
    return torch.stack([entropy(p), top_prob(p), margin(p), progress, share], -1)  # (B, L, 5)


def log_p_clean(state: DecodeState, clean: torch.Tensor) -> torch.Tensor:
    """``(B, L)`` log p_θ(x_0^n | x_t) at the masked positions, 0 at the given ones (which may hold a token
    the model never predicts, e.g. the protein task's end marker)."""
    index = torch.where(state.masked, clean, 0)  # (B, L) a predictable id wherever it is read
    return state.log_probs.gather(-1, index[..., None]).squeeze(-1).masked_fill(~state.masked, 0.0)


def clean_features(state: DecodeState, clean: torch.Tensor) -> torch.Tensor:
    """``(B, L, 2)`` log p_θ(x_0^n | x_t) and whether the argmax is x_0^n (``clean`` (B, L) ids)."""
    lp = log_p_clean(state, clean).clamp_min(-30.0)  # (B, L)
    right = (state.logits.argmax(-1) == clean).float()
    return torch.stack([lp, right], -1)


class OrderNet(nn.Module):
    """Per-position reveal scores ``(B, L)`` from a decoding state (and x_0 for the posterior)."""

    def __init__(self, cfg: OrderConfig) -> None:
        super().__init__()
        self.cfg = cfg
        n_feat = len(CONFIDENCE_FEATURES) + (len(CLEAN_FEATURES) if cfg.posterior else 0)
        self.norm = nn.LayerNorm(cfg.d_in)
        self.hidden_in = nn.Linear(cfg.d_in, cfg.d_hidden)
        self.feat_in = nn.Linear(n_feat, cfg.d_hidden)
        self.out = nn.Linear(cfg.d_hidden, 1)
        self.direct = nn.Linear(n_feat, 1)  # the heuristics' linear part, initialised to −entropy
        nn.init.zeros_(self.out.weight)
        nn.init.zeros_(self.out.bias)
        with torch.no_grad():
            self.direct.weight.zero_()
            self.direct.weight[0, 0] = -1.0
            self.direct.bias.zero_()

    def features(self, state: DecodeState, clean: torch.Tensor | None = None) -> torch.Tensor:
        feats = confidence_features(state, self.cfg.budget)
        if self.cfg.posterior:
            feats = torch.cat([feats, clean_features(state, clean)], -1)
        return feats  # (B, L, F)

    def forward(self, state: DecodeState, clean: torch.Tensor | None = None) -> torch.Tensor:
        """``(B, L)`` scores s_n (higher goes first); ``clean`` (B, L) is needed by the posterior."""
        if state.hidden.shape[-1] != self.cfg.d_in:
            raise UnmaskError(f"this order policy reads hidden states of width {self.cfg.d_in}, the model gives "
                              f"{state.hidden.shape[-1]}: it was trained for another model")
        feats = self.features(state, clean)
        h = torch.nn.functional.gelu(self.hidden_in(self.norm(state.hidden.float())) + self.feat_in(feats))  # (B, L, H)
        return (self.out(h) + self.direct(feats)).squeeze(-1)

    def probs(self, state: DecodeState, budget: int, clean: torch.Tensor | None = None) -> torch.Tensor:
        """``(B, L)`` reveal probabilities at this step under a budget of ``budget`` steps."""
        return reveal_probs(self(state, clean), state.masked, self.cfg.tau, last=state.step >= budget - 1)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())


def reveal_probs(scores: torch.Tensor, masked: torch.Tensor, tau: float, last: bool = False) -> torch.Tensor:
    """Max-normalised probabilities ``(B, L)``: exp((s − max s)/τ) on masked positions, 0 elsewhere;
    every masked position gets 1 at the ``last`` step of the budget."""
    if last:
        return masked.float()
    s = scores.masked_fill(~masked, float("-inf"))
    best = s.max(1, keepdim=True).values  # (B, 1)
    return torch.exp((s - best) / tau).masked_fill(~masked, 0.0)


def save_order_net(net: OrderNet, directory: str | os.PathLike, extra: dict | None = None) -> None:
    """Write ``order_policy.safetensors`` + ``order_policy.json`` beside a base model, atomically."""
    artifacts.save(directory, artifacts.ORDER_POLICY, net.state_dict(), net.cfg, extra)


def load_order_net(directory: str | os.PathLike, base: str | os.PathLike | None = None, named: bool = False) -> OrderNet:
    """The order policy P_ψ saved in ``directory`` (UnmaskError, one line, if absent or bad).

    ``base``: the weights of the model it will read (a model folder or file); a policy trained for
    another model is refused (:func:`unmask.artifacts.check_base`); ``named`` (a folder given on its own,
    away from its model): so is one that records no base model.
    """
    meta = artifacts.read_meta(directory, artifacts.ORDER_POLICY)
    artifacts.check_base(meta, directory, artifacts.ORDER_POLICY, base, required=named)
    net = OrderNet(artifacts.build_config(OrderConfig, meta["config"], Path(directory) / artifacts.ORDER_POLICY.meta))
    artifacts.load_state(net, artifacts.load_tensors(directory, artifacts.ORDER_POLICY),
                         Path(directory) / artifacts.ORDER_POLICY.weights)
    return net.eval()
