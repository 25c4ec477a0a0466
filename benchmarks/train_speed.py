"""Training throughput of the maths MDM: milliseconds per optimizer step on a device.

    python benchmarks/train_speed.py                                   # CPU, batch 128
    python benchmarks/train_speed.py --device cuda --batch-size 512    # a GPU

Times ``--steps`` full steps (mask, forward, backward, clip, AdamW) of the default maths model on
real training sequences after ``--warmup`` untimed ones, and prints one JSON object. Used to size a
GPU run to the time a lease allows (``benchmarks/train_maths_gpu.sh``).
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from unmask.tasks.maths.arith import ArithConfig, generate
from unmask.optim import adamw
from unmask.tasks.maths.task import MathsTraining, default_model_config
from unmask.train import TrainConfig, mdm_loss


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--steps", type=int, default=20, help="timed steps")
    ap.add_argument("--warmup", type=int, default=5, help="untimed steps first")
    args = ap.parse_args()

    cfg = TrainConfig(batch_size=args.batch_size, device=args.device, suffix_prob=0.5)
    task = MathsTraining(generate(ArithConfig(), 2000, seed=123), default_model_config())
    model = task.model(None).to(args.device).train()
    opt = adamw(model, cfg.lr, cfg.weight_decay, betas=(0.9, 0.98))  # as unmask.train.train
    gen = torch.Generator().manual_seed(0)
    sync = torch.cuda.synchronize if torch.device(args.device).type == "cuda" else (lambda: None)

    def step() -> None:
        loss = mdm_loss(model, *task.sample(gen, cfg.batch_size), cfg, gen)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()

    for _ in range(args.warmup):
        step()
    sync()
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    sync()
    ms = 1000 * (time.perf_counter() - start) / args.steps
    tokens = args.batch_size * model.cfg.seq_len
    print(json.dumps({"device": args.device, "batch_size": args.batch_size, "ms_per_step": round(ms, 2),
                      "tokens_per_s": round(tokens / ms * 1000), "params": model.num_parameters()}))


if __name__ == "__main__":
    main()
