"""Shared fixtures: a tiny random transformer and exact oracle denoisers."""

from __future__ import annotations

import pytest
import torch

from unmask.model import ModelConfig, TransformerDenoiser
from unmask.oracle import JointDenoiser

torch.set_num_threads(1)


def tiny_model(seq_len: int = 16, vocab: int = 4, seed: int = 0) -> TransformerDenoiser:
    """A randomly initialised 2-layer transformer with sharpened logits (varied confidences)."""
    torch.manual_seed(seed)
    cfg = ModelConfig(vocab_size=vocab, mask_id=vocab, seq_len=seq_len, d_model=32, n_layers=2, n_heads=2, d_ff=64)
    model = TransformerDenoiser(cfg).eval()
    with torch.no_grad():
        model.head.weight.mul_(200.0)  # random init gives near-uniform outputs; spread them out
    return model


def random_joint(seq_len: int = 4, vocab: int = 3, seed: int = 0, alpha: float = 0.3) -> JointDenoiser:
    """An oracle over a random peaked joint distribution (Dirichlet-like)."""
    g = torch.Generator().manual_seed(seed)
    p = torch.rand((vocab,) * seq_len, generator=g, dtype=torch.float64) ** (1 / alpha)
    return JointDenoiser(p / p.sum())


@pytest.fixture
def model() -> TransformerDenoiser:
    return tiny_model()


@pytest.fixture
def oracle() -> JointDenoiser:
    return random_joint()
