"""What limits the MI head's fit: the same exact-MI data, the same held-out puzzles, ten heads.

    python benchmarks/mi/mi_head_variants.py --data data/mi/sudoku-seq data/mi/sudoku-par    # ten heads, one thread
    python benchmarks/mi/mi_head_variants.py --data data/mi/sudoku-seq data/mi/sudoku-par --only exclusion probes
        # those two heads again; the other rows of OUT.json kept (same model, data, steps and target only)
    python benchmarks/mi/mi_head_variants.py --data data/mi/sudoku-seq data/mi/sudoku-par --steps 30000 --heads relu values \
        --out benchmarks/results/mi/mi_head_variants_long     # two heads alone, fitted ten times longer
    python benchmarks/mi/mi_head_variants.py --data data/mi/sudoku-seq data/mi/sudoku-par --steps 30000 --heads relu values \
        --train-states 4514 --out benchmarks/results/mi/mi_head_variants_long_half    # on half the training states
    python benchmarks/mi/mi_head_variants.py --data data/mi/sudoku-seq data/mi/sudoku-par --target joint \
        --out benchmarks/results/mi/mi_head_variants_joint      # fitted and scored on the probe joint's MI
    python benchmarks/mi/mi_head_variants.py --data - --tables-only     # OUT.md again from OUT.json

The shipped head form (a per-position MLP into a rank-32 symmetric bilinear form, relu link) misses
the aim (Spearman ≥ 0.8 on the pairs that matter). Nine changes, each aimed at one suspected cause:

- **targets**: the same head trained only on pairs whose target averages both directions (the
  one-direction targets carry the model's asymmetry);
- **loss**: the same head fitted by MSE on log(1 + I/c), c = 0.01 nats (``HeadTrainConfig.scale``),
  alone and with the values below: plain MSE in nats is ruled by the few pairs near 1 nat, while the
  pairs that matter span 0.01-1 and their ranks need relative accuracy across that span;
- **capacity**: a small MLP over 8 bilinear forms per pair instead of one (symmetric, non-negative);
- **information**: the hidden states of earlier blocks (``--layers``) concatenated to the final ones;
  or the denoiser's own predicted distribution P(X_i | C) and its entropy beside the final state (two
  cells share information only if both are uncertain, and on Sudoku the pairs that matter are peers
  whose candidates overlap, Σ_v P(X_i = v) P(X_j = v): quantities the final state need not expose
  linearly; ``unmask mi train --values`` fits this form, with the mask's column kept at 0 beside the V
  values read here);
- **form**: the MI of an explicit two-cell joint P_i(a) P_j(b) exp(θ_ij [a = b]) / Z built from the
  denoiser's own predictions, only the coupling θ_ij learnt (:class:`CouplingHead`): a true MI, so a
  pair is charged only if both cells are uncertain and never more than their marginals allow;
- **structure, cheap**: the paper's I of the conditionals in which fixing X_i = v only forbids X_j = v
  (:func:`exclusion_mi`, zero parameters, from P(X | C)), gated per pair (:class:`ExclusionHead`);
- **structure, dear**: amortised probes (:class:`ProbeHead`): predict how fixing X_i = v moves every
  other cell's logits and take the paper's I of the predicted conditionals, the probes' own formula.
  Its (N·k·N·V) softmaxes cost far more than 3 % of a pass: it asks whether the form can reach the
  aim at all.

Each is fitted by MSE as ``unmask mi train`` fits its head (Adam, cosine, its defaults; every head
initialised and its batches drawn from the same seed; the same held-out states) and scored by
:func:`unmask.mi.fit.evaluate_head`, with its cost against one denoiser pass (medians of 11, one
thread; the denoiser's block outputs are caught by forward hooks, free). Beside the table: how well
the exact symmetric part itself ranks one direction on the held-out states (what a perfect symmetric
head would score on pairs whose target is one direction). Beside each head's held-out score, its score
on as many of its own training states, drawn at random (``train_spearman_matters``, ``train_spearman``):
a large gap says it over-fits (more states would help), none says the head's form or inputs limit it.
Writes ``OUT.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import replace
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

from unmask.decode.scores import entropy
from unmask.eval import markdown_table, shown_path
from unmask.mi.data import load_mi_datasets
from unmask.mi.estimator import HeadConfig, MIHead, position_mlp
from unmask.mi.fit import (
    TARGETS,
    HeadTrainConfig,
    both_rows,
    consistency,
    evaluate_head,
    fit_pairs,
    median_time,
    pair_mask,
    split,
    targets,
)
from unmask.model import WEIGHTS_FILE, load_model
from unmask.runs import file_digest
from unmask.tasks.sudoku.task import DEFAULT_MODEL

COLUMNS = ["head", "parameters", "fitted_pairs", "spearman_matters", "train_spearman_matters", "spearman_matters_both_rows",
           "spearman", "train_spearman", "mse", "top10_recall", "head_ms", "relative_cost"]
TRAIN = HeadTrainConfig()  # the fit of `unmask mi train` (steps and seed come from the command line)
HEADS = ("relu", "both", "scaled", "pair-mlp", "blocks", "values", "values-scaled", "coupled", "exclusion",
         "probes")  # --only's names, in the table's order
SCALE = 0.01  # nats: the scaled fits' c (HeadTrainConfig.scale), the threshold of the pairs that matter


def coupled_pair_mi(probs: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    """``(B, N, N)`` I(A; B) of the joints p_ij(a, b) = P_i(a) P_j(b) (1 + c [a = b]) / Z, c = e^θ − 1.

    Closed form, O(N²·V): with s = Σ_a P_i(a) P_j(a) and Z = 1 + c·s, the marginals are
    P_i(a) (1 + c P_j(a)) / Z and P_j(b) (1 + c P_i(b)) / Z, so

        I = log Z + θ (1 + c) s / Z − (A_ij + A_ji) / Z,   A_ij = Σ_a P_i(a) u log u,  u = 1 + c P_j(a).

    ``probs`` ``(B, N, V)`` rows sum to 1; ``theta`` ``(B, N, N)`` symmetric (θ = 0 gives exactly 0).
    """
    c = torch.expm1(theta)  # (B, N, N)
    s = torch.bmm(probs, probs.transpose(1, 2))  # (B, N, N) Σ_a P_i(a) P_j(a)
    z = (1 + c * s).clamp_min(1e-12)
    u = 1 + c[..., None] * probs[:, None, :, :]  # (B, N, N, V) 1 + c_ij P_j(a)
    a = (probs[:, :, None, :] * torch.xlogy(u, u)).sum(-1)  # (B, N, N) A_ij
    return (torch.log(z) + (theta * (1 + c) * s - a - a.transpose(1, 2)) / z).clamp_min(0)  # (rounding: −1e-7)


class PositionHead(nn.Module):
    """What every head below shares: ``MIHead``'s per-position MLP and a parameter count."""

    position_mlp = staticmethod(position_mlp)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())


