"""Why parallel decodes fail on Sudoku: cells revealed together that depend on each other, or the model's own error.

    python benchmarks/mi/sudoku_failures.py --head benchmarks/models/heads/sudoku12-relu --n 300 --threads 2   # ~30 min

For every puzzle a policy gets wrong, take the first pass that placed a wrong digit (every cell
placed before it is right) and ask of that pass's wrong cells:
- **clash**: does one repeat the digit of a cell placed in the same pass, in its row, column or box?
- **fixed by its step-mates**: with the cells that pass placed *right* added to the grid it was
  decoded from (nothing else), does the model's choice for a wrong cell become the right digit?
- **pairwise**: does adding a single one of those right cells already fix a wrong cell?
A failure with any of these is a *dependency* failure: revealing those cells one after another,
which is what a pairwise-MI charge asks for (Sharma, Wang, Li 2026, arXiv 2605.20187), would have avoided that error at
that pass. The rest are the model's *own* errors: neither all of the pass's right cells nor any single
one of them makes a wrong cell right (other subsets are not tried: the model is not monotone), so
passes spent otherwise or a better model are what help.

For the families named by ``--culprits`` (the entropy budget by default), each *culprit pair* (a
wrong cell and a right step-mate that alone fixes it) is ranked among all pairs of masked cells of
the grid that pass saw, by the MI head and by the exact scores of :mod:`unmask.mi.exact` (MI I and
J, and DEMASK's influence D): would a dependency charge have seen it? Decoding is argmax, as in every other table. Writes
``benchmarks/results/mi/sudoku_failures.{json,md,png}``.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from unmask.decode.loop import DecodeResult
from unmask.denoiser import Denoiser, never_mask
from unmask.eval import decode_all, markdown_table, shown_path
from unmask.io import atomic_write
from unmask.mi.estimator import load_head, predicted_values
from unmask.mi.exact import exact_mi
from unmask.model import load_model
from unmask.plots import plot_pareto
from unmask.policies import build_policy, policy_spec
from unmask.tasks.sudoku.generate import standard_set
from unmask.tasks.sudoku.task import DEFAULT_MODEL, SudokuTask

GAMMAS = [0.1, 0.3, 1.0, 2.0, 3.0]  # the frontier's γ in the low-NFE regime
FIXED_PASSES = [3, 4, 6]  # S of the fixed-pass families (both sets' low end)
FAMILIES = {  # family → specs (the low-NFE end of benchmarks/mi/sudoku_frontier.py's sweeps)
    "entropy budget": [f"mi:gamma={g},lam=0" for g in GAMMAS],
    "MI head λ=2": [f"mi:gamma={g},lam=2" for g in GAMMAS],
    "threshold": [f"threshold:tau={t}" for t in (0.7, 0.9, 0.99)],
    "topk": [f"topk:k={k}" for k in (5, 10, 20)],
    # At a fixed number of passes (benchmarks/mi/sudoku_fixed_steps.py): does the charge's choice of cells
    # lose through dependencies it lets through, or through the model's own errors on the cells it picks?
    "entropy order, fixed passes": [f"mi_steps:steps={s},lam=0" for s in FIXED_PASSES],
    "MI head λ=1, fixed passes": [f"mi_steps:steps={s},lam=1" for s in FIXED_PASSES],
}
SETS = ["test-kaggle", "test-hard"]
ZERO = 1e-9  # an MI or TV score below this is 0 (the exact computation's rounding), so it ties with 0
SCORES = ["head", "exact I", "exact J", "exact D"]  # the dependency scores culprit pairs are ranked by


@dataclass(frozen=True)
class Failures:
    """Why each decode failed (see :func:`failure_causes`)."""

    causes: dict[str, torch.Tensor]  # cause → (N,) bool
    before: torch.Tensor  # (N, L) the grid each failed puzzle's first wrong pass was decoded from (a correct one: its solution)
    culprits: torch.Tensor  # (C, 3) puzzle, wrong cell, a right step-mate that alone makes it right


def failure_causes(denoiser: Denoiser, result: DecodeResult, targets: torch.Tensor, peers: torch.Tensor,
                   batch_size: int = 250) -> Failures:
    """Why each decode of ``result`` failed, for puzzles with solutions ``targets`` ``(N, L)``.

    Causes, each ``(N,)`` bool: ``correct``; for the others, the first pass that placed a wrong digit:
    ``clash`` (a wrong cell repeats the digit of a peer placed in that pass; ``peers`` ``(L, L)`` bool),
    ``fixed`` (a wrong cell's argmax becomes right once the pass's right cells are in the grid),
    ``pairwise`` (once a single one of them is), ``dependency`` (any of the three), ``own`` (a failure
    with none), and ``replayed`` (every wrong cell of that pass is the argmax of the grid before it:
    the premise, a check)."""
    tokens, step = result.tokens, result.reveal_step  # (N, L) each; step -1 = given
    n = len(tokens)
    wrong = tokens != targets  # (N, L)
    failed = wrong.any(1)  # (N,)
    never = int(step.max()) + 1
    first = torch.where(wrong, step, never).amin(1)  # (N,) first pass with a wrong digit (never: none)
    mates = step == first[:, None]  # (N, L) the cells placed in that pass
    wrong_now = mates & wrong  # (N, L)

    v = max(int(tokens.max()), int(targets.max())) + 1
    digits = torch.nn.functional.one_hot(tokens, v).float() * mates[..., None]  # (N, L, v) the pass's digits
    same = torch.matmul(peers.float(), digits)  # (N, L, v) peers placed in that pass, per digit
    clash = (wrong_now & ((same * digits).sum(-1) > 0)).any(1)  # (N,)

    # (N, L) the grid that pass saw
    before = torch.where(step < first[:, None], tokens, torch.full_like(tokens, denoiser.mask_id))
    right_mates = mates & ~wrong  # (N, L)
    rows = failed.nonzero().squeeze(1)  # (F,)
    pr, pj = right_mates.nonzero(as_tuple=True)  # (P,) each: a failed puzzle and one right step-mate of it

    def per_puzzle(who: torch.Tensor, hit: torch.Tensor) -> torch.Tensor:  # (N,) bool: some context of the puzzle hit
        return torch.zeros(n, dtype=torch.long).index_add_(0, who, hit.long()) > 0

    with_all = _argmax(denoiser, torch.where(right_mates[rows], tokens[rows], before[rows]), batch_size)  # (F, L)
    with_one = _argmax(denoiser, before[pr].index_put((torch.arange(len(pr)), pj), tokens[pr, pj]), batch_size)  # (P, L)
    alone = _argmax(denoiser, before[rows], batch_size)  # (F, L)
    fixed = per_puzzle(rows, (wrong_now[rows] & (with_all == targets[rows])).any(1))
    fixed_by_one = wrong_now[pr] & (with_one == targets[pr])  # (P, L)
    pairwise = per_puzzle(pr, fixed_by_one.any(1))
    replayed = per_puzzle(rows, (~wrong_now[rows] | (alone == tokens[rows])).all(1)) | ~failed
    dependency = clash | fixed | pairwise  # (the model is not monotone: one mate may fix what all do not)
    k, i = fixed_by_one.nonzero(as_tuple=True)  # (C,) each: a (puzzle, mate) context and the wrong cell it fixes
    causes = {"correct": ~failed, "clash": clash, "fixed": fixed, "pairwise": pairwise, "dependency": dependency,
              "own": failed & ~dependency, "replayed": replayed}
    return Failures(causes, before, torch.stack([pr[k], i, pj[k]], 1))


def _argmax(denoiser: Denoiser, tokens: torch.Tensor, batch_size: int) -> torch.Tensor:
    """``(K, L)`` the decode's choice at every position of ``tokens`` ``(K, L)`` (argmax, never the mask)."""
    out = torch.zeros(tokens.shape, dtype=torch.long)
    for lo in range(0, len(tokens), batch_size):
        with torch.no_grad():
            logits = denoiser(tokens[lo : lo + batch_size].to(denoiser.device)).logits.float().cpu()  # (b, L, V)
        out[lo : lo + batch_size] = never_mask(logits, denoiser.mask_id).argmax(-1)
    return out


