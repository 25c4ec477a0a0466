"""Training and evaluating the MI estimator head on exact-MI data (MSE on masked pairs, as in Sharma, Wang,
Li 2026, arXiv 2605.20187)."""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch
import torch.nn as nn
from tqdm import tqdm

from unmask import checks
from unmask.errors import UnmaskError
from unmask.mi.estimator import LINKS, HeadConfig, MIHead, predicted_values
from unmask.mi.exact import symmetrise
from unmask.optim import adamw, set_lr, warmup_cosine

MATTERS = 0.01  # nats: pairs with more exact MI than this are the ones a decoder must not reveal together
INDEPENDENT = 1e-3  # nats: pairs with less are, for decoding, independent (a head should charge them ~0)
CALIBRATION_EDGES = (0.0, 1e-3, 3e-3, 0.01, 0.03, 0.1, 0.3, 1.0, float("inf"))  # bins of the exact MI


@dataclass(frozen=True)
class HeadTrainConfig:
    """How to fit the head."""

    steps: int = 3000  # optimizer steps
    batch_size: int = 64  # states per step
    lr: float = 2e-3  # peak learning rate (cosine decay to 10 %, no weight decay)
    val_fraction: float = 0.1  # last share of the states held out for the reported metrics
    d_hidden: int = 128  # head MLP width
    rank: int = 32  # bilinear embedding size
    link: str = "relu"  # output link: "relu" charges independent pairs exactly 0; "softplus" never reaches 0
    # Each field's comment is its flag's help, read from the field's own line (commands.common.field_comments): not wrapped.
    # ruff: disable[E501]
    target: str = "raw"  # "raw": the paper's I = H(X_j | C) − Σ_v P(v) H(X_j | v, C); "joint": the MI of each row's probe joint; "influence": DEMASK's D
    values: bool = False  # the head also reads the denoiser's P(X_i | C) and its entropy beside h_i (HeadConfig.n_values)
    scale: float = 0.0  # c in nats: 0 fits the MI itself by MSE; c > 0 fits log(1 + I/c) (I below 0 as 0), relative errors alike above c
    # ruff: enable[E501]
    seed: int = 0  # init and batch order

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "d_hidden", "rank"):
            checks.integer(name, getattr(self, name), 1)
        checks.positive("lr", self.lr)
        checks.between("val_fraction", self.val_fraction, 0, 1, "()")  # both sides need states
        if self.link not in LINKS:
            raise UnmaskError(f"link must be one of {', '.join(LINKS)}, got {self.link!r}")
        if self.target not in TARGETS:
            raise UnmaskError(f"target must be one of {', '.join(TARGETS)}, got {self.target!r}")
        if not 0 <= self.scale < float("inf"):  # (NaN refused too; ∞ would make every loss 0)
            raise UnmaskError(f"scale must be >= 0 nats, got {self.scale}")


# HeadTrainConfig.target → its array in the MI data (unmask.mi.exact)
TARGETS = {"raw": "mi", "joint": "joint", "influence": "influence"}


def pair_mask(data: dict[str, torch.Tensor], mask_id: int) -> torch.Tensor:
    """``(S, L, L)`` bool: supervised pairs (two masked positions, at least one a computed row)."""
    masked = data["tokens"] == mask_id
    rows = data["rows"]
    eye = torch.eye(masked.shape[1], dtype=torch.bool)
    return masked[:, :, None] & masked[:, None, :] & (rows[:, :, None] | rows[:, None, :]) & ~eye


def both_rows(data: dict[str, torch.Tensor], mask_id: int) -> torch.Tensor:
    """``(S, L, L)`` bool: supervised pairs with both rows computed (their target averages both directions)."""
    return pair_mask(data, mask_id) & data["rows"][:, :, None] & data["rows"][:, None, :]


def targets(data: dict[str, torch.Tensor], target: str = "raw") -> torch.Tensor:
    """``(S, L, L)`` symmetrised exact MI (``target``: a key of :data:`TARGETS`): the head is symmetric,
    the model's conditionals are not."""
    key = TARGETS[target]
    if key not in data:
        raise UnmaskError(f"this MI data has no {target!r} targets "
                          "(built before they were stored: rebuild it with `unmask mi data`)")
    return symmetrise(data[key].float(), data["rows"])


