"""``unmask mi data|train|map --task T``: exact-MI training data, the estimator head, MI maps."""

from __future__ import annotations

import argparse
import json
import sys
from functools import partial
from pathlib import Path

import torch

from unmask.commands.common import HelpFormatter, add_dataclass_args, from_args, input_paths, integer, positive_int
from unmask.errors import UnmaskError
from unmask.io import check_output_file


def _task_and_model(args: argparse.Namespace, hf: bool = False):
    """The task of ``--task`` laid out for the model of ``--model`` (default: the task's shipped one),
    and the folder the model came from. ``hf``: also take a pretrained model (``hf:DIR``, ``esmc:FILE``)
    where the task maps one onto its ids (proteins, antibodies)."""
    from unmask.adapters import is_pretrained, load_denoiser
    from unmask.tasks import HF_ADAPTERS, get_task, task_denoiser

    default = get_task(args.task).default_model
    if args.model is None and default is None:
        raise UnmaskError(f"--task {args.task} has no shipped model: give --model (e.g. hf:DIR)")
    args.model = args.model or str(default)
    if is_pretrained(args.model) and not (hf and args.task in HF_ADAPTERS):
        where = f"mi map --task {' or '.join(HF_ADAPTERS)}" if hf else "mi map"
        raise UnmaskError(f"--model {args.model}: this command takes an unmask model directory (only {where} takes a "
                          "pretrained hf: or esmc: model)")
    loaded = load_denoiser(args.model, task=args.task)
    model = task_denoiser(args.task, loaded)
    return get_task(args.task, model.cfg), model, loaded.directory


def _data(args: argparse.Namespace) -> None:
    from unmask.mi.data import MIDataConfig, build_mi_data
    from unmask.model import WEIGHTS_FILE, load_model
    from unmask.policies import needed_resources, parse_policy
    from unmask.runs import file_digest

    # Checked with every family registered (a spec never depends on what was imported before): the
    # trajectories decode with the bare policy, so one that needs a model's resources is refused here.
    if args.policy is not None and needed_resources(parse_policy(args.policy)):
        raise UnmaskError(f"--policy {args.policy}: the trajectories are decoded without an MI head, order policy or probes; "
                          "choose a policy that needs none (e.g. sequential, topk, eb, mi:lam=0)")
    cfg = from_args(MIDataConfig, args)
    task, _, _ = _task_and_model(args)  # fail early, with one clear line, on a bad model directory
    prompts = task.encode(task.read(args.examples))
    weights = file_digest(Path(args.model) / WEIGHTS_FILE)
    source = {"model_sha256": weights, "puzzles": str(args.examples)}
    built = build_mi_data(partial(load_model, args.model), prompts, cfg, args.out, args.workers, source=source)
    print(f"{built} shards built, {cfg.shards - built} already there: {args.out}", file=sys.stderr)


def _train(args: argparse.Namespace) -> None:
    from unmask.artifacts import MI_HEAD, copy_model
    from unmask.eval import shown_path
    from unmask.mi.data import load_mi_datasets
    from unmask.mi.estimator import save_head
    from unmask.mi.fit import HeadTrainConfig, fit_head, head_cost
    from unmask.model import WEIGHTS_FILE
    from unmask.runs import file_digest

    cfg = from_args(HeadTrainConfig, args)
    _, model, directory = _task_and_model(args)
    # several builds (e.g. sequential + parallel states) as one, all of this model's states
    data = load_mi_datasets(args.data, model_sha256=file_digest(Path(directory) / WEIGHTS_FILE))
    torch.set_num_threads(2)
    head, metrics = fit_head(model, data, cfg)
    metrics |= head_cost(model, head, data["tokens"][:250].long())
    metrics["denoiser_parameters"] = model.num_parameters()
    out = Path(args.out or Path("runs") / f"mi-head-{args.task}")  # a default never writes a shipped model's folder
    copy_model(args.model, out)
    # (paths as shown_path records them: relative inside the working directory, no machine prefix)
    save_head(head, out, {"metrics": metrics, "data": [shown_path(d) for d in args.data], "base_model": shown_path(args.model)})
    print(json.dumps(metrics, indent=1))
    print(f"saved {out / MI_HEAD.weights} beside a copy of the model: decode with --model {out} --policy mi", file=sys.stderr)


