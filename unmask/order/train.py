"""Training learned orders: P_ψ and Q_φ by the ELBO of :mod:`unmask.order.elbo` (Fox et al. 2026, arXiv 2602.23968).

The denoiser is frozen by default (only the two light order networks train, so 2 CPU cores do);
``finetune`` trains θ too, on every term of the surrogate that depends on it: the likelihood terms,
and the KL and score-function terms, which reach θ through the hidden states and confidences the
order networks read. Each step rolls out K samples of Q_φ for a batch of sequences through the one
decode loop, with the true tokens revealed (each rollout its own seed: rollouts of one sequence
sharing one would leave Q_φ no gradient, and :func:`~unmask.order.elbo.rollout` refuses them), and
takes one AdamW step on the surrogate loss. Under ``torchrun`` each process draws its own batches
and gradients are averaged. The run directory holds ``checkpoint.pt`` (resumable), ``log.jsonl``
(ELBO, KL, likelihood, mean steps, validation) and ``order_policy.*`` (never a copy of the base
model), ready for ``--order RUN --policy learned``; with ``finetune``, the fine-tuned model in
``model/``, which the policy names as its base.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from tqdm import tqdm

from unmask import artifacts, checks
from unmask.dist import all_gather, average_gradients, rank_world
from unmask.errors import UnmaskError
from unmask.io import dumps_strict
from unmask.model import resolve_device, save_model
from unmask.optim import warmup_cosine
from unmask.order.elbo import order_loss, rollout
from unmask.order.net import OrderConfig, OrderNet, save_order_net
from unmask.order.policy import Learned
from unmask.order.rl import Reward, outcome_loss, outcome_rollout
from unmask.runs import append_log, save_checkpoint, start_or_resume, truncate_log

# Settings a resumed run may change: more steps (the schedule stretches), other intervals, the machine.
RESUMABLE_CHANGES = ("steps", "eval_every", "ckpt_every", "device")


@dataclass
class OrderTrainConfig:
    """How to train an order policy (its shape: ``d_hidden``, ``tau``, ``budget``)."""

    budget: int = 4  # T: steps per generation the policy learns to spend (all left is revealed at step T)
    steps: int = 400  # optimizer steps
    batch_size: int = 16  # sequences per step in each process, each rolled out `samples` times
    samples: int = 4  # K: rollouts per sequence (the RLOO baseline averages the other K - 1)
    tau: float = 1.0  # τ: temperature of the max-normalised reveal probabilities
    step_cost: float = 0.0  # c per forward pass: nats under elbo (ELBO − c·NFE; 0: plain ELBO), reward under rl (success = 1)
    objective: str = "elbo"  # elbo: variational inference (Fox et al. 2026); rl: outcome reward success − c·NFE
    kl_start: float = 0.0  # rl only: β, weight of KL(P_ψ ‖ the untrained network), summed over positions and steps (0: none)
    d_hidden: int = 64  # hidden width of the order networks
    lr: float = 3e-3  # peak learning rate of the order networks
    warmup: int = 20  # linear warm-up steps (at most steps)
    min_lr_ratio: float = 0.1  # final learning rate as a fraction of the peak
    grad_clip: float = 1.0  # max global gradient norm
    finetune: bool = False  # also train the denoiser (θ): likelihood, KL and score-function terms
    finetune_lr: float = 1e-4  # peak learning rate of the denoiser with finetune
    eval_every: int = 100  # steps between validations (and exports)
    ckpt_every: int = 50  # steps between resumable checkpoints
    seed: int = 0  # seeds the networks' init and every batch and rollout
    device: str = "cpu"  # where the denoiser, the networks and the rollouts run

    def __post_init__(self) -> None:
        for name in ("budget", "steps", "batch_size", "d_hidden", "eval_every", "ckpt_every"):
            checks.integer(name, getattr(self, name), 1)
        if not (isinstance(self.samples, int) and self.samples >= 2):
            raise UnmaskError(f"samples must be >= 2 (the leave-one-out baseline needs another rollout), got {self.samples!r}")
        checks.integer("warmup", self.warmup, 0)
        if self.warmup > self.steps:  # the schedule would end part-way up its ramp, never at lr nor decayed
            raise UnmaskError(f"warmup must be <= steps (the learning rate peaks after warmup steps), got warmup {self.warmup} "
                              f"> steps {self.steps}")
        for name in ("tau", "lr", "finetune_lr", "grad_clip"):
            checks.positive(name, getattr(self, name))
        checks.between("min_lr_ratio", self.min_lr_ratio, 0, 1)
        if not (isinstance(self.step_cost, (int, float)) and 0 <= self.step_cost < math.inf):
            raise UnmaskError(f"step_cost must be >= 0 nats per forward pass (finite), got {self.step_cost}")
        if self.objective not in OBJECTIVES:
            raise UnmaskError(f"objective {self.objective!r}: choose one of {', '.join(OBJECTIVES)}")
        if not (isinstance(self.kl_start, (int, float)) and 0 <= self.kl_start < math.inf):
            raise UnmaskError(f"kl_start must be >= 0 (finite), got {self.kl_start}")
        if self.objective != "rl" and self.kl_start:
            raise UnmaskError("kl_start weighs the pull towards the untrained network in outcome RL: give --objective rl")
        if self.objective == "rl" and self.finetune:
            raise UnmaskError("--finetune trains the model on the ELBO's terms; with --objective rl the model stays frozen")


FINETUNED = "model"  # the run folder's sub-folder holding the fine-tuned model of a finetune run


@dataclass(frozen=True)
class Batch:
    """One training step's examples, each to be rolled out K times."""

    start: torch.Tensor  # (B, L) prompts: the mask id where the model generates
    clean: torch.Tensor  # (B, L) their x_0
    index: torch.Tensor  # (B,) the examples' numbers in the training set
    seeds: torch.Tensor  # (B·K,) one per rollout, sequence-major