def consistency(data: dict[str, torch.Tensor], mask_id: int, key: str = "mi") -> dict:
    """How well the exact MI agrees with itself: I_ij vs I_ji over pairs with both rows computed.

    The model's conditionals are not one joint, so I_ij and I_ji disagree: this measures how noisy
    the targets are (not a ceiling on a symmetric estimate's fit)."""
    both = both_rows(data, mask_id)
    a, b = data[key].double()[both], data[key].double().transpose(1, 2)[both]
    if len(a) < 2:
        return {}
    out = {"exact_ij_vs_ji_pearson": _pearson(a, b), "exact_ij_vs_ji_spearman": _pearson(_ranks(a), _ranks(b))}
    matter = (a + b) / 2 > MATTERS  # the pairs the head's Spearman "on pairs that matter" is taken over
    if matter.sum() > 1:
        out["exact_ij_vs_ji_spearman_matters"] = _pearson(_ranks(a[matter]), _ranks(b[matter]))
    one = a > MATTERS  # where one direction alone is the target, the pairs that matter are chosen by it
    if len(torch.unique((a[one] + b[one]) / 2)) > 1:  # (one symmetric part for all: nothing to rank)
        # A reference for pairs whose target is one direction: how well the exact symmetric part
        # ½(I_ij + I_ji) ranks I_ij alone (what a head that learnt the symmetric part perfectly would
        # score there; not a strict ceiling, as another symmetric ordering may do a little better).
        out["symmetric_vs_one_direction_spearman_matters"] = _pearson(_ranks((a[one] + b[one]) / 2), _ranks(a[one]))
    return out


Inputs = torch.Tensor | tuple[torch.Tensor, ...]  # what a head reads per state: hidden states, or (hidden states, P(X | C))


@torch.no_grad()
def hidden_states(denoiser, tokens: torch.Tensor, batch_size: int = 256) -> torch.Tensor:
    """``(S, L, D)`` frozen hidden states of the denoiser."""
    return torch.cat([denoiser(tokens[k : k + batch_size].long())[1].float() for k in range(0, len(tokens), batch_size)])


@torch.no_grad()
def head_inputs(denoiser, tokens: torch.Tensor, values: bool, batch_size: int = 256) -> tuple[torch.Tensor, ...]:
    """The arguments of an MI head on ``tokens`` ``(S, L)``: the hidden states ``(S, L, D)``, and with
    ``values`` also P(X | C) ``(S, L, V)`` (:func:`unmask.mi.estimator.predicted_values`)."""
    if not values:
        return (hidden_states(denoiser, tokens, batch_size),)
    hidden, probs = [], []
    for k in range(0, len(tokens), batch_size):
        logits, h = denoiser(tokens[k : k + batch_size].long())
        hidden.append(h.float())
        probs.append(predicted_values(logits, denoiser.mask_id))
    return torch.cat(hidden), torch.cat(probs)


def as_args(x: Inputs) -> tuple[torch.Tensor, ...]:
    """A head's inputs as the arguments of its call."""
    return x if isinstance(x, tuple) else (x,)


def take(x: Inputs, idx) -> tuple[torch.Tensor, ...]:
    """The states ``idx`` of a head's inputs, as the arguments of its call."""
    return tuple(t[idx] for t in as_args(x))


