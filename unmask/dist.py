"""Several processes under ``torchrun``: rank and world size, and gathering results to every rank.

Training (DDP) and evaluation (a set sharded across processes) share this. Outside torchrun the
world is one process and nothing is initialised. The gloo backend carries CPU objects, so it serves
CPU and GPU runs alike.
"""

from __future__ import annotations

import atexit
import os

import torch.distributed as dist


def rank_world() -> tuple[int, int]:
    """(rank, world size); starts the gloo process group on first use under torchrun."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1 and not dist.is_initialized():
        dist.init_process_group("gloo")
        atexit.register(_close)  # a gloo group left open can abort the process at exit
    return (dist.get_rank(), world) if world > 1 else (0, 1)


def _close() -> None:
    if dist.is_initialized():
        dist.destroy_process_group()


def is_main() -> bool:
    """Whether this process prints and writes (rank 0, or the only process)."""
    return rank_world()[0] == 0


def all_gather(obj) -> list:
    """Every rank's ``obj``, in rank order (``[obj]`` in a single process)."""
    rank, world = rank_world()
    if world == 1:
        return [obj]
    out = [None] * world
    dist.all_gather_object(out, obj)
    return out


def average_gradients(params) -> None:
    """Average the gradients of ``params`` over every rank (what DDP does, for trainers whose losses
    are not one module's forward); a no-op in a single process."""
    rank, world = rank_world()
    if world == 1:
        return
    for p in params:
        if p.grad is not None:
            dist.all_reduce(p.grad)
            p.grad /= world
