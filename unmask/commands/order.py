"""``unmask <task> train-order``: learn a generation order for a task's shipped (or given) model."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from unmask.commands.common import HelpFormatter, add_dataclass_args, from_args, integer, positive_int


def _train_order(args: argparse.Namespace) -> None:
    from unmask.eval import evaluate
    from unmask.model import WEIGHTS_FILE, load_model
    from unmask.order.train import OrderTrainConfig, train_order
    from unmask.runs import file_digest
    from unmask.tasks import get_task

    cfg = from_args(OrderTrainConfig, args)
    model = load_model(args.model, task=args.task_name)
    task = get_task(args.task_name, model.cfg)
    data = task.read(args.data)
    starts, cleans = task.encode(data), task.targets(data)
    val = task.read(args.val)[: args.val_n] if args.val else None

    def validate(policy) -> dict:
        m = evaluate(task, model, val, policy, batch_size=args.val_batch_size, seed=args.val_seed)
        return {"acc": round(m["accuracy"], 4), "mean_nfe": round(m["mean_nfe"], 3), "max_nfe": m["max_nfe"]}

    source = {"data_sha256": file_digest(args.data), "model_sha256": file_digest(Path(args.model) / WEIGHTS_FILE)}
    train_order(model, args.model, starts, cleans, cfg, args.out, validate if val is not None else None,
                resume=args.resume, source=source)
    print(f"order policy: {args.out}/model (use --model {args.out}/model --policy learned)", file=sys.stderr)


def add_train_order_parser(sub, task_name: str, default_model, data_help: str) -> None:
    """``unmask <task> train-order ...``."""
    from unmask.order.train import OrderTrainConfig

    t = sub.add_parser("train-order", formatter_class=HelpFormatter,
                       help="learn which positions to reveal and how many (order policy by variational inference)")
    t.add_argument("--model", default=str(default_model), help="the base model (frozen unless --finetune)")
    t.add_argument("--data", required=True, help=f"training examples: {data_help}")
    t.add_argument("--val", help="validation examples, decoded with the learned policy at --budget")
    t.add_argument("--val-n", type=positive_int, default=100, help="validation examples to score")
    t.add_argument("--val-batch-size", type=positive_int, default=128, help="sequences per forward pass in validation")
    t.add_argument("--val-seed", type=integer, default=0,
                   help="validation example k samples its reveal sets with seed VAL_SEED + k")
    t.add_argument("--out", required=True, help="run directory (checkpoint.pt, log.jsonl, model/ with order_policy.*)")
    t.add_argument("--resume", action="store_true", help="continue the run in --out")
    add_dataclass_args(t, OrderTrainConfig)
    t.set_defaults(run=_train_order, task_name=task_name)
