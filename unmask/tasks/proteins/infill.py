"""Sampled CDR infills, judged by recovery, diversity and a model that did not write them.

Argmax recovery barely separates decoding policies on antibodies (all CDR-H3 positions in one pass
≈ sequential), so the infills are *sampled* (temperature 1, several per antibody) and judged by:

- **recovery**: share of the infilled residues equal to the real antibody's;
- **diversity**: mean Hamming distance between two samples of the same antibody, per infilled residue;
- **pseudo-log-likelihood** under each judge (Salazar et al., 2020): mean log p(x_i | x_{−i}) over the
  infilled residues, each masked alone (with its standard error over the antibodies, and per antibody
  so that two policies can be compared on the same antibodies). A judge that did not write the infill (Sapiens for AntiBERTy's,
  and vice versa) rewards what is plausible antibody sequence, not what the writer itself prefers;
- **NFE**: the writer's forward passes per infill.
"""

from __future__ import annotations

import torch

from unmask.decode import Policy, TokenRule
from unmask.denoiser import Denoiser
from unmask.eval import decode_all
from unmask.tasks.proteins.antibody import Antibody, AntibodyTask, pseudo_log_likelihood


def diversity(tokens: torch.Tensor, masked: torch.Tensor, samples: int) -> float:
    """Mean pairwise Hamming distance per masked residue among the ``samples`` consecutive rows of each antibody."""
    if samples < 2:
        return float("nan")
    N, L = tokens.shape
    t = tokens.view(N // samples, samples, L)  # (A, K, L)
    m = masked.view(N // samples, samples, L)[:, 0]  # (A, L)
    differ = (t[:, :, None, :] != t[:, None, :, :]) & m[:, None, None, :]  # (A, K, K, L)
    pairs = samples * (samples - 1)  # ordered pairs, the diagonal is 0
    per = differ.sum(-1).float().sum((1, 2)) / pairs / m.sum(-1).clamp(min=1)  # (A,)
    return float(per.mean())


def infill(
    task: AntibodyTask,
    writer: Denoiser,
    antibodies: list[Antibody],
    policy: Policy,
    rule: TokenRule = TokenRule(1.0),
    samples: int = 4,
    seed: int = 0,
    batch_size: int = 64,
    judges: dict[str, Denoiser] | None = None,
    progress: bool = False,
) -> tuple[dict, torch.Tensor]:
    """Infill ``task.cdrs`` of every antibody ``samples`` times (sample j of antibody a gets seed
    ``seed + a·samples + j``) and score the infills; ``judges``: name → model for the PLL.

    Returns the figures and the infilled sequences ``(N·K, L)`` (antibody-major)."""
    repeated = [a for a in antibodies for _ in range(samples)]
    prompts = task.encode(repeated)  # (N·K, L)
    masked = prompts == writer.mask_id  # (N·K, L)
    truth = task.targets(repeated)
    run = decode_all(writer, prompts, policy, rule, batch_size, seed, progress, task.unit)
    tokens = run.result.tokens  # (N·K, L)
    hits = ((tokens == truth) & masked).sum(1).float() / masked.sum(1).clamp(min=1)  # (N·K,)
    out = {"antibodies": len(antibodies), "samples": samples, "cdrs": list(task.cdrs),
           "residues": float(masked.sum(1).float().mean()), "recovery": float(hits.mean()),
           "exact": float(task.score(tokens, repeated).float().mean()), "diversity": diversity(tokens, masked, samples),
           "mean_nfe": float(run.result.nfe.float().mean()), "seconds": round(run.seconds, 2)}
    for name, judge in (judges or {}).items():
        pll = pseudo_log_likelihood(judge, tokens, masked, batch_size)  # (N·K,)
        per = pll.view(len(antibodies), samples).mean(1)  # (N,) the samples of one antibody are not independent
        out[f"pll_{name}"] = float(pll.mean())
        out[f"pll_{name}_se"] = float(per.std() / len(per) ** 0.5) if len(per) > 1 else float("nan")
        out[f"pll_{name}_per_antibody"] = per.tolist()  # for paired comparisons
    return out, tokens
