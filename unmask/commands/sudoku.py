"""``unmask sudoku generate|train|eval|demo``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from unmask.commands.common import (
    HelpFormatter,
    add_dataclass_args,
    add_demo_args,
    add_eval_args,
    add_init_arg,
    check_policy,
    from_args,
    input_paths,
    integer,
    json_record,
    load_demo_model,
    load_for_eval,
    policy_epilog,
    policy_from_args,
    positive_int,
    print_demo_table,
    seed_int,
    train_inputs,
    write_outputs,
)
from unmask.commands.order import add_train_order_parser
from unmask.errors import UnmaskError
from unmask.io import check_output_file, dumps_strict
from unmask.tasks.sudoku.task import DEFAULT_MODEL, DEMO_POLICIES

MODEL_FLAGS = ["d_model", "n_layers", "n_heads", "d_ff", "dropout"]  # the model shape `sudoku train` takes from flags
DEMO_N = 15  # puzzles of each kind in `sudoku demo`: every default policy on both sets in about DEMO_SECONDS
DEMO_SECONDS = 60  # wall time of `unmask sudoku demo` on 2 CPU cores (shipped 24-layer model; measured 2026-12)


def _generate(args: argparse.Namespace) -> None:
    from unmask.tasks.sudoku.data import write_puzzles
    from unmask.tasks.sudoku.generate import STANDARD_SETS, generate

    if args.standard:
        # Fixed kinds, sizes and seeds: a 5-puzzle train.csv would later be read as the standard set.
        given = [flag for flag in ("kind", "n", "seed") if getattr(args, flag) is not None]
        if given:
            raise UnmaskError(f"{', '.join('--' + f for f in given)}: the --standard sets have fixed kinds, sizes and seeds")
        out = Path(args.out or "data/sudoku")
        for name, (preset, n, seed) in STANDARD_SETS.items():
            write_puzzles(out / f"{name}.csv", generate(preset, n, seed, args.workers))
        return
    if not args.out:
        raise UnmaskError("--out FILE is required unless --standard is given")
    check_output_file(args.out)  # before minutes of generation
    write_puzzles(args.out, generate(args.kind or "kaggle", args.n or 1000, args.seed or 0, args.workers))


def _widen(args: argparse.Namespace) -> None:
    from unmask.tasks.sudoku.data import write_puzzles
    from unmask.tasks.sudoku.generate import widened_set
    from unmask.tasks.sudoku.task import SudokuTask

    if not 2 <= args.low <= args.high:
        raise UnmaskError(f"--low {args.low} --high {args.high}: need 2 <= --low <= --high (a widened puzzle has several "
                          "solutions)")
    check_output_file(args.out, input_paths(args))
    data = SudokuTask().read(args.puzzles)
    wide = widened_set(data[: args.n], args.low, args.high, args.seed)
    write_puzzles(args.out, wide.puzzles)
    counts = [len(s) for s in wide.solutions]
    print(f"{len(wide)} of {min(args.n, len(data))} puzzles widened to {min(counts)}-{max(counts)} solutions "
          f"(mean {sum(counts) / len(counts):.1f}): {args.out}", file=sys.stderr)


def _eval(args: argparse.Namespace) -> None:
    from unmask.decode import TokenRule, policy_spec
    from unmask.dist import is_main
    from unmask.eval import evaluate
    from unmask.tasks.sudoku.task import SudokuTask

    task = SudokuTask()
    rule = TokenRule(args.temperature)
    check_policy(args)
    data = task.read(args.puzzles)[: args.n]
    loaded = load_for_eval(args, task.name)
    task.check_model(loaded.denoiser)
    policy = policy_from_args(args, loaded)
    m = evaluate(task, loaded.denoiser, data, policy, rule, args.batch_size, args.seed, progress=not args.json,
                 show=len(data) if args.out else 0)
    m = {**json_record(args, policy_spec(policy), m), "puzzles": str(args.puzzles)}
    if not is_main():
        return
    write_outputs(args, m.pop("examples", []))
    if args.json:
        print(dumps_strict(m))
    else:
        extra = f", {m['extra_passes']:.0f} extra passes per puzzle" if "extra_passes" in m else ""
        print(f"{m['policy']}: accuracy {m['accuracy']:.1%} on {m['n']} puzzles, mean NFE {m['mean_nfe']:.2f}{extra}, "
              f"{m['examples_per_s']:.1f} puzzles/s")


def _demo(args: argparse.Namespace) -> None:
    import time

    from unmask.eval import compare
    from unmask.policies import build_policy
    from unmask.tasks.sudoku.generate import generate
    from unmask.tasks.sudoku.task import SudokuTask

    started = time.perf_counter()
    loaded = load_demo_model(args, "sudoku")
    model = loaded.denoiser
    print(f"model: {args.model} ({model.num_parameters() / 1e6:.2f}M parameters)", file=sys.stderr)
    sets = {f"{kind} ({args.n})": generate(kind, args.n, args.seed) for kind in ("kaggle", "hard")}
    policies = [build_policy(spec, model, loaded.directory) for spec in args.policies or DEMO_POLICIES]
    print_demo_table(compare(SudokuTask(), model, sets, policies), started)


def _train(args: argparse.Namespace) -> None:
    from unmask.runs import file_digest, read_checkpoint
    from unmask.tasks.sudoku.data import SudokuSet, read_puzzles
    from unmask.tasks.sudoku.task import PUZZLE_PROB, SudokuTraining, default_model_config
    from unmask.train import TrainConfig, train

    cfg = from_args(TrainConfig, args)
    if args.puzzle_prob is not None and not args.puzzles:
        raise UnmaskError("--puzzle-prob needs --puzzles CSV")
    train_set = read_puzzles(args.data)
    model_cfg, source, init = train_inputs(args, MODEL_FLAGS, default_model_config)
    if train_set.solutions is None:
        raise UnmaskError(f"{args.data}: training needs a solutions column")
    val = {}
    for path in args.val or []:
        data = read_puzzles(path)
        sol = None if data.solutions is None else data.solutions[: args.val_n]
        val[Path(path).stem] = SudokuSet(data.quizzes[: args.val_n], sol)
    puzzles = tuple(_training_puzzles(path, val) for path in args.puzzles or [])
    puzzle_prob = (PUZZLE_PROB if args.puzzle_prob is None else args.puzzle_prob) if puzzles else 0.0
    if puzzles and int(puzzle_prob * cfg.batch_size + 0.5) == 0:
        raise UnmaskError(f"--puzzle-prob {puzzle_prob} of --batch-size {cfg.batch_size} is no puzzle row; raise either")
    if puzzles:
        source["puzzles_sha256"] = [file_digest(path) for path in args.puzzles]
    source["puzzle_prob"] = puzzle_prob  # a resumed run keeps its data mix
    if args.resume and read_checkpoint(args.out).get("source", {}).get("puzzle_prob", 0.0) != puzzle_prob:
        raise UnmaskError(f"{args.out}: --resume with another data mix (--puzzles/--puzzle-prob) than the run started "
                          "with; start a new run from its model with --init instead")  # runs from before puzzles had none
    task = SudokuTraining(train_set.solutions, val, puzzles, puzzle_prob)
    train(task, cfg, args.out, model_cfg, resume=args.resume, source=source, init=init)


def _training_puzzles(path: str, val: dict):
    """``--puzzles`` file: solutions present, every puzzle with a blank, none of the validation puzzles."""
    from unmask.tasks.sudoku.data import read_puzzles

    data = read_puzzles(path)
    if data.solutions is None:
        raise UnmaskError(f"{path}: training puzzles need a solutions column")
    full = (data.quizzes > 0).all(1)
    if full.any():
        raise UnmaskError(f"{path}: puzzle {int(full.argmax()) + 1} has no blank cell to train on")
    seen = {q.tobytes() for q in data.quizzes}
    for name, v in val.items():
        shared = sum(q.tobytes() in seen for q in v.quizzes)
        if shared:
            raise UnmaskError(f"{path}: {shared} of its puzzles are in the validation set {name}; validate on unseen ones")
    return data


def add_parser(sub) -> None:
    """``unmask sudoku ...``."""
    from unmask.tasks.sudoku.generate import PRESETS

    sudoku = sub.add_parser("sudoku", help="Sudoku puzzles: generate sets, train, evaluate decoding policies, demo")
    ss = sudoku.add_subparsers(dest="action", required=True, metavar="{generate,widen,train,train-order,eval,demo}")
    g = ss.add_parser("generate", help="draw unique-solution puzzles (CSV quizzes,solutions)", formatter_class=HelpFormatter)
    # (defaults None, so that one given with --standard is told apart and refused)
    g.add_argument("--kind", choices=sorted(PRESETS),
                   help="kaggle: 30-36 givens; hard: minimal, not solvable by singles (default: kaggle)")
    g.add_argument("--n", type=positive_int, help="number of puzzles (default: 1000)")
    g.add_argument("--seed", type=seed_int, help="puzzle k is drawn from (SEED, k): a smaller --n is a prefix (default: 0)")
    g.add_argument("--out", help="CSV file (with --standard: a folder, default data/sudoku)")
    g.add_argument("--standard", action="store_true",
                   help="write the project's train/val/test sets (fixed kinds, sizes and seeds: not with --kind, --n, --seed)")
    g.add_argument("--workers", type=positive_int, default=1, help="processes (the output does not depend on it)")
    g.set_defaults(run=_generate)

    w = ss.add_parser("widen", help="puzzles with several solutions: givens blanked until each has --low..--high (CSV quizzes)",
                      formatter_class=HelpFormatter)
    w.add_argument("--puzzles", required=True, help="CSV of puzzles to widen (their first --n)")
    w.add_argument("--n", type=positive_int, default=1000, help="number of puzzles")
    # (plain integers: one check, `2 <= --low <= --high`, says what is wrong with either)
    w.add_argument("--low", type=integer, default=2, help="fewest solutions of a widened puzzle (>= 2)")
    w.add_argument("--high", type=integer, default=64, help="most solutions of a widened puzzle (>= --low)")
    w.add_argument("--seed", type=seed_int, default=0, help="seed of the order in which givens are blanked")
    w.add_argument("--out", required=True, help="CSV file (quizzes only: a decode is scored as a valid grid)")
    w.set_defaults(run=_widen)

    add_train_parser(ss, "train")
    add_train_order_parser(ss, "sudoku", DEFAULT_MODEL, "CSV of puzzles with solutions")

    e = ss.add_parser("eval", help="decode puzzles with a policy; accuracy, mean NFE, puzzles/s",
                      formatter_class=HelpFormatter, epilog=policy_epilog())
    e.add_argument("--puzzles", required=True, help="CSV with quizzes[,solutions]")
    e.add_argument("--n", type=positive_int, help="only the first N puzzles (default: all)")
    add_eval_args(e, DEFAULT_MODEL, batch_size=250)
    e.set_defaults(run=_eval)

    dm = ss.add_parser("demo", help=f"fresh puzzles, every baseline policy, one table (forward passes vs accuracy; about "
                       f"{DEMO_SECONDS} s on 2 CPU cores)", formatter_class=HelpFormatter, epilog=policy_epilog(),
                       description=f"Decode {DEMO_N} fresh Kaggle-density and {DEMO_N} fresh hard puzzles with every default "
                       f"policy:\nabout {DEMO_SECONDS} seconds on 2 CPU cores with the shipped model. --n widens the sets (the "
                       "time\ngrows about in proportion to --n).")
    dm.add_argument("--n", type=positive_int, default=DEMO_N, help=f"puzzles of each kind (kaggle-density and hard); the default "
                    f"takes about {DEMO_SECONDS} s on 2 CPU cores, more widens the table's sample")
    dm.add_argument("--seed", type=seed_int, default=2026, help="seed of the fresh puzzles")
    add_demo_args(dm, DEFAULT_MODEL, " ".join(DEMO_POLICIES))
    dm.set_defaults(run=_demo)


def add_train_parser(sub, name: str = "sudoku") -> None:
    """``unmask sudoku train ...`` (and the old spelling ``unmask train sudoku``)."""
    from unmask.model import ModelConfig
    from unmask.train import TrainConfig

    t = sub.add_parser(name, help="train the Sudoku MDM on solution grids with symmetry augmentation",
                       formatter_class=HelpFormatter)
    t.add_argument("--data", required=True, help="training CSV (solutions are used)")
    t.add_argument("--val", action="append", help="validation CSV, scored by sequential decoding (repeatable)")
    t.add_argument("--val-n", type=positive_int, default=100, help="puzzles of each validation set to score")
    t.add_argument("--out", required=True, help="run directory (checkpoint.pt, log.jsonl, model/)")
    t.add_argument("--resume", action="store_true", help="continue the run in --out")
    t.add_argument("--puzzles", metavar="CSV", action="append",
                   help="training puzzles with solutions (e.g. `generate --kind hard`; repeatable, the sets share evenly): "
                   "part of each batch keeps their givens visible and masks only their blanks")
    t.add_argument("--puzzle-prob", type=float, metavar="P",
                   help="share of each batch drawn from --puzzles (default 0.5); fixed for a run, as its data mix")
    add_init_arg(t)
    add_dataclass_args(t, TrainConfig)
    add_dataclass_args(t, ModelConfig, MODEL_FLAGS)
    t.set_defaults(run=_train)
