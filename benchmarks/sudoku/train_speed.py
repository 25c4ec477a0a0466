"""Training throughput of a task's MDM: milliseconds per optimizer step on a device.

    python benchmarks/sudoku/train_speed.py                                   # maths model, CPU, batch 128
    python benchmarks/sudoku/train_speed.py --device cuda --batch-size 512    # a GPU
    python benchmarks/sudoku/train_speed.py --task sudoku --n-layers 12 --variants fp32 bf16-fused bf16 \
        --out benchmarks/results/sudoku/train_speed_sudoku                    # the attention kernels compared

Times ``--steps`` full steps (mask, forward, backward, clip, AdamW) of the task's default model on real
training sequences after ``--warmup`` untimed ones, and prints one JSON object per variant:
- ``bf16``: bfloat16 autocast, as ``unmask … train`` runs by default;
- ``fp32``: no autocast (``TrainConfig.bf16 = False``);
- ``bf16-fused``: bfloat16 autocast with PyTorch's fused attention kernel, as ``unmask.model`` ran before
  it wrote attention out on CPUs (``unmask.model.attention``).
With ``--out PREFIX`` the rows also go to PREFIX.json and PREFIX.md. Used to size a GPU run to the time a
lease allows (``benchmarks/maths/train_maths_gpu.sh``).
"""

from __future__ import annotations

import argparse
import json
import time
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import torch
import torch.nn.functional as F

import unmask.model
from unmask.eval import markdown_table
from unmask.io import atomic_write
from unmask.optim import adamw
from unmask.train import TrainConfig, mdm_loss

VARIANTS = ("bf16", "fp32", "bf16-fused")


def maths_task():
    from unmask.tasks.maths.arith import ArithConfig, generate
    from unmask.tasks.maths.task import MathsTraining, default_model_config

    return MathsTraining(generate(ArithConfig(), 2000, seed=123), default_model_config()), {"suffix_prob": 0.5}


def sudoku_task():
    from unmask.tasks.sudoku.generate import generate
    from unmask.tasks.sudoku.task import SudokuTraining

    return SudokuTraining(generate("kaggle", 512, seed=123, progress=False).solutions), {}


TASKS = {"maths": maths_task, "sudoku": sudoku_task}


@contextmanager
def fused_attention(on: bool):
    """Route :func:`unmask.model.attention` to ``F.scaled_dot_product_attention`` in every dtype."""
    kept = unmask.model.attention
    if on:
        unmask.model.attention = lambda q, k, v, dropout_p=0.0: F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p)
    try:
        yield
    finally:
        unmask.model.attention = kept


def time_variant(args, variant: str) -> dict:
    """One variant's row: a fresh model, optimizer and generator, so variants see the same batches."""
    task, extra = TASKS[args.task]()
    cfg = TrainConfig(batch_size=args.batch_size, device=args.device, bf16=variant != "fp32", **extra)
    model_cfg = task.model(None).cfg
    if args.n_layers:
        model_cfg = replace(model_cfg, n_layers=args.n_layers)
    torch.manual_seed(0)
    model = task.model(model_cfg).to(args.device).train()
    opt = adamw(model, cfg.lr, cfg.weight_decay, betas=(0.9, 0.98))  # as unmask.train.train
    gen = torch.Generator().manual_seed(0)
    sync = torch.cuda.synchronize if torch.device(args.device).type == "cuda" else (lambda: None)

    def step() -> None:
        loss = mdm_loss(model, *task.sample(gen, cfg.batch_size), cfg, gen)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()

    with fused_attention(variant == "bf16-fused"):
        for _ in range(args.warmup):
            step()
        sync()
        start = time.perf_counter()
        for _ in range(args.steps):
            step()
        sync()
    ms = 1000 * (time.perf_counter() - start) / args.steps
    tokens = args.batch_size * model.cfg.seq_len
    return {"task": args.task, "variant": variant, "device": args.device, "threads": torch.get_num_threads(),
            "batch_size": args.batch_size, "n_layers": model.cfg.n_layers, "params": model.num_parameters(),
            "ms_per_step": round(ms, 1), "tokens_per_s": round(tokens / ms * 1000)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--task", choices=sorted(TASKS), default="maths")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--n-layers", type=int, default=0, help="blocks of the model (default: the task's default shape)")
    ap.add_argument("--variants", nargs="+", choices=VARIANTS, default=["bf16"])
    ap.add_argument("--steps", type=int, default=20, help="timed steps")
    ap.add_argument("--warmup", type=int, default=5, help="untimed steps first")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (default: torch's own choice)")
    ap.add_argument("--out", type=Path, help="also write the rows to OUT.json and OUT.md")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    rows = []
    for variant in args.variants:
        rows.append(time_variant(args, variant))
        print(json.dumps(rows[-1]), flush=True)
    if args.out:
        atomic_write(args.out.with_suffix(".json"), lambda t: Path(t).write_text(json.dumps(rows, indent=1) + "\n"))
        md = markdown_table(rows, list(rows[0]))
        atomic_write(args.out.with_suffix(".md"), lambda t: Path(t).write_text(md + "\n"))


if __name__ == "__main__":
    main()
