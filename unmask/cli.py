"""Command line: ``unmask sudoku generate|eval``, ``unmask train sudoku``.

User errors (bad files, specs, puzzles) print one line ``unmask: error: ...`` and exit with code 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import typing
from pathlib import Path

from unmask.errors import UnmaskError

DEFAULT_SUDOKU_MODEL = Path(__file__).parent / "models" / "sudoku"  # the shipped model


def add_dataclass_args(parser: argparse.ArgumentParser, cls: type, only: list[str] | None = None) -> None:
    """One ``--flag`` per dataclass field (default None = keep the dataclass default)."""
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if only is not None and f.name not in only:
            continue
        flag = "--" + f.name.replace("_", "-")
        if hints[f.name] is bool:
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=None)
        else:
            parser.add_argument(flag, type=hints[f.name], default=None, metavar=f.name.upper())


def from_args(cls: type, args: argparse.Namespace, base=None):
    """Build ``cls`` from the flags that were given, over ``base`` (or the defaults)."""
    given = {f.name: getattr(args, f.name) for f in dataclasses.fields(cls) if getattr(args, f.name, None) is not None}
    return dataclasses.replace(base, **given) if base is not None else cls(**given)


def _sudoku_generate(args: argparse.Namespace) -> None:
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


def _sudoku_eval(args: argparse.Namespace) -> None:
    from unmask.decode import TokenRule, parse_policy, policy_spec
    from unmask.model import load_model
    from unmask.tasks.sudoku.data import read_puzzles
    from unmask.tasks.sudoku.task import evaluate

    policy = parse_policy(args.policy)
    rule = TokenRule(args.temperature)
    data = read_puzzles(args.puzzles)
    model = load_model(args.model, task="sudoku")
    m = evaluate(model, data, policy, rule, args.batch_size, args.seed, progress=not args.json)
    m = {"policy": policy_spec(policy), "puzzles": str(args.puzzles), **m}
    if args.json:
        print(json.dumps(m))
    else:
        print(f"{m['policy']}: accuracy {m['accuracy']:.1%} on {m['n']} puzzles, mean NFE {m['mean_nfe']:.2f}, "
              f"{m['puzzles_per_s']:.1f} puzzles/s")


def _sudoku_demo(args: argparse.Namespace) -> None:
    from unmask.eval import markdown_table
    from unmask.model import load_model
    from unmask.tasks.sudoku.generate import generate
    from unmask.tasks.sudoku.task import DEMO_POLICIES, compare

    model = load_model(args.model, task="sudoku")
    print(f"model: {args.model} ({model.num_parameters() / 1e6:.2f}M parameters)", file=sys.stderr)
    sets = {f"{kind} ({args.n})": generate(kind, args.n, args.seed) for kind in ("kaggle", "hard")}
    rows = compare(model, sets, args.policies or DEMO_POLICIES)
    for r in rows:
        r["accuracy %"] = 100 * r["accuracy"]
    print(markdown_table(rows, ["set", "policy", "mean_nfe", "accuracy %", "puzzles_per_s"]))


def _train_sudoku(args: argparse.Namespace) -> None:
    from unmask.model import ModelConfig
    from unmask.tasks.sudoku.data import read_puzzles
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
        val[Path(path).stem] = type(data)(data.quizzes[: args.val_n], None if data.solutions is None else data.solutions[: args.val_n])
    train(SudokuTask(train_set.solutions, val), cfg, args.out, model_cfg, resume=args.resume)


def build_parser() -> argparse.ArgumentParser:
    """The ``unmask`` argument parser."""
    from unmask.model import ModelConfig
    from unmask.tasks.sudoku.generate import PRESETS
    from unmask.train import TrainConfig

    p = argparse.ArgumentParser(prog="unmask", description="Parallel decoding of masked diffusion models.")
    sub = p.add_subparsers(dest="command", required=True)

    sudoku = sub.add_parser("sudoku", help="Sudoku puzzles: generate sets, evaluate decoding policies")
    ss = sudoku.add_subparsers(dest="action", required=True)
    g = ss.add_parser("generate", help="draw unique-solution puzzles (CSV quizzes,solutions)")
    g.add_argument("--kind", choices=sorted(PRESETS), default="kaggle", help="kaggle: 30-36 givens; hard: minimal, not solvable by singles")
    g.add_argument("--n", type=int, default=1000, help="number of puzzles")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--out", help="CSV file (with --standard: a folder, default data/sudoku)")
    g.add_argument("--standard", action="store_true", help="write the project's train/val/test sets")
    g.add_argument("--workers", type=int, default=1, help="processes (the output does not depend on it)")
    g.set_defaults(run=_sudoku_generate)

    e = ss.add_parser("eval", help="decode puzzles with a policy; accuracy, mean NFE, puzzles/s")
    e.add_argument("--puzzles", required=True, help="CSV with quizzes[,solutions]")
    e.add_argument("--policy", default="sequential", help="SPEC: name or name:key=value,... e.g. topk:k=7, eb:gamma=0.6")
    e.add_argument("--model", default=str(DEFAULT_SUDOKU_MODEL), help="model directory (default: the shipped model)")
    e.add_argument("--temperature", type=float, default=0.0, help="0 = argmax tokens, > 0 = sample")
    e.add_argument("--batch-size", type=int, default=250)
    e.add_argument("--seed", type=int, default=0)
    e.add_argument("--json", action="store_true", help="print one JSON object")
    e.set_defaults(run=_sudoku_eval)

    dm = ss.add_parser("demo", help="fresh puzzles, every baseline policy, one table (forward passes vs accuracy)")
    dm.add_argument("--n", type=int, default=100, help="puzzles of each kind (kaggle-density and hard)")
    dm.add_argument("--seed", type=int, default=2026, help="seed of the fresh puzzles")
    dm.add_argument("--model", default=str(DEFAULT_SUDOKU_MODEL), help="model directory (default: the shipped model)")
    dm.add_argument("--policies", nargs="+", metavar="SPEC", help="policy specs (default: one of each baseline)")
    dm.set_defaults(run=_sudoku_demo)

    t = sub.add_parser("train", help="train a masked diffusion model")
    ts = t.add_subparsers(dest="task", required=True)
    tsud = ts.add_parser("sudoku", help="train the Sudoku MDM on solution grids with symmetry augmentation")
    tsud.add_argument("--data", required=True, help="training CSV (solutions are used)")
    tsud.add_argument("--val", action="append", help="validation CSV, scored by sequential decoding (repeatable)")
    tsud.add_argument("--val-n", type=int, default=100, help="puzzles of each validation set to score")
    tsud.add_argument("--out", required=True, help="run directory (checkpoint.pt, log.jsonl, model/)")
    tsud.add_argument("--resume", action="store_true", help="continue the run in --out")
    add_dataclass_args(tsud, TrainConfig)
    add_dataclass_args(tsud, ModelConfig, ["d_model", "n_layers", "n_heads", "d_ff", "dropout"])
    tsud.set_defaults(run=_train_sudoku)
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``unmask`` command."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        args.run(args)
    except UnmaskError as e:
        print(f"unmask: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("unmask: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
