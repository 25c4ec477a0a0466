"""``unmask sudoku generate|eval|demo`` and ``unmask train sudoku``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from unmask.commands.common import DEFAULT_SUDOKU_MODEL, add_dataclass_args, from_args, policy_for, positive_int
from unmask.errors import UnmaskError


def _generate(args: argparse.Namespace) -> None:
    from unmask.tasks.sudoku.data import write_puzzles
    from unmask.tasks.sudoku.generate import STANDARD_SETS, generate

    if args.standard:
        out = Path(args.out or "data/sudoku")
        for name, (preset, n, seed) in STANDARD_SETS.items():
            write_puzzles(out / f"{name}.csv", generate(preset, n, seed, args.workers))
        return
    if not args.out:
        raise UnmaskError("--out FILE is required unless --standard is given")
    write_puzzles(args.out, generate(args.kind, args.n, args.seed, args.workers))


def _eval(args: argparse.Namespace) -> None:
    from unmask.decode import TokenRule, policy_spec
    from unmask.model import load_model
    from unmask.tasks.sudoku.data import read_puzzles
    from unmask.tasks.sudoku.task import evaluate

    rule = TokenRule(args.temperature)
    data = read_puzzles(args.puzzles)
    model = load_model(args.model, task="sudoku")
    policy = policy_for(args.policy, model, args.model)
    m = evaluate(model, data, policy, rule, args.batch_size, args.seed, progress=not args.json)
    m = {"policy": policy_spec(policy), "puzzles": str(args.puzzles), **m}
    if hasattr(policy, "counter"):
        m["probe_passes_per_puzzle"] = policy.counter.passes / m["n"]
    if args.json:
        print(json.dumps(m))
    else:
        print(f"{m['policy']}: accuracy {m['accuracy']:.1%} on {m['n']} puzzles, mean NFE {m['mean_nfe']:.2f}, "
              f"{m['puzzles_per_s']:.1f} puzzles/s")


def _demo(args: argparse.Namespace) -> None:
    from unmask.eval import markdown_table
    from unmask.model import load_model
    from unmask.tasks.sudoku.generate import generate
    from unmask.tasks.sudoku.task import DEMO_POLICIES, compare

    model = load_model(args.model, task="sudoku")
    print(f"model: {args.model} ({model.num_parameters() / 1e6:.2f}M parameters)", file=sys.stderr)
    sets = {f"{kind} ({args.n})": generate(kind, args.n, args.seed) for kind in ("kaggle", "hard")}
    policies = [policy_for(spec, model, args.model) for spec in args.policies or DEMO_POLICIES]
    rows = compare(model, sets, policies)
    for r in rows:
        r["accuracy %"] = 100 * r["accuracy"]
    print(markdown_table(rows, ["set", "policy", "mean_nfe", "accuracy %", "puzzles_per_s"]))


def _train(args: argparse.Namespace) -> None:
    from unmask.model import ModelConfig
    from unmask.tasks.sudoku.data import SudokuSet, read_puzzles
    from unmask.tasks.sudoku.task import SudokuTask, default_model_config
    from unmask.train import TrainConfig, train

    cfg = from_args(TrainConfig, args)
    model_cfg = from_args(ModelConfig, args, default_model_config())
    train_set = read_puzzles(args.data)
    if train_set.solutions is None:
        raise UnmaskError(f"{args.data}: training needs a solutions column")
    val = {}
    for path in args.val or []:
        data = read_puzzles(path)
        sol = None if data.solutions is None else data.solutions[: args.val_n]
        val[Path(path).stem] = SudokuSet(data.quizzes[: args.val_n], sol)
    train(SudokuTask(train_set.solutions, val), cfg, args.out, model_cfg, resume=args.resume)


def add_parser(sub) -> None:
    """``unmask sudoku ...``."""
    from unmask.tasks.sudoku.generate import PRESETS

    sudoku = sub.add_parser("sudoku", help="Sudoku puzzles: generate sets, evaluate decoding policies")
    ss = sudoku.add_subparsers(dest="action", required=True)
    g = ss.add_parser("generate", help="draw unique-solution puzzles (CSV quizzes,solutions)")
    g.add_argument("--kind", choices=sorted(PRESETS), default="kaggle", help="kaggle: 30-36 givens; hard: minimal, not solvable by singles")
    g.add_argument("--n", type=positive_int, default=1000, help="number of puzzles")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--out", help="CSV file (with --standard: a folder, default data/sudoku)")
    g.add_argument("--standard", action="store_true", help="write the project's train/val/test sets")
    g.add_argument("--workers", type=positive_int, default=1, help="processes (the output does not depend on it)")
    g.set_defaults(run=_generate)

    e = ss.add_parser("eval", help="decode puzzles with a policy; accuracy, mean NFE, puzzles/s")
    e.add_argument("--puzzles", required=True, help="CSV with quizzes[,solutions]")
    e.add_argument("--policy", default="sequential", help="SPEC: name or name:key=value,... e.g. topk:k=7, eb:gamma=0.6")
    e.add_argument("--model", default=str(DEFAULT_SUDOKU_MODEL), help="model directory (default: the shipped model)")
    e.add_argument("--temperature", type=float, default=0.0, help="0 = argmax tokens, > 0 = sample")
    e.add_argument("--batch-size", type=positive_int, default=250)
    e.add_argument("--seed", type=int, default=0)
    e.add_argument("--json", action="store_true", help="print one JSON object")
    e.set_defaults(run=_eval)

    dm = ss.add_parser("demo", help="fresh puzzles, every baseline policy, one table (forward passes vs accuracy)")
    dm.add_argument("--n", type=positive_int, default=100, help="puzzles of each kind (kaggle-density and hard)")
    dm.add_argument("--seed", type=int, default=2026, help="seed of the fresh puzzles")
    dm.add_argument("--model", default=str(DEFAULT_SUDOKU_MODEL), help="model directory (default: the shipped model)")
    dm.add_argument("--policies", nargs="+", metavar="SPEC", help="policy specs (default: one of each baseline)")
    dm.set_defaults(run=_demo)


def add_train_parser(tsub) -> None:
    """``unmask train sudoku ...``."""
    from unmask.model import ModelConfig
    from unmask.train import TrainConfig

    t = tsub.add_parser("sudoku", help="train the Sudoku MDM on solution grids with symmetry augmentation")
    t.add_argument("--data", required=True, help="training CSV (solutions are used)")
    t.add_argument("--val", action="append", help="validation CSV, scored by sequential decoding (repeatable)")
    t.add_argument("--val-n", type=positive_int, default=100, help="puzzles of each validation set to score")
    t.add_argument("--out", required=True, help="run directory (checkpoint.pt, log.jsonl, model/)")
    t.add_argument("--resume", action="store_true", help="continue the run in --out")
    add_dataclass_args(t, TrainConfig)
    add_dataclass_args(t, ModelConfig, ["d_model", "n_layers", "n_heads", "d_ff", "dropout"])
    t.set_defaults(run=_train)