def culprit_ranks(denoiser: Denoiser, head, failures: Failures, eps: float = 1e-3, chunk: int = 32) -> dict[str, torch.Tensor]:
    """How high each MI score ranks each culprit pair among all pairs of masked cells of its state:
    ``(C,)`` the share of the state's other pairs scored below it, for the MI ``head`` and for the exact
    MI (the I of Sharma, Wang, Li 2026, symmetrised and clamped at 0, the probe-joint J, and DEMASK's total-variation
    influence D; all ε-truncated at ``eps``); ties count half. ``NAME zero``: ``(C,)`` bool, the score
    charges the pair exactly 0."""
    culprits = failures.culprits
    if len(culprits) == 0:
        return {k: torch.zeros(0) for name in SCORES for k in (name, f"{name} zero")}
    states, index = culprits[:, 0].unique(return_inverse=True)  # (S,) puzzles with a culprit; (C,) which state
    grids = failures.before[states]  # (S, L)
    masked = grids == denoiser.mask_id  # (S, L)
    # (S, L, L) i < j
    pairs = masked[:, :, None] & masked[:, None, :] & torch.ones(grids.shape[1], grids.shape[1], dtype=torch.bool).triu(1)
    scores = {name: torch.zeros(pairs.shape, dtype=torch.float64) for name in SCORES}
    for lo in range(0, len(grids), chunk):
        g = grids[lo : lo + chunk].to(denoiser.device)
        with torch.no_grad():
            out = denoiser(g)
            scores["head"][lo : lo + chunk] = head(out.hidden.float(),
                                                   predicted_values(out.logits, denoiser.mask_id)).double().cpu()
        exact = exact_mi(denoiser, g, eps=eps)
        scores["exact I"][lo : lo + chunk] = exact.symmetric.clamp_min(0).cpu()
        scores["exact J"][lo : lo + chunk] = exact.symmetric_joint.cpu()
        scores["exact D"][lo : lo + chunk] = exact.symmetric_influence.cpu()
    out = {}
    i, j = culprits[:, 1:].sort(1).values.unbind(1)  # (C,) each: the pair as i < j
    for name, score in scores.items():  # (every score is symmetric up to rounding: a pair ranks as its i < j entry)
        score = score.masked_fill(score.abs() < ZERO, 0.0)
        mine = score[index, i, j]  # (C,)
        others = pairs[index].clone()  # (C, L, L) the state's other pairs
        others[torch.arange(len(culprits)), i, j] = False
        below = ((score[index] < mine[:, None, None]) & others).sum((1, 2))  # (C,)
        tied = ((score[index] == mine[:, None, None]) & others).sum((1, 2))  # (C,) ties count half (mid-rank)
        out[name] = (below + tied / 2) / others.sum((1, 2)).clamp_min(1)
        out[f"{name} zero"] = mine == 0
    return out


