"""``unmask mi data|train|map --task T``: exact-MI training data, the estimator head, MI maps."""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path

import torch

from unmask.commands.common import (
    HelpFormatter,
    add_addon_args,
    add_dataclass_args,
    add_hf_args,
    add_seq_args,
    check_pretrained_task,
    from_args,
    input_paths,
    integer,
    load_for_eval,
    positive_int,
    task_and_model,
)
from unmask.errors import UnmaskError
from unmask.io import check_output_file, dumps_strict


def _loaded(args: argparse.Namespace):
    """The model of ``--model`` as loaded (an unmask model must be one of ``--task``, except for your own sequences)."""
    return load_for_eval(args, args.task)


def _load(args: argparse.Namespace):
    """The model as the task decodes it (picklable with ``functools.partial``: MI data workers each load their own copy)."""
    return task_and_model(args.task, _loaded(args), args)[1]


def _task_and_model(args: argparse.Namespace):
    """The task of ``--task`` laid out for the model of ``--model`` (default: the task's shipped one),
    the model as the task reads it, and the :class:`~unmask.adapters.Loaded` it came from. A pretrained
    model (``hf:DIR``, ``esmc:FILE``) is taken by the tasks that map its vocabulary onto their ids."""
    from unmask.tasks import get_task

    default = get_task(args.task).default_model
    if args.model is None and default is None:
        raise UnmaskError(f"--task {args.task} has no shipped model: give --model (e.g. hf:DIR)")
    args.model = args.model or str(default)
    check_pretrained_task(args.model, args.task)
    loaded = _loaded(args)
    task, model = task_and_model(args.task, loaded, args)
    return task, model, loaded


def _data(args: argparse.Namespace) -> None:
    from unmask.artifacts import model_digest
    from unmask.mi.data import MIDataConfig, build_mi_data, data_cost, passes_spent
    from unmask.policies import needed_resources, parse_policy

    # Checked with every family registered (a spec never depends on what was imported before): the
    # trajectories decode with the bare policy, so one that needs a model's resources is refused here.
    if args.policy is not None and needed_resources(parse_policy(args.policy)):
        raise UnmaskError(f"--policy {args.policy}: the trajectories are decoded without an MI head, order policy or probes; "
                          "choose a policy that needs none (e.g. sequential, topk, eb, mi:lam=0)")
    cfg = from_args(MIDataConfig, args)
    if Path(args.out).exists() and not Path(args.out).is_dir():  # before the model loads and the cost is said
        raise UnmaskError(f"{args.out}: exists and is not a folder")
    if getattr(args, "block", None):
        raise UnmaskError("--block: semi-autoregressive blocks are for decoding (unmask seq generate|eval), not here")
    task, model, loaded = _task_and_model(args)  # fail early, with one clear line, on a bad model
    prompts = task.encode(task.read(args.examples))
    print(data_cost(cfg, prompts, model), file=sys.stderr)
    source = {"model_sha256": model_digest(loaded.weights), "puzzles": str(args.examples)}
    load = partial(_load, argparse.Namespace(**{k: v for k, v in vars(args).items() if k != "run"}))
    built = build_mi_data(load, prompts, cfg, args.out, args.workers, source=source, probe_batch=args.probe_batch,
                          denoiser=model if args.workers == 1 else None)
    spent = passes_spent(args.out)
    print(f"{built} shards built, {cfg.shards - built} already there: {args.out} ({spent:,} probe passes in all, "
          f"{spent / cfg.states:,.0f} a state)", file=sys.stderr)


def _train(args: argparse.Namespace) -> None:
    from unmask.adapters import is_pretrained
    from unmask.artifacts import BASE_SHA256, MI_HEAD, exists, model_digest, read_meta, recorded_base
    from unmask.eval import shown_path
    from unmask.mi.data import load_mi_datasets
    from unmask.mi.estimator import save_head
    from unmask.mi.fit import HeadTrainConfig, fit_head, head_cost

    cfg = from_args(HeadTrainConfig, args)
    out = Path(args.out or Path("runs") / f"mi-head-{args.task}")  # a default never writes into a model's folder
    _, model, loaded = _task_and_model(args)
    digest = model_digest(loaded.weights)
    if exists(out, MI_HEAD) and recorded_base(read_meta(out, MI_HEAD)) not in (None, digest):
        raise UnmaskError(f"--out {out}: holds an MI head of another model; choose another --out (a head is replaced only "
                          "by one for the same model)")
    # several builds (e.g. sequential + parallel states) as one, all of this model's states
    data = load_mi_datasets(args.data, model_sha256=digest)
    torch.set_num_threads(2)
    head, metrics = fit_head(model, data, cfg)
    metrics |= head_cost(model, head, data["tokens"][:250].long())
    if hasattr(model, "num_parameters"):
        metrics["denoiser_parameters"] = model.num_parameters()
    # (paths as shown_path records them: relative inside the working directory, no machine prefix)
    base = args.model if is_pretrained(args.model) else shown_path(args.model)
    save_head(head, out, {"metrics": metrics, "data": [shown_path(d) for d in args.data], "base_model": base,
                          BASE_SHA256: digest})
    print(dumps_strict(metrics, indent=1))
    print(f"saved {out / MI_HEAD.weights} for {base}: decode with --model {args.model} --head {out} --policy mi:lam=1",
          file=sys.stderr)