def fit_head(denoiser, data: dict[str, torch.Tensor], cfg: HeadTrainConfig, progress: bool = True) -> tuple[MIHead, dict]:
    """Fit an :class:`MIHead` by MSE (on :func:`compress`'s scale) on supervised pairs; returns it with
    held-out metrics."""
    target = targets(data, cfg.target)
    pairs = pair_mask(data, denoiser.mask_id)
    tr, va = split(data, cfg.val_fraction)
    if not pairs[tr].any():  # (before the hidden states: nothing to fit, the head would stay as drawn)
        raise UnmaskError(f"the MI data has no supervised pair (two masked positions, one with a computed row) among its "
                          f"{len(tr)} training states: nothing to fit")
    n_val = len(va)
    torch.manual_seed(cfg.seed)
    x = head_inputs(denoiser, data["tokens"], cfg.values)  # (S, L, D), and (S, L, V) with cfg.values
    head = MIHead(HeadConfig(x[0].shape[-1], cfg.d_hidden, cfg.rank, cfg.link, x[1].shape[-1] if cfg.values else 0))
    fit_pairs(head, x, target, pairs, tr, cfg, progress)
    n_tr = len(tr)
    both = both_rows(data, denoiser.mask_id)  # targets from both directions
    metrics = evaluate_head(head, take(x, va), target[va], pairs[va], both=both[va])
    metrics["train_states"], metrics["val_states"], metrics["target"] = n_tr, n_val, cfg.target
    metrics["values"], metrics["scale"] = cfg.values, cfg.scale  # (how it was fitted, beside the head)
    metrics |= consistency({k: v[va] for k, v in data.items()}, denoiser.mask_id, TARGETS[cfg.target])
    return head, metrics


def fit_pairs(head: nn.Module, x: Inputs, target: torch.Tensor, pairs: torch.Tensor, train: torch.Tensor,
              cfg: HeadTrainConfig, progress: bool = True) -> nn.Module:
    """Fit ``head`` on inputs ``x`` ``(S, L, ·)`` (or a tuple of them, its arguments) by MSE (on :func:`compress`'s scale)
    over the ``pairs`` ``(S, L, L)`` of the ``train`` states (Adam, warm-up-free cosine; batches drawn from ``cfg.seed``);
    returns it in eval mode."""
    opt = adamw(head, cfg.lr)  # no weight decay: Adam
    gen = torch.Generator().manual_seed(cfg.seed)
    for step in tqdm(range(cfg.steps), disable=not progress, desc="mi head"):
        set_lr(opt, warmup_cosine(step, cfg.steps, cfg.lr, warmup=0, min_ratio=0.1))
        idx = train[torch.randint(len(train), (min(cfg.batch_size, len(train)),), generator=gen)]
        loss = ((compress(head(*take(x, idx)), cfg.scale) - compress(target[idx], cfg.scale)) ** 2)[pairs[idx]].mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return head.eval()


def compress(mi: torch.Tensor, scale: float) -> torch.Tensor:
    """The scale an MI head is fitted on: the MI itself (``scale`` 0), else log(1 + max(I, 0)/scale),
    on which a pair at 0.02 nats and one at 0.5 weigh alike by their relative error (the pairs that
    matter span two decades; plain MSE is ruled by the largest)."""
    return torch.log1p(mi.clamp_min(0) / scale) if scale > 0 else mi


