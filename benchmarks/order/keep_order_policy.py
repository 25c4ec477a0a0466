"""Keep a trained order policy without its base model's copy: ``order_policy.*`` of a run's export,
with the run's recorded inputs (the base model's hash), for ``learned_order.py --learned NAME=DIR``.

    python benchmarks/order/keep_order_policy.py runs/order-maths3-tau0.3-c2 benchmarks/models/orders/maths-3step-tau0.3-c2

Exports made before order policies recorded their inputs get them from the run's checkpoint; for a
run without any record, ``--base-model DIR`` names the model it was trained on (its weights are
hashed); otherwise it is refused, as nothing would tie the policy to a model. RUN may also be a
model directory holding ``order_policy.*`` (a shipped policy) with ``--base-model`` the same folder.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import torch

from unmask.io import atomic_write, make_dir
from unmask.model import WEIGHTS_FILE
from unmask.runs import CHECKPOINT, file_digest


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run", type=Path, help="an order-training run directory (checkpoint.pt, model/order_policy.*)")
    p.add_argument("out", type=Path, help="folder for order_policy.{json,safetensors}")
    p.add_argument("--base-model", type=Path, help="the model the policy was trained for, when the run records none")
    args = p.parse_args(argv)
    export = args.run / "model" if (args.run / "model").is_dir() else args.run
    meta_path = export / "order_policy.json"
    if not meta_path.is_file():
        p.error(f"{meta_path}: no exported order policy")
    meta = json.loads(meta_path.read_text())
    if (meta.get("train_config") or {}).get("finetune"):
        p.error(f"{args.run}: a --finetune run's policy belongs with its finetuned model, not the base model")
    if not meta.get("source") and (args.run / CHECKPOINT).is_file():
        meta["source"] = torch.load(args.run / CHECKPOINT, map_location="cpu", weights_only=False).get("source") or {}
    if args.base_model:
        named = file_digest(args.base_model / WEIGHTS_FILE)
        recorded = meta.get("source", {}).get("model_sha256")
        if recorded and recorded != named:
            p.error(f"{args.run}: trained for model {recorded}, not --base-model {args.base_model} ({named})")
        meta["source"] = {**meta.get("source", {}), "model_sha256": named}
    if not meta.get("source", {}).get("model_sha256"):
        p.error(f"{args.run}: the run records no base-model hash (name the model with --base-model)")
    make_dir(args.out)
    weights = export / "order_policy.safetensors"
    atomic_write(args.out / "order_policy.safetensors", lambda tmp: shutil.copyfile(weights, tmp))
    atomic_write(args.out / "order_policy.json", lambda tmp: Path(tmp).write_text(json.dumps(meta, indent=1) + "\n"))
    print(f"kept {args.out} (base model {meta['source']['model_sha256']})", file=sys.stderr)


if __name__ == "__main__":
    main()