def _map(args: argparse.Namespace) -> None:
    from unmask.mi import exact_mi
    from unmask.mi.estimator import load_head, predicted_values
    from unmask.mi.maps import structure_score
    from unmask.plots import plot_mi_map

    if args.eps is not None and not (args.exact or args.joint):
        raise UnmaskError("--eps sets the exact MI's truncation: give --exact (or --joint) with it")
    args.eps = 1e-3 if args.eps is None else args.eps
    if not 0 <= args.eps < 1:  # also refuses NaN
        raise UnmaskError(f"--eps must be in [0, 1), got {args.eps}")
    out = check_output_file(args.out, input_paths(args))
    if out.suffix.lower() != ".png":
        raise UnmaskError(f"--out {args.out}: the map is a PNG picture; name the file *.png")
    task, model, loaded = _task_and_model(args)
    examples = task.read(args.examples)
    if not 0 <= args.index < len(examples):
        raise UnmaskError(f"--index {args.index} is out of range (the file has {len(examples)} examples)")
    tokens = task.encode(examples[args.index : args.index + 1])  # (1, L): a file may mix lengths (your own sequences)
    masked = tokens == model.mask_id
    if not masked.any():
        raise UnmaskError(f"example {args.index} has no masked position to map")
    position = int(masked[0].nonzero()[0]) if args.cell is None else task.parse_position(args.cell, tokens[0])
    pairs = masked[:, :, None] & masked[:, None, :] & ~torch.eye(tokens.shape[1], dtype=torch.bool)  # (1, L, L)
    maps, scores = {}, {}
    exact = args.exact or args.joint
    head = load_head(args.head or loaded.directory, required=not exact or args.head is not None, base=loaded.weights,
                     named=args.head is not None)
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
    print(dumps_strict({"out": str(out), "structure": scores}))


def add_parser(sub) -> None:
    """``unmask mi ...``."""
    from unmask.mi.data import PROBE_BATCH, MIDataConfig
    from unmask.mi.fit import HeadTrainConfig
    from unmask.tasks import TASKS

    mi = sub.add_parser("mi",
                        help="pairwise mutual information: data, estimator head, maps (--task sudoku|maths|proteins|antibodies)")
    ms = mi.add_subparsers(dest="action", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--task", choices=list(TASKS), default="sudoku", help="the domain of the model and examples")
        p.add_argument("--model", help="base model: an unmask model directory, hf:DIR or esmc:FILE (default: the task's "
                       "shipped model)")
        add_hf_args(p)
        add_seq_args(p)

    d = ms.add_parser("data", help="states from decoding trajectories with their exact MI rows (sharded, resumable)",
                      formatter_class=HelpFormatter)
    common(d)
    d.add_argument("--examples", "--puzzles", "--problems", dest="examples", required=True,
                   help="the task's file of prompts the trajectories start from (Sudoku CSV, maths JSONL)")
    d.add_argument("--out", required=True, help="shard directory (finished shards are kept on a rerun)")
    d.add_argument("--workers", type=positive_int, default=1, help="processes (the shards do not depend on it)")
    d.add_argument("--probe-batch", type=positive_int, default=PROBE_BATCH,
                   help="probe sequences per forward pass (lower it to fit a large model's memory; a build resumes only with "
                   "the same, as another can change the last bits of the numbers)")
    add_dataclass_args(d, MIDataConfig)
    d.set_defaults(run=_data)

    t = ms.add_parser("train", help="fit the MI estimator head on frozen hidden states (MSE on masked pairs)",
                      formatter_class=HelpFormatter)
    common(t)
    t.add_argument("--data", required=True, action="append",
                   help="shard directory from `unmask mi data` (repeatable: e.g. sequential and parallel states)")
    t.add_argument("--out", help="folder for mi_head.* (default: runs/mi-head-TASK); decode with --head OUT. It records the "
                   "base model's weights digest and is refused with another model")
    add_dataclass_args(t, HeadTrainConfig)
    t.set_defaults(run=_train)

    m = ms.add_parser("map", help="PNG of the MI matrix and of one position's MI laid out as the task draws it",
                      formatter_class=HelpFormatter)
    common(m)
    # (as on mi data; the old --puzzle still works, argparse taking it as short for --puzzles)
    m.add_argument("--examples", "--puzzles", "--problems", dest="examples", required=True,
                   help="the task's file (Sudoku: a CSV or one 81-character grid; maths: a JSONL)")
    m.add_argument("--index", type=integer, default=0, help="example number in the file")
    m.add_argument("--cell", help="the position: Sudoku ROW,COL (1..9); maths the answer character K (1..); "
                   "proteins and antibodies the residue number K; default: the first masked one")
    m.add_argument("--exact", action="store_true", help="also compute the exact MI (1 + N·|V| passes)")
    m.add_argument("--joint", action="store_true",
                   help="also the MI of each row's probe joint, a true MI from the same probes (implies --exact)")
    m.add_argument("--eps", type=float, help="exact MI: skip values with P < eps (default: 0.001)")
    add_addon_args(m, order=False)
    m.add_argument("--out", default="mi_map.png", help="PNG file")
    m.set_defaults(run=_map)