@dataclass(frozen=True)
class Nets:
    """What an objective trains and reads."""

    prior: OrderNet  # P_ψ, the order policy being trained
    posterior: OrderNet  # Q_φ (the ELBO's; unused by outcome RL)
    reference: OrderNet | None  # P_start, the untrained network, for rl's KL term (None: no such term)
    success: Reward | None  # the task's check of decoded sequences (rl's reward)


def _elbo_step(denoiser, nets: Nets, batch: Batch, cfg: OrderTrainConfig) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Rollouts of Q_φ with the true tokens, and the ELBO surrogate (:mod:`unmask.order.elbo`); metrics per position."""
    roll = rollout(denoiser, batch.start, batch.clean, nets.prior, nets.posterior, cfg.budget, cfg.samples, batch.seeds)
    per_pos = roll.masked.clamp_min(1).double()
    return order_loss(roll, cfg.samples, cfg.finetune, cfg.step_cost), {
        "elbo": roll.elbo.detach() / per_pos, "kl": roll.kl.detach().sum(1) / per_pos,
        "loglik": roll.loglik.detach().sum(1) / per_pos, "mean_steps": roll.nfe.double(),
        "objective": roll.objective(cfg.step_cost).detach() / per_pos}


def _outcome_step(denoiser, nets: Nets, batch: Batch, cfg: OrderTrainConfig) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Rollouts of P_ψ with the model's own tokens, scored by the task (:mod:`unmask.order.rl`)."""
    roll = outcome_rollout(denoiser, batch.start, batch.index, nets.prior, cfg.budget, cfg.samples, batch.seeds,
                           nets.success, nets.reference)
    reward = roll.reward(cfg.step_cost)
    return outcome_loss(roll, cfg.samples, cfg.step_cost, cfg.kl_start), {
        "success": roll.success, "reward": reward, "mean_steps": roll.nfe.double(), "kl_start": roll.kl_start.detach(),
        "signal": (reward.view(-1, cfg.samples).std(1) > 0).double()}  # share of examples whose K rewards differ: 0 = no gradient