class CouplingHead(PositionHead):
    """The MI of an explicit two-cell joint built from the denoiser's own predictions,
    p_ij(a, b) ∝ P_i(a) P_j(b) exp(θ_ij [a = b]) (θ < 0: the cells avoid one value, as Sudoku peers
    must; θ > 0: they agree), θ_ij = relu(agree_ij) − relu(avoid_ij) from two symmetric bilinear forms
    of the hidden states. A true MI, so never above what the two marginals allow (≤ min(H_i, H_j)).
    Input: the hidden state with P(X_i | C) and its entropy beside it (``features``); θ is read from the
    hidden state, the joint's marginals from P(X_i | C)."""

    def __init__(self, d_in: int, n_values: int, d_hidden: int = 128, rank: int = 32, bound: float = 8.0) -> None:
        super().__init__()
        self.d_in, self.n_values, self.rank, self.bound = d_in, n_values, rank, bound
        self.mlp = self.position_mlp(d_in, d_hidden, 2 * rank)
        self.weight = nn.Parameter(torch.ones(2, rank))
        self.bias = nn.Parameter(torch.zeros(2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden, probs = x[..., : self.d_in], x[..., self.d_in : self.d_in + self.n_values]  # (B, N, D), (B, N, V)
        b, n, _ = hidden.shape
        e = self.mlp(hidden).view(b, n, 2, self.rank).transpose(1, 2)  # (B, 2, N, r)
        s = F.relu(torch.matmul(e * self.weight[:, None, :], e.transpose(2, 3)) / math.sqrt(self.rank) + self.bias[:, None, None])
        theta = self.bound * torch.tanh((s[:, 0] - s[:, 1]) / self.bound)  # (B, N, N) |θ| < bound
        return coupled_pair_mi(probs, theta)


def exclusion_mi(probs: torch.Tensor) -> torch.Tensor:
    """``(B, N, N)`` the paper's I if fixing X_i = v did nothing but forbid X_j = v (as for Sudoku peers):

        E_ij = H(P_j) − Σ_v P_i(v) H(P_j without v, renormalised),
        H(P_j without v) = (H(P_j) + P_j(v) log P_j(v)) / (1 − P_j(v)) + log(1 − P_j(v)).

    Zero parameters, one (N, V) × (V, N) product; negative where removing j's favourite value
    raises its entropy (as the model's own I can be). ``probs`` ``(B, N, V)``."""
    h = entropy(probs)  # (B, N)
    rest = (1 - probs).clamp_min(1e-6)
    without = (h[..., None] + torch.xlogy(probs, probs)) / rest + torch.log(rest)  # (B, N, V) H(P_j without v)
    return h[:, None, :] - torch.bmm(probs, without.transpose(1, 2))


class ExclusionHead(PositionHead):
    """Î_ij = relu(g_ij) · ½(E_ij + E_ji) + relu(s_ij): the exclusion MI (:func:`exclusion_mi`) of the
    denoiser's own P(X | C), gated per pair, plus a free term; g and s are symmetric bilinear forms of
    the hidden state with P(X_i | C) and its entropy beside it (``features``)."""

    def __init__(self, d_in: int, n_values: int, d_hidden: int = 128, rank: int = 32) -> None:
        super().__init__()
        self.d_in, self.n_values, self.rank = d_in, n_values, rank
        width = d_in + n_values + 1
        self.mlp = self.position_mlp(width, d_hidden, 2 * rank)
        self.weight = nn.Parameter(torch.ones(2, rank))
        self.bias = nn.Parameter(torch.zeros(2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape
        e = self.mlp(x).view(b, n, 2, self.rank).transpose(1, 2)  # (B, 2, N, r)
        s = torch.matmul(e * self.weight[:, None, :], e.transpose(2, 3)) / math.sqrt(self.rank) + self.bias[:, None, None]
        ex = exclusion_mi(x[..., self.d_in : self.d_in + self.n_values])  # (B, N, N)
        return F.relu(s[:, 0]) * 0.5 * (ex + ex.transpose(1, 2)) + F.relu(s[:, 1])


class ProbeHead(PositionHead):
    """Amortised probes: predict how fixing X_i = v moves the logits of every other cell j, then take
    the paper's I of those predicted conditionals exactly as the probes would,

        Î_ij = Σ_{v in i's top k} P_i(v) · (H(P_j) − H(softmax((1 + σ_ij) log P_j − α_ij e_v + Δ_ij(v)))),

    with α (j avoids v), σ (j sharpens) bilinear forms and Δ_ij(v, w) = a_i(v)·b_j(w) a rank-q term;
    returned as ½(Î + Îᵀ), relu'd outside training. Inputs as :class:`ExclusionHead`'s. Its cost is
    (N·k·N·V) softmaxes per state: a ceiling of the form, not a head within 3 % of a pass."""

    def __init__(self, d_in: int, n_values: int, d_hidden: int = 128, rank: int = 32, low_rank: int = 8, top: int = 3) -> None:
        super().__init__()
        self.d_in, self.n_values, self.rank, self.low_rank, self.top = d_in, n_values, rank, low_rank, top
        width = d_in + n_values + 1
        self.mlp = self.position_mlp(width, d_hidden, 4 * rank + 2 * n_values * low_rank)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        probs = x[..., self.d_in : self.d_in + self.n_values]  # (B, N, V)
        b, n, v = probs.shape
        r, q, k = self.rank, self.low_rank, self.top
        out = self.mlp(x)
        e = out[..., : 4 * r].view(b, n, 4, r)
        avoid = torch.einsum("bir,bjr->bij", e[:, :, 0], e[:, :, 1]) / math.sqrt(r)  # (B, N, N) α_ij
        sharpen = torch.einsum("bir,bjr->bij", e[:, :, 2], e[:, :, 3]) / math.sqrt(r)  # (B, N, N) σ_ij
        src, dst = out[..., 4 * r :].view(b, n, 2, v, q).unbind(2)  # (B, N, V, q) a_i(v), b_j(w)
        p_top, v_top = probs.topk(k, -1)  # (B, N, k)
        a = src.gather(2, v_top[..., None].expand(b, n, k, q))  # (B, N, k, q)
        delta = torch.einsum("bikq,bjwq->bikjw", a, dst) / math.sqrt(q)  # (B, N, k, N, V)
        log_p = probs.clamp_min(1e-9).log()  # (B, N, V)
        same = F.one_hot(v_top, v).to(probs.dtype)  # (B, N, k, V) e_v
        logits = (log_p[:, None, None] * (1 + sharpen[:, :, None, :, None]) + delta
                  - avoid[:, :, None, :, None] * same[:, :, :, None, :])
        cond = logits.log_softmax(-1)  # (B, N, k, N, V) predicted log P(X_j | X_i = v, C)
        h_cond = -(cond.exp() * cond).sum(-1)  # (B, N, k, N)
        base = log_p.log_softmax(-1)  # (B, N, V) as the conditionals are computed, so no shift is exactly 0
        h = -(base.exp() * base).sum(-1)  # (B, N) H(P_j)
        i = (p_top[..., None] * (h[:, None, None, :] - h_cond)).sum(2)  # (B, N, N)
        s = 0.5 * (i + i.transpose(1, 2))
        return s if self.training else F.relu(s)


class PairMLPHead(PositionHead):
    """``forms`` symmetric bilinear scores per pair, mixed by a small MLP into a relu'd MI estimate."""

    def __init__(self, d_in: int, d_hidden: int = 128, forms: int = 8, rank: int = 16, width: int = 16) -> None:
        super().__init__()
        self.forms, self.rank = forms, rank
        self.mlp = self.position_mlp(d_in, d_hidden, forms * rank)
        self.mix = nn.Sequential(nn.Linear(forms, width), nn.GELU(), nn.Linear(width, 1))

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        b, n, _ = hidden.shape
        e = self.mlp(hidden).view(b, n, self.forms, self.rank).transpose(1, 2)  # (B, M, N, r)
        s = torch.matmul(e, e.transpose(2, 3)) / math.sqrt(self.rank)  # (B, M, N, N), each symmetric
        return F.relu(self.mix(s.permute(0, 2, 3, 1)).squeeze(-1))  # (B, N, N)


@torch.no_grad()
def features(model, tokens: torch.Tensor, layers: list[int], batch_size: int = 256) -> tuple[torch.Tensor, torch.Tensor]:
    """``(S, L, D·(1 + len(layers)))`` final hidden states with those of blocks ``layers`` beside them,
    and ``(S, L, V + 1)`` the predicted distribution over values (mask excluded) with its entropy."""
    caught = {}
    hooks = [model.blocks[k].register_forward_hook(lambda mod, inp, out, k=k: caught.__setitem__(k, out)) for k in layers]
    keep = [v for v in range(model.cfg.vocab_size) if v != model.mask_id]  # the values a cell can take
    out = torch.empty(*tokens.shape, model.cfg.d_model * (1 + len(layers)))  # filled batch by batch
    values = torch.empty(*tokens.shape, len(keep) + 1)
    try:
        for a in range(0, len(tokens), batch_size):
            logits, hidden = model(tokens[a : a + batch_size].long())
            out[a : a + batch_size] = torch.cat([hidden, *(caught[k] for k in layers)], -1).float()
            p = logits[..., keep].double().softmax(-1)  # (b, L, V)
            values[a : a + batch_size] = torch.cat([p, entropy(p)[..., None]], -1).float()
    finally:
        for h in hooks:
            h.remove()
    return out, values




def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=str(DEFAULT_MODEL), help="the denoiser the exact MI was computed with")
    p.add_argument("--data", nargs="+", required=True, help="exact-MI data directories (unmask mi data)")
    p.add_argument("--steps", type=int, default=TRAIN.steps, help="optimizer steps per head")
    p.add_argument("--layers", type=int, nargs="+", default=[1, 3], help="earlier blocks whose outputs the third head also reads")
    p.add_argument("--target", choices=list(TARGETS), default=TRAIN.target,
                   help="fit and score on the paper's I (raw) or on the MI of each row's probe joint (joint)")
    p.add_argument("--seed", type=int, default=TRAIN.seed)
    p.add_argument("--train-states", type=int, help="fit on this many of the training states (a seeded draw; "
                   "default all): how the score grows with data")
    p.add_argument("--out", type=Path, default=Path("benchmarks/results/mi/mi_head_variants"))
    p.add_argument("--tables-only", action="store_true", help="rewrite OUT.md from OUT.json (nothing measured)")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--only", nargs="+", choices=HEADS, help="measure these heads alone; keep the other rows of OUT.json")
    which.add_argument("--heads", nargs="+", choices=HEADS, help="measure these heads alone, in a table of their own")
    args = p.parse_args(argv)
    if args.only and not args.out.with_suffix(".json").is_file():
        p.error(f"--only: no {args.out.with_suffix('.json')} whose other rows to keep")
    if args.tables_only:
        if not args.out.with_suffix(".json").is_file():
            p.error(f"--tables-only: no {args.out.with_suffix('.json')} to rewrite the tables from")
        print(write_tables(json.loads(args.out.with_suffix(".json").read_text()), args.out))
        return

    torch.set_num_threads(1)
    start = time.time()
    model = load_model(args.model)
    if any(not 0 <= k < len(model.blocks) for k in args.layers):
        p.error(f"--layers: the model has blocks 0-{len(model.blocks) - 1}")
    data = load_mi_datasets(args.data, model_sha256=file_digest(Path(args.model) / WEIGHTS_FILE))
    target, pairs, both = targets(data, args.target), pair_mask(data, model.mask_id), both_rows(data, model.mask_id)
    train, val = split(data, TRAIN.val_fraction)  # the states unmask mi train holds out
    if args.train_states is not None:
        if not 0 < args.train_states <= len(train):
            p.error(f"--train-states: between 1 and the {len(train)} training states")
        draw = torch.randperm(len(train), generator=torch.Generator().manual_seed(args.seed + 1))
        train = train[draw[: args.train_states].sort().values]  # (T,) a subset, the held-out states unchanged
    deep, values = features(model, data["tokens"], args.layers)  # (S, L, D·(1 + len(layers))), (S, L, V + 1)
    d = model.cfg.d_model
    final = deep[..., :d].contiguous()  # (S, L, D) the final hidden states alone (a copy: gathers from a view are slow)
    with_values = torch.cat([final, values], -1)  # (S, L, D + V + 1)
    bilinear = lambda width: MIHead(HeadConfig(width, TRAIN.d_hidden, TRAIN.rank, "relu"))  # noqa: E731
    values_in = values.shape[-1] - 1  # V: the denoiser's values
    variants = {  # key: (name, a head maker, its inputs, the pairs it is fitted on)
        "relu": (f"mi train's (relu, rank {TRAIN.rank})", lambda: bilinear(d), final, pairs),
        "both": ("same, fitted on both-direction targets only", lambda: bilinear(d), final, both),
        "scaled": (f"mi train's, fitted on log(1 + I/{SCALE})", lambda: bilinear(d), final, pairs),
        "pair-mlp": ("MLP over 8 bilinear forms", lambda: PairMLPHead(d, TRAIN.d_hidden), final, pairs),
        "blocks": (f"mi train's, + blocks {','.join(map(str, args.layers))}", lambda: bilinear(deep.shape[-1]), deep, pairs),
        "values": ("mi train's, + P(X_i | C) and its entropy", lambda: bilinear(with_values.shape[-1]), with_values, pairs),
        "values-scaled": (f"mi train's, + P(X_i | C) and its entropy, fitted on log(1 + I/{SCALE})",
                          lambda: bilinear(with_values.shape[-1]), with_values, pairs),
        "coupled": ("MI of a coupled joint of P(X_i | C), P(X_j | C)",
                    lambda: CouplingHead(d, values_in, TRAIN.d_hidden, TRAIN.rank), with_values, pairs),
        "exclusion": ("exclusion MI of P(X | C), gated per pair", lambda: ExclusionHead(d, values_in, TRAIN.d_hidden, TRAIN.rank),
                      with_values, pairs),
        "probes": ("amortised probes (top 3 values)", lambda: ProbeHead(d, values_in, TRAIN.d_hidden, TRAIN.rank),
                   with_values, pairs),
    }
    assert list(variants) == list(HEADS)
    order = [name for name, *_ in variants.values()]  # the table's row order
    kept = []  # with --only: the rows of OUT.json that are not measured again
    if args.only:
        old = json.loads(args.out.with_suffix(".json").read_text())
        run = {"model": shown_path(args.model), "data": [shown_path(x) for x in args.data], "steps": args.steps,
               "target": args.target, "train_states": len(train)}
        if {k: old.get(k) for k in run} != run:
            p.error(f"--only: {args.out.with_suffix('.json')} was measured with another model, data, steps, target "
                    "or train states")
        names = {variants[k][0] for k in args.only}
        kept = [row for row in old["rows"] if row["head"] not in names]
    if args.only or args.heads:
        variants = {k: v for k, v in variants.items() if k in (args.only or args.heads)}
    sample = data["tokens"][val[:250]].long()
    with torch.no_grad():
        denoiser_s = median_time(lambda: model(sample), 11)
    # as many training states as are held out, drawn from all of them (every data folder)
    own = train[torch.randperm(len(train), generator=torch.Generator().manual_seed(args.seed))[: len(val)]]
    rows = []
    for key, (name, make, x, fitted_on) in variants.items():
        torch.manual_seed(args.seed)  # every head starts from the same draw, as in unmask mi train
        scale = SCALE if key.endswith("scaled") else TRAIN.scale
        head = fit_pairs(make(), x, target, fitted_on, train, replace(TRAIN, steps=args.steps, seed=args.seed, scale=scale))
        m = evaluate_head(head, x[val], target[val], pairs[val], both=both[val])
        seen = evaluate_head(head, x[own], target[own], pairs[own])
        with torch.no_grad():
            head_s = median_time(lambda head=head, xv=x[val[:250]]: head(xv), 11)
        rows.append({"head": name, "parameters": head.num_parameters(), "fitted_pairs": int(fitted_on[train].sum()),
                     **{k: m.get(k) for k in COLUMNS[3:-2] if not k.startswith("train_")},
                     "train_spearman_matters": seen["spearman_matters"], "train_spearman": seen["spearman"],
                     "head_ms": round(1000 * head_s, 2), "relative_cost": head_s / denoiser_s})
        print(json.dumps(rows[-1]), flush=True)
    reference = consistency({k: v[val] for k, v in data.items()}, model.mask_id, TARGETS[args.target])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    result = {"model": shown_path(args.model), "data": [shown_path(x) for x in args.data], "steps": args.steps,
              "target": args.target, "train_states": len(train), "val_states": len(val),
              "denoiser_ms": round(1000 * denoiser_s, 2),
              "rows": rows, "reference": reference, "minutes": round((time.time() - start) / 60, 1)}
    if args.only:  # the heads in their first order, each row from the run that measured it
        result["rows"] = sorted(kept + rows, key=lambda row: order.index(row["head"]) if row["head"] in order else len(order))
        result["runs"] = old.get("runs", [{"heads": [row["head"] for row in kept], "minutes": old.get("minutes")}]) + [
            {"heads": [row["head"] for row in rows], "minutes": result["minutes"]}]
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    print(write_tables(result, args.out))


def write_tables(result: dict, out: Path) -> str:
    """``OUT.md`` from a result (the heads' table, then the targets' own consistency); returns it."""
    md = markdown_table(result["rows"], COLUMNS) + "\n\n" + markdown_table([result["reference"]], list(result["reference"]))
    out.with_suffix(".md").write_text(md + "\n")
    return md


if __name__ == "__main__":
    main()
