"""What the exact-MI oracles spend now that they probe a row only when their scan needs it.

    python benchmarks/mi/oracle_probes.py --model unmask/models/sudoku --n 20 --out benchmarks/results/mi
    python benchmarks/mi/oracle_probes.py --specs "exact:gamma=1,lam=2" --n 5 --check 2    # one rule, a quick look

The exact rules (``exact`` with any charge, ``exact_prefix``) scan the masked cells in entropy
order; a cell whose own entropy does not fit the budget left is never taken, whatever its charge (every
charge is ≥ 0), so its row is never read. Since 2026-12-06 they probe a row (one pass per value above
ε) only when the scan reaches a cell that fits, and the taken cells' rows with it
(:func:`unmask.mi.policies.mi_greedy`); before, every masked row was probed at every step. The
choices are the same (tests/mi/test_mi_policies.py, and here: the first ``--check`` puzzles of each
set decoded again with every row probed, tokens and reveal steps compared).

For each rule and set, per puzzle: model passes (NFE), probe passes now, what probing every masked
row at the same states would have spent (counted from the same states' P(X | C); no pass run), and
1 + N·|V| at each step (N masked cells, |V| values), with the savings. ``OUT/oracle_probes.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from unittest import mock

import torch
from tqdm import tqdm

import unmask.mi.policies as mi_policies
from unmask.decode import decode
from unmask.decode.state import DecodeState
from unmask.errors import UnmaskError
from unmask.eval import markdown_table, shown_path
from unmask.mi.exact import RowProbes, probed_values
from unmask.model import load_model
from unmask.policies import build_policy, policy_spec
from unmask.tasks.sudoku.generate import standard_set
from unmask.tasks.sudoku.task import DEFAULT_MODEL, SudokuTask

SETS = ("test-kaggle", "test-hard")
SPECS = ["exact:gamma=0.3,lam=2", "exact:gamma=1,lam=2", "exact:gamma=3,lam=2",
         # the frontier's oracles (sudoku_frontier.ORACLE)
         "exact_prefix:gamma=1,lam=2,charge=mi", "exact:gamma=1,lam=2,charge=influence",
         "exact:gamma=1,lam=2,eps=0.0003", "exact_prefix:gamma=1,lam=2,charge=mi,eps=0.0003"]  # at ≤ 10⁻³ nats (exact_mi_scaling)
COLUMNS = ["set", "policy", "puzzles", "accuracy %", "mean_nfe", "probe_passes", "every_row_passes", "plain_passes",
           "saving_vs_every_row_x", "saving_vs_plain_x", "same_choices"]


@dataclass
class Counted:
    """An exact rule, counting beside it what probing every masked row (at ε) and 1 + N·|V| would
    spend at each state it sees."""

    inner: object  # the exact rule
    n: int  # sequences decoded
    values: int  # |V|: the values a cell can take
    every_row: torch.Tensor = field(init=False)  # (n,) passes if every masked row were probed
    plain: torch.Tensor = field(init=False)  # (n,) 1 + N·|V| at each step

    def __post_init__(self) -> None:
        self.every_row = torch.zeros(self.n, dtype=torch.long)
        self.plain = torch.zeros(self.n, dtype=torch.long)

    def select(self, state: DecodeState):
        p = state.probs  # (R, L, V)
        values = (probed_values(p, self.inner.eps) & state.masked[..., None]).sum((1, 2))  # (R,) as exact_mi probes them
        self.every_row.index_add_(0, state.rows.cpu(), 1 + values.cpu())
        self.plain.index_add_(0, state.rows.cpu(), 1 + state.masked.sum(1).cpu() * self.values)
        return self.inner.select(state)


class EveryRow(RowProbes):
    """The probes as the exact rules ran them before: every masked row at once, whatever the scan asks for."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.probe(self.masked)


def measure(model, policy, puzzles, check: int) -> dict:
    """One rule on one set's puzzles: its passes, the two counts beside them, and the choices check."""
    task = SudokuTask()
    tokens = task.encode(puzzles)
    counted = Counted(policy, len(tokens), model.cfg.vocab_size)
    res = decode(model, tokens, counted)
    solved = task.score(res.tokens, puzzles).double()
    same = None
    if check:
        with mock.patch.object(mi_policies, "RowProbes", EveryRow):
            ref = decode(model, tokens[:check], policy)
        same = bool(torch.equal(ref.tokens, res.tokens[:check]) and torch.equal(ref.reveal_step, res.reveal_step[:check]))
    probes, every, plain = (x.double().sum() for x in (res.extra_passes, counted.every_row, counted.plain))
    return {"puzzles": len(tokens), "accuracy %": round(100 * float(solved.mean()), 1),
            "mean_nfe": float(res.nfe.double().mean()), "probe_passes": float(probes) / len(tokens),
            "every_row_passes": float(every) / len(tokens), "plain_passes": float(plain) / len(tokens),
            "saving_vs_every_row_x": float(every / probes), "saving_vs_plain_x": float(plain / probes), "same_choices": same}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=str(DEFAULT_MODEL))
    p.add_argument("--data-dir", default="data/sudoku", type=Path)
    p.add_argument("--n", type=int, default=20, help="puzzles of each test set")
    p.add_argument("--specs", nargs="+", default=SPECS, help="exact rules to measure")
    p.add_argument("--check", type=int, default=2, help="puzzles of each set decoded again with every row probed (0: none)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", default="benchmarks/results/mi", type=Path)
    args = p.parse_args(argv)
    if args.n < 1 or not 0 <= args.check <= args.n or args.threads < 1:
        p.error(f"--n must be >= 1, --check in [0, --n] and --threads >= 1, got {args.n}, {args.check}, {args.threads}")
    torch.set_num_threads(args.threads)
    start = time.time()
    model = load_model(args.model, task="sudoku")
    try:
        policies = [build_policy(s, model, args.model) for s in args.specs]
    except UnmaskError as e:  # an unknown or malformed spec: one line
        p.error(f"--specs: {e}")
    if not all(hasattr(pol, "denoiser") and hasattr(pol, "gamma") for pol in policies):
        p.error("--specs: only the exact budget rules probe as their scan reads (exact, exact_prefix)")
    rows = []
    for split in SETS:
        puzzles = standard_set(args.data_dir, split, args.n)  # made if missing
        for policy in tqdm(policies, desc=split, unit="rule"):
            rows.append({"set": split, "policy": policy_spec(policy), **measure(model, policy, puzzles, args.check)})
    args.out.mkdir(parents=True, exist_ok=True)
    result = {"model": shown_path(args.model), "n": args.n, "check": args.check, "threads": args.threads, "rows": rows,
              "minutes": round((time.time() - start) / 60, 1)}
    tmp = args.out / "oracle_probes.json.tmp"
    tmp.write_text(json.dumps(result, indent=1) + "\n")
    tmp.replace(args.out / "oracle_probes.json")
    md = markdown_table(rows, COLUMNS)
    (args.out / "oracle_probes.md").write_text(md + "\n")
    print(md)


if __name__ == "__main__":
    main()
