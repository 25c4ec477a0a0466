"""``unmask <task> train-order``: learn a generation order for a task's shipped (or given) model."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from unmask.commands.common import (
    HelpFormatter,
    add_dataclass_args,
    add_hf_args,
    add_seq_args,
    check_pretrained_task,
    from_args,
    load_for_eval,
    positive_int,
    seed_int,
    task_and_model,
)
from unmask.errors import UnmaskError


def task_success(task, data):
    """``--objective rl``'s reward: ``(tokens (N, L), example numbers (N,)) → (N,)`` 1.0 where ``task.score`` finds
    decoded example k of ``data`` (a list, or an indexable set such as a ``SudokuSet``) right, else 0.0."""

    def success(tokens, index):
        index = index.cpu()
        examples = [data[i] for i in index.tolist()] if isinstance(data, list) else data[index.numpy()]
        return task.score(tokens.cpu(), examples).float()

    return success


def _train_order(args: argparse.Namespace) -> None:
    from unmask.adapters import is_pretrained
    from unmask.artifacts import ORDER_POLICY, model_digest
    from unmask.eval import evaluate
    from unmask.order.train import FINETUNED, OrderTrainConfig, train_order
    from unmask.runs import file_digest
    from unmask.tasks import get_task

    cfg = from_args(OrderTrainConfig, args)
    if getattr(args, "block", None):
        raise UnmaskError("--block: semi-autoregressive blocks are for decoding (unmask seq generate|eval), not here")
    check_pretrained_task(args.model, args.task_name)
    if cfg.objective == "rl" and not get_task(args.task_name).outcome_reward:
        raise UnmaskError(f"--objective rl rewards a right answer, and the {args.task_name} task's decodes are never simply "
                          "right or wrong (its check asks for an exact recovery): use the ELBO (the default)")
    if cfg.finetune and (is_pretrained(args.model) or args.task_name == "seq"):
        raise UnmaskError("--finetune trains an unmask model's own weights, for its own task: not a pretrained model "
                          "(hf:, esmc:) nor your own sequences (seq)")
    loaded = load_for_eval(args, args.task_name, cfg.device)
    task, model = task_and_model(args.task_name, loaded, args)
    data = task.read(args.data)
    starts, cleans = task.encode(data), task.targets(data)
    val = task.read(args.val)[: args.val_n] if args.val else None

    def validate(policy) -> dict:
        m = evaluate(task, model, val, policy, batch_size=args.val_batch_size, seed=args.val_seed)
        return {"acc": round(m["accuracy"], 4), "mean_nfe": round(m["mean_nfe"], 3), "max_nfe": m["max_nfe"]}

    source = {"data_sha256": file_digest(args.data), "model_sha256": model_digest(loaded.weights)}
    train_order(model, args.model, starts, cleans, cfg, args.out, validate if val is not None else None,
                resume=args.resume, source=source, success=task_success(task, data))
    model_flag = f"{Path(args.out) / FINETUNED}" if cfg.finetune else args.model
    print(f"order policy: {Path(args.out) / ORDER_POLICY.weights} (decode with --model {model_flag} --order {args.out} "
          "--policy learned)", file=sys.stderr)


def add_train_order_parser(sub, task_name: str, default_model, data_help: str) -> None:
    """``unmask <task> train-order ...``."""
    from unmask.order.train import OrderTrainConfig

    t = sub.add_parser("train-order", formatter_class=HelpFormatter,
                       help="learn which positions to reveal and how many (variational inference, or outcome RL: --objective rl)")
    t.add_argument("--model", default=None if default_model is None else str(default_model), required=default_model is None,
                   help="the base model: an unmask model directory, hf:DIR or esmc:FILE where the task maps one (frozen unless "
                   "--finetune, for unmask models only)")
    t.add_argument("--data", required=True, help=f"training examples: {data_help}")
    t.add_argument("--val", help="validation examples, decoded with the learned policy at --budget")
    t.add_argument("--val-n", type=positive_int, default=100, help="validation examples to score")
    t.add_argument("--val-batch-size", type=positive_int, default=128, help="sequences per forward pass in validation")
    t.add_argument("--val-seed", type=seed_int, default=0,
                   help="validation example k samples its reveal sets with seed VAL_SEED + k")
    t.add_argument("--out", required=True, help="run directory: checkpoint.pt, log.jsonl and order_policy.* (decode with --order "
                   "OUT; never a copy of the base model; with --finetune the fine-tuned model in OUT/model)")
    t.add_argument("--resume", action="store_true", help="continue the run in --out")
    add_dataclass_args(t, OrderTrainConfig)
    add_hf_args(t)
    if task_name == "seq":
        add_seq_args(t)
    t.set_defaults(run=_train_order, task_name=task_name)