def _map(args: argparse.Namespace) -> None:
    from unmask.mi import exact_mi
    from unmask.mi.estimator import load_head, predicted_values
    from unmask.mi.maps import structure_score
    from unmask.plots import plot_mi_map

    if not 0 <= args.eps < 1:  # also refuses NaN
        raise UnmaskError(f"--eps must be in [0, 1), got {args.eps}")
    out = check_output_file(args.out, input_paths(args))
    task, model, directory = _task_and_model(args, hf=True)
    examples = task.read(args.examples)
    tokens = task.encode(examples)  # (N, L)
    if not 0 <= args.index < len(tokens):
        raise UnmaskError(f"--index {args.index} is out of range (the file has {len(tokens)} examples)")
    tokens = tokens[args.index : args.index + 1]  # (1, L)
    masked = tokens == model.mask_id
    if not masked.any():
        raise UnmaskError(f"example {args.index} has no masked position to map")
    position = int(masked[0].nonzero()[0]) if args.cell is None else task.parse_position(args.cell, tokens[0])
    pairs = masked[:, :, None] & masked[:, None, :] & ~torch.eye(tokens.shape[1], dtype=torch.bool)  # (1, L, L)
    maps, scores = {}, {}
    exact = args.exact or args.joint
    head = load_head(directory, required=not exact)
    if head is not None:
        with torch.no_grad():
            logits, hidden = model(tokens)
            maps["estimated"] = (head(hidden, predicted_values(logits, model.mask_id)) * pairs)[0]
    if exact or head is None:
        res = exact_mi(model, tokens, eps=args.eps)
        maps["exact"] = res.symmetric.float()[0] * pairs[0]
        if args.joint:  # the same probes' true MI (see unmask.mi.exact)
            maps["exact joint"] = res.symmetric_joint.float()[0] * pairs[0]
    related = task.related_pairs()
    if related is not None:
        scores = {name: structure_score(mi[None], pairs, related) for name, mi in maps.items()}
    plot_mi_map(task.board(tokens[0]), {k: v.numpy() for k, v in maps.items()}, position, out)
    print(json.dumps({"out": str(out), "structure": scores}))


def add_parser(sub) -> None:
    """``unmask mi ...``."""
    from unmask.mi.data import MIDataConfig
    from unmask.mi.fit import HeadTrainConfig
    from unmask.tasks import TASKS

    mi = sub.add_parser("mi",
                        help="pairwise mutual information: data, estimator head, maps (--task sudoku|maths|proteins|antibodies)")
    ms = mi.add_subparsers(dest="action", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--task", choices=list(TASKS), default="sudoku", help="the domain of the model and examples")
        p.add_argument("--model", help="base model directory (default: the task's shipped model)")

    d = ms.add_parser("data", help="states from decoding trajectories with their exact MI rows (sharded, resumable)",
                      formatter_class=HelpFormatter)
    common(d)
    d.add_argument("--examples", "--puzzles", "--problems", dest="examples", required=True,
                   help="the task's file of prompts the trajectories start from (Sudoku CSV, maths JSONL)")
    d.add_argument("--out", required=True, help="shard directory (finished shards are kept on a rerun)")
    d.add_argument("--workers", type=positive_int, default=1, help="processes (the shards do not depend on it)")
    add_dataclass_args(d, MIDataConfig)
    d.set_defaults(run=_data)

    t = ms.add_parser("train", help="fit the MI estimator head on frozen hidden states (MSE on masked pairs)",
                      formatter_class=HelpFormatter)
    common(t)
    t.add_argument("--data", required=True, action="append",
                   help="shard directory from `unmask mi data` (repeatable: e.g. sequential and parallel states)")
    t.add_argument("--out", help="folder for mi_head.* beside a copy of the base model (default: runs/mi-head-TASK; "
                   "give the model's own folder to save the head there)")
    add_dataclass_args(t, HeadTrainConfig)
    t.set_defaults(run=_train)

    m = ms.add_parser("map", help="PNG of the MI matrix and of one position's MI laid out as the task draws it",
                      formatter_class=HelpFormatter)
    common(m)
    m.add_argument("--examples", "--puzzle", "--problems", dest="examples", required=True,
                   help="the task's file (Sudoku: a CSV or one 81-character grid; maths: a JSONL)")
    m.add_argument("--index", type=integer, default=0, help="example number in the file")
    m.add_argument("--cell", help="the position: Sudoku ROW,COL (1..9); maths the answer character K (1..); "
                   "proteins and antibodies the residue number K; default: the first masked one")
    m.add_argument("--exact", action="store_true", help="also compute the exact MI (1 + N·|V| passes)")
    m.add_argument("--joint", action="store_true",
                   help="also the MI of each row's probe joint, a true MI from the same probes (implies --exact)")
    m.add_argument("--eps", type=float, default=1e-3, help="exact MI: skip values with P < eps")
    m.add_argument("--out", default="mi_map.png", help="PNG file")
    m.set_defaults(run=_map)