OBJECTIVES = {"elbo": _elbo_step, "rl": _outcome_step}  # --objective: one training step each


def train_order(
    denoiser,
    model_dir: str | os.PathLike,
    starts: torch.Tensor,
    cleans: torch.Tensor,
    cfg: OrderTrainConfig,
    out: str | os.PathLike,
    validate: Callable[[Learned], dict] | None = None,
    resume: bool = False,
    progress: bool = True,
    source: dict | None = None,
    success: Reward | None = None,
) -> OrderNet:
    """Train P_ψ (and Q_φ) for ``denoiser`` (loaded from ``model_dir``) into run directory ``out``.

    Args:
        starts: ``(N, L)`` prompts (mask id where the model generates); cleans: ``(N, L)`` their x_0.
        validate: scores the current ``learned`` policy (e.g. accuracy on held-out examples); every
            rank calls it, as an evaluator sharded over ranks needs.
        source: what identifies the inputs (e.g. hashes of the data file and the base model); a
            resumed run refuses others.
        success: ``objective="rl"``'s reward: ``(tokens (N, L), example numbers (N,)) → (N,)`` 1 where a
            decoded example is right (the task's own check), else 0.
    Returns the trained order policy P_ψ.
    """
    if starts.shape != cleans.shape:
        raise UnmaskError(f"starts {tuple(starts.shape)} and clean sequences {tuple(cleans.shape)} differ in shape")
    if cfg.objective == "rl" and success is None:
        raise UnmaskError("objective rl needs the task's check of a decoded example (success=)")
    rank, world = rank_world()
    out = Path(out)
    device = resolve_device(cfg.device)
    state = start_or_resume(out, cfg, resume, RESUMABLE_CHANGES, source)
    torch.manual_seed(cfg.seed)
    d_in = denoiser(starts[:1].to(denoiser.device)).hidden.shape[-1]
    prior = OrderNet(OrderConfig(d_in, cfg.d_hidden, cfg.tau, cfg.budget)).to(device)
    posterior = OrderNet(OrderConfig(d_in, cfg.d_hidden, cfg.tau, cfg.budget, posterior=True)).to(device)
    reference = None
    if cfg.kl_start:  # the untrained network, as initialised (also on resume: the init is seeded)
        reference = OrderNet(prior.cfg).to(device).requires_grad_(False)
        reference.load_state_dict(prior.state_dict())
    nets = Nets(prior, posterior, reference, success)
    if isinstance(denoiser, torch.nn.Module):  # an unmask model: moved, and trained with finetune
        denoiser = denoiser.to(device).eval()
        denoiser.requires_grad_(cfg.finetune)
    elif cfg.finetune:
        raise UnmaskError("finetune trains an unmask model's weights; a pretrained model (hf:, esmc:) stays frozen")
    elif torch.device(denoiser.device).type != device.type:
        raise UnmaskError(f"the model is on {denoiser.device}, training on {device}: load it on the training device")
    groups = [{"params": [*prior.parameters(), *posterior.parameters()], "peak": cfg.lr}]
    if cfg.finetune:
        groups.append({"params": list(denoiser.parameters()), "peak": cfg.finetune_lr})
    opt = torch.optim.AdamW([{"params": g["params"], "weight_decay": 0.0} for g in groups], lr=cfg.lr)
    gen = torch.Generator().manual_seed(cfg.seed * 1000 + rank)
    step, elapsed = 0, 0.0
    if state is not None:
        prior.load_state_dict(state["prior"])
        posterior.load_state_dict(state["posterior"])
        if cfg.finetune:
            denoiser.load_state_dict(state["denoiser"])
        opt.load_state_dict(state["optimizer"])
        gen.set_state(state["generators"][rank])
        step, elapsed = state["step"], state["elapsed"]
        if rank == 0:
            truncate_log(out, step)
    params = [p for g in groups for p in g["params"]]
    sums: dict[str, float] = dict(state.get("sums", {})) if state is not None else {}  # since the last log line
    bar = tqdm(total=cfg.steps, initial=step, disable=not progress or rank != 0, desc="train order", unit="step")
    start = time.time() - elapsed
    while step < cfg.steps:
        for group, g in zip(opt.param_groups, groups):
            group["lr"] = warmup_cosine(step, cfg.steps, g["peak"], cfg.warmup, cfg.min_lr_ratio)
        idx = torch.randint(len(starts), (cfg.batch_size,), generator=gen)
        seeds = torch.randint(2**62, (cfg.batch_size * cfg.samples,), generator=gen)  # (B·K,) one per rollout
        batch = Batch(starts[idx].to(device), cleans[idx].to(device), idx, seeds.to(device))
        loss, metrics = OBJECTIVES[cfg.objective](denoiser, nets, batch, cfg)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        average_gradients(params)
        torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip)
        opt.step()
        step += 1
        for key, value in metrics.items():
            sums[key] = sums.get(key, 0.0) + float(value.double().mean())
        sums["n"] = sums.get("n", 0) + 1
        bar.update(1)
        first = next(iter(metrics))  # elbo, or success
        bar.set_postfix({first: f"{float(metrics[first].double().mean()):.3f}"}, refresh=False)
        if step % cfg.eval_every == 0 or step == cfg.steps:
            _validate(prior, posterior, denoiser, model_dir, cfg, out, step, time.time() - start, sums, validate, rank, source)
            sums = {}
        if step % cfg.ckpt_every == 0 or step == cfg.steps:
            _checkpoint(prior, posterior, denoiser, opt, gen, cfg, out, step, time.time() - start, rank, world, source,
                        sums)
    bar.close()
    return prior.eval()


