"""Absorbing-state masked diffusion training (MDLM, Sahoo et al. 2024), single process or DDP.

Per sequence draw a mask rate t, mask each maskable position with probability t, and train the
denoiser to predict the clean tokens at masked positions (cross-entropy; weight 1, or 1/t for the
NELBO, unbiased despite the one mask every row is guaranteed). AdamW, linear warm-up + cosine
decay, gradient clipping, periodic validation, atomic checkpoints and ``--resume``. Under
``torchrun --nproc_per_node N`` each process trains on its own data stream with gradients averaged
by DDP (gloo on CPU); every rank validates (the evaluator shards the sets across them) and rank 0
writes.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

import torch
import torch.distributed as dist
import torch.nn.functional as F
from tqdm import tqdm

from unmask import checks
from unmask.dist import rank_world
from unmask.errors import UnmaskError
from unmask.io import dumps_strict
from unmask.model import ModelConfig, TransformerDenoiser, resolve_device, save_model, warm_start
from unmask.optim import adamw, set_lr, warmup_cosine
from unmask.runs import CHECKPOINT, LOG, append_log, save_checkpoint, start_or_resume, truncate_log  # noqa: F401  (CHECKPOINT and LOG stay importable from here)

# Settings a resumed run may change: more steps (the cosine schedule stretches), other intervals, the
# share of suffix masks (a change of data mix, e.g. switched on part-way through), and the machine:
# the device and the batch it can afford (a CPU run continued on a GPU).
RESUMABLE_CHANGES = ("steps", "eval_every", "ckpt_every", "suffix_prob", "device", "batch_size")
SHOW_LOSS_EVERY = 25  # steps between loss readings on the progress bar (each one synchronises a GPU)


@dataclass
class TrainConfig:
    """How to train (model shape lives in :class:`~unmask.model.ModelConfig`)."""

    steps: int = 6000  # optimizer steps in total
    batch_size: int = 128  # sequences per step in each process
    lr: float = 1e-3  # peak learning rate
    min_lr_ratio: float = 0.1  # final learning rate as a fraction of the peak
    warmup: int = 300  # linear warm-up steps (at most steps: a short run needs a shorter one)
    weight_decay: float = 0.01  # AdamW weight decay (not on norms, biases, embeddings)
    grad_clip: float = 1.0  # max global gradient norm
    mask_min: float = 0.0  # lowest mask rate t drawn per sequence
    mask_max: float = 1.0  # highest mask rate t drawn per sequence
    elbo_weight: bool = False  # weight each sequence's loss by 1/t (MDLM NELBO, unbiased: nelbo_denominator) instead of 1
    suffix_prob: float = 0.0  # share of sequences whose mask also covers all maskable positions from a random cut on
    bf16: bool = True  # bfloat16 autocast for the forward pass (CPU and CUDA)
    seed: int = 0  # seeds init and every data stream
    eval_every: int = 500  # steps between validations (and model exports)
    ckpt_every: int = 250  # steps between resumable checkpoints
    device: str = "cpu"  # where the model trains ("cpu", "cuda", "cuda:1"); data and masks are always drawn on the CPU

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "eval_every", "ckpt_every"):
            checks.integer(name, getattr(self, name), 1)
        checks.integer("warmup", self.warmup, 0)
        if self.warmup > self.steps:  # the schedule would end part-way up its ramp, never at lr nor decayed
            raise UnmaskError(f"warmup must be <= steps (the learning rate peaks after warmup steps), got warmup {self.warmup} "
                              f"> steps {self.steps}")
        checks.positive("lr", self.lr)
        checks.non_negative("weight_decay", self.weight_decay)
        checks.positive("grad_clip", self.grad_clip)
        checks.between("min_lr_ratio", self.min_lr_ratio, 0, 1)
        checks.between("mask_min", self.mask_min, 0, 1, "[)")
        checks.between("mask_max", self.mask_max, 0, 1, "(]")
        if self.mask_min >= self.mask_max:
            raise UnmaskError(f"mask_min must be < mask_max, got {self.mask_min} >= {self.mask_max}")
        checks.between("suffix_prob", self.suffix_prob, 0, 1)
        if self.suffix_prob and self.elbo_weight:
            raise UnmaskError("elbo_weight needs the MDLM forward process; suffix_prob > 0 departs from it")


class TrainTask(Protocol):
    """What a task supplies to the trainer."""

    name: str

    def model(self, cfg: ModelConfig | None) -> TransformerDenoiser:
        """A fresh model (default shape if ``cfg`` is None) with the task's position features."""
        ...

    def sample(self, gen: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        """``n`` clean training sequences ``(n, L)`` and where masking is allowed ``(n, L)`` bool."""
        ...

    def validate(self, model: TransformerDenoiser) -> dict[str, float]:
        """Validation metrics of the current model (accuracy etc.)."""
        ...


def mask_batch(
    x0: torch.Tensor, maskable: torch.Tensor, mask_id: int, cfg: TrainConfig, gen: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Forward process: ``(x_t, masked, t)``; at least one position masked per sequence."""
    b, n = x0.shape
    t = cfg.mask_max - (cfg.mask_max - cfg.mask_min) * torch.rand(b, generator=gen)  # (B,) in (mask_min, mask_max]
    u = torch.rand(b, n, generator=gen)
    masked = (u < t[:, None]) & maskable
    if cfg.suffix_prob > 0:
        # Suffix masking: when a later value repeats an earlier one (a result copied into the next step,
        # the final answer), uniform masks rarely hide every copy, so the model seldom has to compute it
        # from its inputs. Masking everything after a random cut makes such prefix-conditioned states common.
        rank = maskable.cumsum(1) - 1  # (B, L) index among maskable positions
        cut = (torch.rand(b, generator=gen) * maskable.sum(1)).long()  # (B,) uniform over maskable positions
        use = torch.rand(b, generator=gen) < cfg.suffix_prob  # (B,)
        masked |= maskable & (rank >= cut[:, None]) & use[:, None]
    # Guarantee one masked position (the maskable one with the smallest draw) so no row is wasted.
    first = u.masked_fill(~maskable, 2.0).argmin(1)
    masked[torch.arange(b), first] |= maskable[torch.arange(b), first]
    return torch.where(masked, torch.full_like(x0, mask_id), x0), masked, t


def mdm_loss(model, x0, maskable, cfg: TrainConfig, gen: torch.Generator) -> torch.Tensor:
    """Masked-token cross-entropy, mean over sequences of the per-sequence mean (× 1/t if NELBO)."""
    xt, masked, t = mask_batch(x0, maskable, model_mask_id(model), cfg, gen)
    device = next(model.parameters()).device
    x0, xt, masked, t = (a.to(device, non_blocking=True) for a in (x0, xt, masked, t))
    with torch.autocast(x0.device.type, dtype=torch.bfloat16, enabled=cfg.bf16):
        logits = model(xt)[0]  # (B, L, V)
    # Only masked positions are scored; the others may hold input-only ids (e.g. a protein's EOS).
    target = x0.masked_fill(~masked, -100)  # -100: cross_entropy's ignore_index, a 0 loss
    nll = F.cross_entropy(logits.float().transpose(1, 2), target, reduction="none")  # (B, L)
    if cfg.elbo_weight:
        return ((nll * masked).sum(1) / nelbo_denominator(masked, maskable, t)).mean()
    return ((nll * masked).sum(1) / masked.sum(1).clamp_min(1)).mean()


def nelbo_denominator(masked: torch.Tensor, maskable: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """``(B,)`` what divides Σ nll in the NELBO (MDLM, Sahoo et al. 2024): t·L (L maskable positions),
    and t·L + 1 − t for a row with a single mask.

    :func:`mask_batch` masks one position when the Bernoulli(t) draw masked none, so a single mask has
    probability t(1 − t)^{L−1} + (1 − t)^L / L instead of the forward process's t(1 − t)^{L−1}. Weighting
    those rows by the ratio, tL / (tL + 1 − t), makes the estimate unbiased for the NELBO (where an
    empty mask scores 0). With 1/(tL) alone the expected weight was 1 + E_t[(1 − t)^L / (tL)], about
    1.15 at L = 81 with t ~ U(0, 1] (finite only because float32 draws t ≥ 2⁻²⁴: the integral diverges
    at t → 0) and heavy-tailed (a forced mask weighed 1/(tL)); now a single mask weighs at most 1."""
    n = maskable.sum(1).to(t.dtype)  # (B,) L
    single = masked.sum(1) == 1  # (B,) includes every forced mask
    return t * n + torch.where(single, 1 - t, 0.0)


def model_mask_id(model) -> int:
    """``mask_id`` of a model, looking through a DDP wrapper."""
    return getattr(model, "module", model).mask_id


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Linear warm-up then cosine decay to ``min_lr_ratio · lr`` (:func:`unmask.optim.warmup_cosine`)."""
    return warmup_cosine(step, cfg.steps, cfg.lr, cfg.warmup, cfg.min_lr_ratio)


def train(
    task: TrainTask,
    cfg: TrainConfig,
    out: str | os.PathLike,
    model_cfg: ModelConfig | None = None,
    resume: bool = False,
    progress: bool = True,
    source: dict | None = None,
    init: TransformerDenoiser | None = None,
) -> TransformerDenoiser:
    """Train ``task``'s model into run directory ``out``; returns the trained model.

    ``out`` receives ``checkpoint.pt`` (resumable), ``log.jsonl`` (validation curve) and
    ``model/`` (the latest exported safetensors model). ``source`` identifies the training data
    (e.g. ``{"data_sha256": ...}``): a resumed run refuses other data. ``init``: a trained model a
    fresh run starts from (:func:`~unmask.model.warm_start`, deeper by stacking), with a fresh optimizer
    and schedule; a resumed run takes its weights from the checkpoint instead.
    """
    rank, world = rank_world()
    device = resolve_device(cfg.device)
    out = Path(out)
    if not os.environ.get("OMP_NUM_THREADS"):  # an explicit thread count (e.g. beside another job) wins
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // world))
    torch.manual_seed(cfg.seed)
    state = start_or_resume(out, cfg, resume, RESUMABLE_CHANGES, source)
    if state is not None:
        model_cfg = ModelConfig(**state["model_config"])
        source = {**state.get("source", {}), **(source or {})}  # keep what only the first start knew (its init)
        if rank == 0:
            truncate_log(out, state["step"])
    model = task.model(model_cfg)
    if state is None and init is not None:
        warm_start(model, init)
    model = model.to(device)
    opt = adamw(model, cfg.lr, cfg.weight_decay, betas=(0.9, 0.98))  # decay on linear weights only
    gen = torch.Generator().manual_seed(cfg.seed * 1000 + rank)
    step, elapsed = 0, 0.0
    if state is not None:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        gen.set_state(state["generators"][rank])
        step, elapsed = state["step"], state["elapsed"]
    net = torch.nn.parallel.DistributedDataParallel(model) if world > 1 else model
    bar = tqdm(total=cfg.steps, initial=step, disable=not progress or rank != 0, desc=f"train {task.name}")
    start = time.time() - elapsed
    while step < cfg.steps:
        set_lr(opt, lr_at(step, cfg))
        x0, maskable = task.sample(gen, cfg.batch_size)
        net.train()
        loss = mdm_loss(net, x0, maskable, cfg, gen)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        step += 1
        bar.update(1)
        if step % SHOW_LOSS_EVERY == 0:  # reading the loss waits for the device; on a GPU, not every step
            bar.set_postfix(loss=f"{loss.item():.4f}", refresh=False)
        if step % cfg.eval_every == 0 or step == cfg.steps:
            _validate(task, model, out, step, time.time() - start, loss.item(), cfg.device, rank, world)
        if step % cfg.ckpt_every == 0 or step == cfg.steps:
            _checkpoint(model, opt, gen, cfg, out, step, time.time() - start, rank, world, source)
    bar.close()
    return model.eval()


def _validate(task, model, out: Path, step: int, elapsed: float, loss: float, device: str, rank: int, world: int) -> None:
    """Every rank validates (the evaluator shards the sets across ranks and gathers them: all must
    call it); rank 0 exports ``model/`` and appends to the log; the others wait."""
    model.eval()
    scores = task.validate(model)
    if rank == 0:
        record = {"step": step, "minutes": round(elapsed / 60, 2), "device": device, "train_loss": round(loss, 5)}
        record.update(scores)
        save_model(model, out / "model", {"train": record})
        append_log(out, record)
        tqdm.write(dumps_strict(record))
    if world > 1:
        dist.barrier()


def _checkpoint(model, opt, gen, cfg: TrainConfig, out: Path, step: int, elapsed: float, rank: int, world: int,
                source: dict | None) -> None:
    """Write everything needed to resume, atomically (rank 0 writes every rank's generator)."""
    gens = [gen.get_state()]
    if world > 1:
        gens = [None] * world
        dist.all_gather_object(gens, gen.get_state())
    if rank == 0:
        state = {
            "model": model.state_dict(),
            "optimizer": opt.state_dict(),
            "generators": gens,
            "step": step,
            "elapsed": elapsed,
            "train_config": asdict(cfg),
            "model_config": asdict(model.cfg),
            "source": source or {},
        }
        save_checkpoint(out, state)
    if world > 1:
        dist.barrier()
