"""The Sudoku task: default model shape, training batches, evaluation."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from tqdm import tqdm

from unmask.decode import Policy, TokenRule, parse_policy, policy_spec
from unmask.decode.sequential import Sequential
from unmask.denoiser import Denoiser
from unmask.eval import decode_all
from unmask.model import ModelConfig, TransformerDenoiser
from unmask.tasks.sudoku.data import MASK_ID, POSITION_FEATURES, VOCAB_SIZE, SudokuSet, augment, from_tokens, score, to_tokens

NAME = "sudoku"


def default_model_config() -> ModelConfig:
    """The shape of the shipped Sudoku model (~1.2M parameters)."""
    return ModelConfig(
        vocab_size=VOCAB_SIZE, mask_id=MASK_ID, seq_len=81, d_model=128, n_layers=6, n_heads=4, d_ff=512,
        position_features=[9, 9, 9], task=NAME,
    )


def evaluate(
    denoiser: Denoiser,
    data: SudokuSet,
    policy: Policy,
    rule: TokenRule = TokenRule(),
    batch_size: int = 250,
    seed: int = 0,
    progress: bool = False,
) -> dict:
    """Decode every puzzle; exact-match accuracy (validity if no solutions), NFE and speed."""
    run = decode_all(denoiser, to_tokens(data.quizzes), policy, rule, batch_size, seed, progress)
    correct = score(from_tokens(run.result.tokens), data)
    nfe = run.result.nfe.double()
    return {
        "n": len(data),
        "accuracy": float(correct.mean()),
        "mean_nfe": float(nfe.mean()),
        "max_nfe": int(nfe.max()),
        "seconds": round(run.seconds, 3),
        "puzzles_per_s": round(len(data) / max(run.seconds, 1e-9), 2),
    }


# The demo's and the benchmark's policies: the baselines under one accounting.
DEMO_POLICIES = [
    "sequential", "topk:k=7", "random:steps=10", "top_prob:steps=10", "margin:steps=10", "eb:gamma=0.1",
    "threshold:tau=0.9", "mi", "mi:gamma=0.1,lam=2",
]


def compare(
    denoiser: Denoiser, sets: dict[str, SudokuSet], policies: list, batch_size: int = 250, progress: bool = True
) -> list[dict]:
    """Evaluate every policy (object or spec string) on every puzzle set; one row per (set, policy).

    Probe passes of an exact-MI policy are reported apart from NFE (``probe_passes``)."""
    rows = []
    for set_name, data in sets.items():
        for policy in tqdm(policies, desc=set_name, disable=not progress, unit="policy"):
            policy = parse_policy(policy) if isinstance(policy, str) else policy
            counter = getattr(policy, "counter", None)
            before = counter.passes if counter is not None else 0
            row = {"set": set_name, "policy": policy_spec(policy), **evaluate(denoiser, data, policy, batch_size=batch_size)}
            if counter is not None:
                row["probe_passes"] = (counter.passes - before) / len(data)
            rows.append(row)
    return rows


@dataclass
class SudokuTask:
    """Training: augmented solution grids under random masks; validation: sequential decoding."""

    solutions: np.ndarray  # (N, 81) training solution grids, digits 1..9
    val_sets: dict[str, SudokuSet] = field(default_factory=dict)  # name → puzzles scored at each validation
    name: str = NAME

    def __post_init__(self) -> None:
        self._tokens = to_tokens(self.solutions)  # (N, 81)

    def model(self, cfg: ModelConfig | None) -> TransformerDenoiser:
        return TransformerDenoiser(cfg or default_model_config(), POSITION_FEATURES)

    def sample(self, gen: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        idx = torch.randint(len(self._tokens), (n,), generator=gen)
        return augment(self._tokens[idx], gen), torch.ones(n, 81, dtype=torch.bool)

    def validate(self, model: TransformerDenoiser) -> dict[str, float]:
        out = {}
        for name, data in self.val_sets.items():
            m = evaluate(model, data, Sequential())
            out[f"{name}_acc"] = round(m["accuracy"], 4)
        return out