def _validate(prior, posterior, denoiser, model_dir, cfg, out: Path, step: int, elapsed: float, sums: dict,
              validate, rank: int, source: dict | None) -> None:
    """Every rank validates (a sharded evaluator gathers from all); rank 0 logs and exports the order policy
    into ``out`` (never a copy of the base model): decode with ``--order OUT``. With ``finetune``, the
    fine-tuned model goes to ``out/model`` and the policy records it as its base."""
    prior.eval()
    n = max(sums.get("n", 1), 1)
    record = {"step": step, "minutes": round(elapsed / 60, 2), "device": cfg.device,
              **{f"train_{k}": round(v / n, 5) for k, v in sums.items() if k != "n"}}
    if validate is not None:
        with torch.no_grad():
            record |= {f"val_{k}": v for k, v in validate(Learned(steps=cfg.budget, net=prior)).items()}
    prior.train()
    if rank != 0:
        return
    base = {"base_model": str(model_dir)}
    if cfg.finetune:
        save_model(denoiser, out / FINETUNED, {"order_train": record, "base_model": str(model_dir)})
        base = {"base_model": str(out / FINETUNED), artifacts.BASE_SHA256: artifacts.model_digest(out / FINETUNED)}
    elif (source or {}).get("model_sha256"):
        base[artifacts.BASE_SHA256] = source["model_sha256"]
    save_order_net(prior, out, {"train": record, **base, "train_config": asdict(cfg),
                                "source": source or {}})  # source: e.g. the base model's hash, checked by its users
    append_log(out, record)
    tqdm.write(dumps_strict(record))  # one JSON line, as the MDM trainer prints


def _checkpoint(prior, posterior, denoiser, opt, gen, cfg, out: Path, step: int, elapsed: float, rank: int, world: int,
                source: dict | None, sums: dict) -> None:
    """Everything needed to resume (rank 0 writes every rank's generator, and its metric sums since the last
    log line, so a resumed run's next line averages the same steps as a whole run's)."""
    gens = all_gather(gen.get_state())
    if rank == 0:
        state = {"prior": prior.state_dict(), "posterior": posterior.state_dict(), "optimizer": opt.state_dict(),
                 "generators": gens, "step": step, "elapsed": elapsed, "train_config": asdict(cfg), "source": source or {},
                 "sums": dict(sums)}
        if cfg.finetune:
            state["denoiser"] = denoiser.state_dict()
        save_checkpoint(out, state)