def row(set_name: str, family: str, policy, result: DecodeResult, causes: dict[str, torch.Tensor]) -> dict:
    """One table row: accuracy and each cause as a share of all puzzles (accuracy + dependency + own = 100)."""
    pct = {k: round(100 * float(x.double().mean()), 1) for k, x in causes.items()}
    return {"set": set_name, "family": family, "policy": policy_spec(policy), "n": len(result.nfe),
            "mean_nfe": round(float(result.nfe.double().mean()), 2), "accuracy %": pct["correct"],
            "dependency %": pct["dependency"], "pairwise %": pct["pairwise"], "own %": pct["own"],
            "clash %": pct["clash"], "replayed %": pct["replayed"]}


def culprit_row(base: dict, ranks: dict[str, torch.Tensor]) -> dict:
    """One row of the culprit table: how many culprit pairs, and for each MI score the share of them in
    the top tenth of their state's pairs, their median rank (0 = lowest pair, 1 = highest) and the
    share it charges exactly 0."""
    out = {k: base[k] for k in ("set", "policy", "mean_nfe", "pairwise %")}
    out["culprit pairs"] = len(ranks["head"])
    for name in SCORES:
        r = ranks[name]
        out[f"{name} top-10 %"] = round(100 * float((r >= 0.9).double().mean()), 1) if len(r) else None
        out[f"{name} median rank"] = round(float(r.median()), 3) if len(r) else None
        out[f"{name} zero %"] = round(100 * float(ranks[f"{name} zero"].double().mean()), 1) if len(r) else None
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=str(DEFAULT_MODEL), help="model folder")
    p.add_argument("--head", help="folder of the MI head (mi_head.*) to use (default: the model folder's)")
    p.add_argument("--data-dir", default="data/sudoku", type=Path, help="folder of test-kaggle.csv and test-hard.csv")
    p.add_argument("--n", type=int, default=300, help="puzzles of each test set")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    p.add_argument("--out", default="benchmarks/results/mi", type=Path)
    p.add_argument("--name", default="sudoku_failures")
    p.add_argument("--culprits", nargs="*", default=["entropy budget"], choices=list(FAMILIES), metavar="FAMILY",
                   help="families whose culprit pairs are ranked by the MI head and by exact MI "
                        "(costs ~50 passes a failed puzzle)")
    p.add_argument("--families", nargs="+", default=list(FAMILIES), choices=list(FAMILIES), metavar="FAMILY",
                   help=f"families to measure (default: all: {'; '.join(FAMILIES)})")
    args = p.parse_args(argv)
    if unknown := [f for f in args.culprits if f not in args.families]:
        p.error(f"--culprits {', '.join(unknown)}: not among --families")

    torch.set_num_threads(args.threads)
    start = time.time()
    head_dir = args.head or args.model
    model = load_model(args.model, task="sudoku")
    head = load_head(head_dir).to(model.device) if args.culprits else None
    task = SudokuTask()
    peers = task.related_pairs()  # (81, 81)
    rows, culprit_rows = [], []
    for set_name in SETS:
        examples = standard_set(args.data_dir, set_name, args.n)
        tokens, targets = task.encode(examples), task.targets(examples)  # (N, 81) each
        for family in args.families:
            for spec in FAMILIES[family]:
                policy = build_policy(spec, model, head_dir)
                result = decode_all(model, tokens, policy).result
                failures = failure_causes(model, result, targets, peers)
                rows.append(row(set_name, family, policy, result, failures.causes))
                print(json.dumps(rows[-1]), flush=True)
                if family in args.culprits:
                    culprit_rows.append(culprit_row(rows[-1], culprit_ranks(model, head, failures)))
                    print(json.dumps(culprit_rows[-1]), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    out = {"model": shown_path(args.model), "head": shown_path(head_dir), "n": args.n, "threads": args.threads,
           "families": args.families, "minutes": round((time.time() - start) / 60, 1), "rows": rows, "culprits": culprit_rows}
    atomic_write(args.out / f"{args.name}.json", lambda t: Path(t).write_text(json.dumps(out, indent=1) + "\n"))
    md = markdown_table(rows, [c for c in rows[0] if c != "n"])
    if culprit_rows:
        md += "\n\nCulprit pairs (a wrong cell and the right step-mate that alone fixes it) ranked among their state's pairs:\n\n"
        md += markdown_table(culprit_rows, list(culprit_rows[0]))
    atomic_write(args.out / f"{args.name}.md", lambda t: Path(t).write_text(md + "\n"))
    shares = [{"set": r["set"], "policy": f"{r['family']}, {kind}", "mean_nfe": r["mean_nfe"], "share %": r[f"{kind} %"]}
              for r in rows if r["family"] in ("entropy budget", "MI head λ=2", *[f for f in args.families if "fixed" in f])
              for kind in ("dependency", "own")]
    plot_pareto(shares, args.out / f"{args.name}.png", "Sudoku failures", y="share %", ylabel="% of puzzles failed, by cause")
    print(md)


if __name__ == "__main__":
    main()