def split(data: dict[str, torch.Tensor], val_fraction: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Indices of the training and the held-out states: a fixed pseudo-random share of whole prompts
    (a puzzle decoded twice must not sit on both sides), else the last states."""
    s = len(data["tokens"])
    prompt = data.get("prompt", torch.arange(s))
    held = (prompt * 2654435761 % 1000) < 1000 * val_fraction
    if held.all() or not held.any():
        held = torch.arange(s) >= s - max(1, int(s * val_fraction))
    return torch.nonzero(~held).squeeze(1), torch.nonzero(held).squeeze(1)


def _ranks(x: torch.Tensor) -> torch.Tensor:
    """Ranks 0..n-1 with ties sharing their average rank (as Spearman's correlation needs)."""
    _, inverse, counts = torch.unique(x, return_inverse=True, return_counts=True)
    end = counts.cumsum(0).to(x.dtype)
    return ((end - counts.to(x.dtype)) + (end - 1)).div(2)[inverse]


def topk_recall(est: torch.Tensor, target: torch.Tensor, pairs: torch.Tensor, k: int) -> float:
    """Mean over states of |top-k pairs by estimate ∩ top-k by exact MI| / k' (unordered pairs i < j,
    k' = min(k, the state's pairs); states without pairs are skipped)."""
    upper = pairs & torch.ones_like(pairs[0]).triu(1)  # each unordered pair once
    e = est.masked_fill(~upper, float("-inf")).flatten(1)
    t = target.masked_fill(~upper, float("-inf")).flatten(1)
    n = upper.flatten(1).sum(1)
    recalls = []
    for s in torch.nonzero(n).squeeze(1).tolist():  # per state: k' differs between states
        kk = min(k, int(n[s]))
        hit = set(e[s].topk(kk).indices.tolist()) & set(t[s].topk(kk).indices.tolist())
        recalls.append(len(hit) / kk)
    return sum(recalls) / len(recalls) if recalls else float("nan")


def _pearson(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a - a.mean(), b - b.mean()
    return float((a * b).sum() / (a.norm() * b.norm()).clamp_min(1e-12))


def calibration(est: torch.Tensor, exact: torch.Tensor, edges=CALIBRATION_EDGES) -> list[dict]:
    """Mean predicted vs mean exact MI in bins of the exact MI (pairs with exact MI below 0 go in the first bin)."""
    out = []
    for k, (lo, hi) in enumerate(zip(edges[:-1], edges[1:])):
        inside = (exact < hi) & ((exact >= lo) if k else torch.ones_like(exact, dtype=torch.bool))
        if inside.any():
            out.append({"exact_from": lo, "exact_to": hi, "pairs": int(inside.sum()), "mean_exact": float(exact[inside].mean()),
                        "mean_predicted": float(est[inside].mean()),
                        "share_predicted_zero": float((est[inside] == 0).double().mean())})
    return out


@torch.no_grad()
def evaluate_head(head: MIHead, x: Inputs, target: torch.Tensor, pairs: torch.Tensor, k: int = 10,
                  both: torch.Tensor | None = None) -> dict:
    """MSE, Pearson and Spearman correlation over supervised pairs (all, and those that matter:
    exact MI > :data:`MATTERS`), top-k pair recall per state, what independent pairs are charged,
    and a calibration table (predicted vs exact MI in bins of the exact MI).

    ``both``: ``(S, L, L)`` the pairs whose target is the symmetric part of both directions; adds
    the Spearman on those that matter (the fit where the target is not one direction alone).
    ``x``: the head's inputs on these states (a tensor, or a tuple of its arguments)."""
    est = head(*as_args(x))  # (S, L, L)
    a, b = est[pairs].double(), target[pairs].double()
    matter, independent = b > MATTERS, b.abs() < INDEPENDENT
    extra = {}
    if both is not None:
        sel = both & (target > MATTERS)
        if sel.sum() > 1:
            extra["spearman_matters_both_rows"] = _pearson(_ranks(est[sel].double()), _ranks(target[sel].double()))
    return extra | {
        "mse": float(((a - b) ** 2).mean()),
        "pearson": _pearson(a, b),
        "spearman": _pearson(_ranks(a), _ranks(b)),
        "spearman_matters": _pearson(_ranks(a[matter]), _ranks(b[matter])) if matter.sum() > 1 else float("nan"),
        f"top{k}_recall": topk_recall(est, target, pairs, k),
        "pairs": int(pairs.sum()),
        "pairs_matter": int(matter.sum()),
        "independent_mean_charge": float(a[independent].mean()) if independent.any() else float("nan"),
        "independent_share_zero": float((a[independent] == 0).double().mean()) if independent.any() else float("nan"),
        "calibration": calibration(a, b),
        "head_parameters": head.num_parameters(),
    }


def median_time(fn, repeats: int) -> float:
    """Median wall time of ``fn()`` over ``repeats`` calls, in seconds."""
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return sorted(times)[len(times) // 2]


@torch.no_grad()
def head_cost(denoiser, head: MIHead, tokens: torch.Tensor, repeats: int = 5) -> dict:
    """Wall time of the head relative to one denoiser forward on the same batch (medians; P(X | C) is not
    timed: the decode state computes it for every rule anyway)."""
    logits, hidden = denoiser(tokens)
    probs = predicted_values(logits, denoiser.mask_id)
    base = median_time(lambda: denoiser(tokens), repeats)
    extra = median_time(lambda: head(hidden, probs), repeats)
    return {"denoiser_ms": round(1000 * base, 2), "head_ms": round(1000 * extra, 3), "relative_cost": extra / base}
