"""``unmask mi data|train|map``: exact-MI training data, the estimator head, MI maps."""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from functools import partial
from pathlib import Path

import numpy as np
import torch

from unmask.commands.common import DEFAULT_SUDOKU_MODEL, add_dataclass_args, from_args, positive_int
from unmask.errors import UnmaskError


def _data(args: argparse.Namespace) -> None:
    from unmask.mi.data import MIDataConfig, build_mi_data
    from unmask.model import WEIGHTS_FILE, load_model
    from unmask.tasks.sudoku.data import read_puzzles, to_tokens

    cfg = from_args(MIDataConfig, args)
    load_model(args.model)  # fail early, with one clear line, on a bad model directory
    prompts = to_tokens(read_puzzles(args.puzzles).quizzes)
    weights = hashlib.sha256((Path(args.model) / WEIGHTS_FILE).read_bytes()).hexdigest()[:16]
    source = {"model_sha256": weights, "puzzles": str(args.puzzles)}
    built = build_mi_data(partial(load_model, args.model), prompts, cfg, args.out, args.workers, source=source)
    print(f"{built} shards built, {cfg.shards - built} already there: {args.out}", file=sys.stderr)


def _train(args: argparse.Namespace) -> None:
    from unmask.mi.data import load_mi_data
    from unmask.mi.estimator import save_head
    from unmask.mi.fit import HeadTrainConfig, fit_head, head_cost
    from unmask.model import load_model

    cfg = from_args(HeadTrainConfig, args)
    model = load_model(args.model)
    data = load_mi_data(args.data)
    torch.set_num_threads(2)
    head, metrics = fit_head(model, data, cfg)
    metrics |= head_cost(model, head, torch.full((250, model.cfg.seq_len), model.mask_id))
    metrics["denoiser_parameters"] = model.num_parameters()
    save_head(head, args.out or args.model, {"metrics": metrics, "data": str(args.data)})
    print(json.dumps(metrics, indent=1))


def _puzzle(args: argparse.Namespace) -> np.ndarray:
    from unmask.tasks.sudoku.data import givens_clash, parse_grid, read_puzzles

    if len(args.puzzle.strip()) == 81 and not args.puzzle.endswith(".csv"):
        grid = parse_grid(args.puzzle)
        if givens_clash(grid[None])[0]:
            raise UnmaskError("the puzzle's givens repeat a digit in a row, column or box")
        return grid
    data = read_puzzles(args.puzzle)
    if not 0 <= args.index < len(data):
        raise UnmaskError(f"--index {args.index} is out of range (the file has {len(data)} puzzles)")
    return data.quizzes[args.index]


def _map(args: argparse.Namespace) -> None:
    from unmask.mi import exact_mi
    from unmask.mi.estimator import load_head
    from unmask.mi.maps import structure_score, sudoku_peers
    from unmask.model import load_model
    from unmask.plots import plot_mi_map
    from unmask.tasks.sudoku.data import to_tokens

    model = load_model(args.model, task="sudoku")
    grid = _puzzle(args)
    try:
        r, c = (int(x) - 1 for x in args.cell.split(","))
    except ValueError:
        raise UnmaskError(f"--cell {args.cell!r}: expected ROW,COLUMN such as 3,7") from None
    if not (0 <= r < 9 and 0 <= c < 9):
        raise UnmaskError(f"--cell {args.cell}: row and column are 1..9")
    cell = r * 9 + c
    if grid[cell]:
        raise UnmaskError(f"--cell {args.cell} is a given; choose a blank cell")
    tokens = to_tokens(grid[None])
    maps, scores = {}, {}
    pairs = (tokens == model.mask_id)[:, :, None] & (tokens == model.mask_id)[:, None, :] & ~torch.eye(81, dtype=torch.bool)
    head = load_head(args.model, required=not args.exact)
    if head is not None:
        with torch.no_grad():
            maps["estimated"] = (head(model(tokens)[1]) * pairs)[0]
    if args.exact or head is None:
        maps["exact"] = exact_mi(model, tokens, eps=args.eps).symmetric.float()[0] * pairs[0]
    for name, mi in maps.items():
        scores[name] = structure_score(mi[None], pairs, sudoku_peers())
    plot_mi_map(grid, {k: v.numpy() for k, v in maps.items()}, cell, args.out)
    print(json.dumps({"out": str(args.out), "structure": scores}))


def add_parser(sub) -> None:
    """``unmask mi ...``."""
    from unmask.mi.data import MIDataConfig
    from unmask.mi.fit import HeadTrainConfig

    mi = sub.add_parser("mi", help="pairwise mutual information: data, estimator head, maps")
    ms = mi.add_subparsers(dest="action", required=True)
    d = ms.add_parser("data", help="states from decoding trajectories with their exact MI rows (sharded, resumable)")
    d.add_argument("--model", default=str(DEFAULT_SUDOKU_MODEL), help="base model directory")
    d.add_argument("--puzzles", required=True, help="CSV of prompts the trajectories start from")
    d.add_argument("--out", required=True, help="shard directory (finished shards are kept on a rerun)")
    d.add_argument("--workers", type=positive_int, default=1, help="processes (the shards do not depend on it)")
    add_dataclass_args(d, MIDataConfig)
    d.set_defaults(run=_data)

    t = ms.add_parser("train", help="fit the MI estimator head on frozen hidden states (MSE on masked pairs)")
    t.add_argument("--model", default=str(DEFAULT_SUDOKU_MODEL), help="base model directory")
    t.add_argument("--data", required=True, help="shard directory from `unmask mi data`")
    t.add_argument("--out", help="where to save mi_head.* (default: beside the base model)")
    add_dataclass_args(t, HeadTrainConfig)
    t.set_defaults(run=_train)

    m = ms.add_parser("map", help="PNG of the MI matrix and of one cell's MI on the board")
    m.add_argument("--model", default=str(DEFAULT_SUDOKU_MODEL), help="model directory (with its MI head)")
    m.add_argument("--puzzle", required=True, help="an 81-character grid, or a CSV file (see --index)")
    m.add_argument("--index", type=int, default=0, help="puzzle number in a CSV file")
    m.add_argument("--cell", default="1,1", help="row,column (1..9) of a blank cell")
    m.add_argument("--exact", action="store_true", help="also compute the exact MI (1 + N·9 passes)")
    m.add_argument("--eps", type=float, default=1e-3, help="exact MI: skip values with P < eps")
    m.add_argument("--out", default="mi_map.png", help="PNG file")
    m.set_defaults(run=_map)
