"""Training data for the MI estimator: states along real decoding trajectories, with exact MI rows.

Each shard decodes a slice of prompts with the base model, picks one state per trajectory at a
uniformly random step (so every mask ratio the decoder visits is represented), chooses a random
subset of masked rows, and stores the exact MI of those rows (:func:`unmask.mi.exact_mi`).
Shard k depends only on (seed, k): a build killed half way resumes by skipping finished shards
and ends byte-identical to an uninterrupted one; shards can be split over worker processes.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from unmask import checks
from unmask.decode import decode, parse_policy
from unmask.denoiser import Denoiser
from unmask.errors import UnmaskError
from unmask.io import atomic_write, dumps_strict, make_dir
from unmask.mi.exact import exact_mi

PROBE_BATCH = 1024  # probe sequences per forward pass, unless a build says otherwise


@dataclass(frozen=True)
class MIDataConfig:
    """What states to collect."""

    states: int = 2000  # states in total (one per decoded prompt)
    shard_size: int = 100  # states per shard file
    rows: int = 0  # MI rows per state (random masked positions; 0 = every masked position)
    eps: float = 1e-3  # skip probe values with P < eps (error bound stored per row)
    policy: str = "sequential"  # policy whose trajectories the states are taken from
    seed: int = 0  # seeds prompt choice, state step and row choice of every shard

    def __post_init__(self) -> None:
        checks.integer("states", self.states, 1)
        checks.integer("shard_size", self.shard_size, 1)
        checks.integer("rows", self.rows, 0)
        checks.integer("seed", self.seed, 0)
        checks.between("eps", self.eps, 0, 1, "[)")
        parse_policy(self.policy)

    @property
    def shards(self) -> int:
        return -(-self.states // self.shard_size)


def shard_path(out: Path, k: int) -> Path:
    return out / f"shard-{k:05d}.npz"


def states_along(denoiser, start: torch.Tensor, policy: str, seeds: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """``(n, L)`` one state per prompt of ``start``, at a uniformly random step of its trajectory under ``policy``."""
    traj = decode(denoiser, start, parse_policy(policy), seeds=seeds)
    step = (torch.rand(len(start), generator=gen) * traj.nfe).long()  # (n,) a step in [0, nfe)
    masked = traj.reveal_step >= step[:, None]  # revealed at or after that step = still masked then
    return torch.where(masked, denoiser.mask_id, traj.tokens)


def build_shard(denoiser, prompts: torch.Tensor, cfg: MIDataConfig, k: int,
                probe_batch: int = PROBE_BATCH) -> dict[str, np.ndarray]:
    """States and exact MI rows of shard ``k`` (deterministic in ``cfg.seed`` and ``k``; ``probe_batch``
    probe sequences go through the model at a time)."""
    gen = torch.Generator().manual_seed(cfg.seed * 100_003 + k)
    n = min(cfg.shard_size, cfg.states - k * cfg.shard_size)
    idx = torch.randint(len(prompts), (n,), generator=gen)
    tokens = states_along(denoiser, prompts[idx], cfg.policy, idx, gen)
    masked = tokens == denoiser.mask_id
    score = torch.rand(tokens.shape, generator=gen).masked_fill(~masked, -1.0)
    rows = masked if cfg.rows == 0 else masked & (score.argsort(1, descending=True).argsort(1) < cfg.rows)
    res = exact_mi(denoiser, tokens, rows=rows, eps=cfg.eps, batch_size=probe_batch)
    return {
        "tokens": tokens.numpy().astype(np.int32),
        "prompt": idx.numpy().astype(np.int64),
        "rows": res.rows.numpy(),
        "mi": res.raw.numpy().astype(np.float32),
        "joint": res.joint.numpy().astype(np.float32),  # the MI of each row's probe joint (exact_mi's ``joint``)
        "influence": res.influence.numpy().astype(np.float32),  # DEMASK's total-variation influence (exact_mi's ``influence``)
        "entropy": res.entropy.numpy().astype(np.float32),
        "bound": res.bound.numpy().astype(np.float32),
        "passes": res.passes.numpy().astype(np.int32),
    }


def _write_shard(out: Path, k: int, arrays: dict[str, np.ndarray]) -> None:
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    atomic_write(shard_path(out, k), lambda p: Path(p).write_bytes(buf.getvalue()))


def _worker(load, prompts, cfg: MIDataConfig, out: Path, probe_batch: int, k: int) -> int:
    torch.set_num_threads(1)
    _write_shard(out, k, build_shard(load(), prompts, cfg, k, probe_batch))
    return k


MANIFEST = "manifest.json"  # what the shards of a directory were built from


def _check_manifest(out: Path, manifest: dict) -> None:
    """Record what the shards are built from; refuse to resume a build with other inputs."""
    path = out / MANIFEST
    if path.is_file():
        old = json.loads(path.read_text())
        if old != manifest:
            diff = sorted(k for k in set(old) | set(manifest) if old.get(k) != manifest.get(k))
            hint = f" (it was built with --probe-batch {old.get('probe_batch', PROBE_BATCH)})" if "probe_batch" in diff else ""
            raise UnmaskError(f"{out} holds MI data built with other {diff}{hint}; use another --out")
    else:
        atomic_write(path, lambda p: Path(p).write_text(dumps_strict(manifest, indent=1) + "\n"))


def build_mi_data(
    load: Callable[[], Denoiser], prompts: torch.Tensor, cfg: MIDataConfig, out: str | os.PathLike, workers: int = 1,
    progress: bool = True, source: dict | None = None, probe_batch: int = PROBE_BATCH, denoiser: Denoiser | None = None,
) -> int:
    """Write every missing shard into ``out``; returns how many were built now.

    Args:
        load: a picklable callable returning the denoiser (each worker loads its own copy).
        prompts: ``(N, L)`` starting states (e.g. puzzles) the trajectories start from.
        source: what identifies the model and prompts (e.g. file hashes), kept in the manifest.
        probe_batch: probe sequences per forward pass (a resumed build must keep it: see the manifest).
        denoiser: the model already loaded (one worker only; else ``load()`` is called).
    """
    out = make_dir(out)
    digest = hashlib.sha256(prompts.numpy().tobytes()).hexdigest()[:16]
    # Another probe batch can change the last bits of a forward pass, so a build keeps its own (recorded only
    # when not the default, so that builds made before it was recorded still resume).
    batch = {} if probe_batch == PROBE_BATCH else {"probe_batch": probe_batch}
    _check_manifest(out, {"config": asdict(cfg), "prompts_sha256": digest, **(source or {}), **batch})
    todo = [k for k in range(cfg.shards) if not shard_path(out, k).is_file()]
    size = lambda k: min(cfg.shard_size, cfg.states - k * cfg.shard_size)  # noqa: E731  states in shard k
    done = cfg.states - sum(size(k) for k in todo)
    bar = tqdm(total=cfg.states, initial=done, disable=not progress, desc="mi data", unit="state")
    if workers > 1:
        with ProcessPoolExecutor(workers) as pool:
            for k in pool.map(partial(_worker, load, prompts, cfg, out, probe_batch), todo):
                bar.update(size(k))
    elif todo:
        denoiser = denoiser or load()
        for k in todo:
            _write_shard(out, k, build_shard(denoiser, prompts, cfg, k, probe_batch))
            bar.update(size(k))
    bar.close()
    return len(todo)


def data_cost(cfg: MIDataConfig, prompts: torch.Tensor, denoiser: Denoiser) -> str:
    """What a build will cost, said before it starts: the trajectory passes and the probe passes of
    every state, at most (the ε-truncation skips the values below ``cfg.eps``, so fewer are spent)."""
    masked = int((prompts == denoiser.mask_id).sum(1).max())  # the most masked positions a prompt has
    values = denoiser.vocab_size - (0 <= denoiser.mask_id < denoiser.vocab_size)  # values a position can take
    rows = min(cfg.rows, masked) if cfg.rows else masked
    per_state = 1 + rows * values
    return (f"mi data: {cfg.states:,} states in {cfg.shards} shards; each state costs its {cfg.policy} trajectory "
            f"(at most {masked} passes) and at most 1 + {rows} rows x {values} values = {per_state:,} probe passes: "
            f"at most {cfg.states * (per_state + masked):,} forward passes in all (eps = {cfg.eps:g} skips the "
            f"values less likely than it)")


def passes_spent(directory: str | os.PathLike) -> int:
    """The probe passes the finished shards of a data directory spent (base passes included)."""
    return sum(int(np.load(f)["passes"].sum()) for f in sorted(Path(directory).glob("shard-*.npz")))


def load_mi_data(directory: str | os.PathLike) -> dict[str, torch.Tensor]:
    """All shards of a data directory, concatenated (in shard order)."""
    d = Path(directory)
    if not (d / MANIFEST).is_file():
        raise UnmaskError(f"{directory}: no MI data (build it with `unmask mi data`)")
    cfg = MIDataConfig(**json.loads((d / MANIFEST).read_text())["config"])
    files = [shard_path(d, k) for k in range(cfg.shards)]
    missing = sum(not f.is_file() for f in files)
    if missing:  # an interrupted build: fitting on a silent subset would misreport the head
        raise UnmaskError(f"{directory}: {missing} of {cfg.shards} MI data shards missing (rerun `unmask mi data`; it resumes)")
    parts = [dict(np.load(f)) for f in files]
    return {key: torch.from_numpy(np.concatenate([p[key] for p in parts])) for key in common_keys(parts)}


def common_keys(parts: list[dict]) -> list[str]:
    """The arrays every part holds, in the first part's order (shards built before a target was stored lack it)."""
    return [key for key in parts[0] if all(key in p for p in parts)]


def load_mi_datasets(directories: list, model_sha256: str | None = None) -> dict[str, torch.Tensor]:
    """Several data directories (e.g. sequential and parallel states) as one: they must come from the
    same model (``model_sha256`` in their manifests; if given, this one) and hold states of the same length."""
    parts = [load_mi_data(d) for d in directories]
    models = {json.loads((Path(d) / MANIFEST).read_text()).get("model_sha256") for d in directories}
    if len(models) > 1:
        raise UnmaskError(f"{', '.join(map(str, directories))}: MI data built from different models; fit one head per model")
    if model_sha256 is not None and models != {None} and models != {model_sha256}:  # (old manifests name no model)
        raise UnmaskError(f"{', '.join(map(str, directories))}: MI data built with another model than the one given; "
                          "build it with this model (unmask mi data --model)")
    for d, p in zip(directories[1:], parts[1:]):
        if p["tokens"].shape[1:] != parts[0]["tokens"].shape[1:]:
            raise UnmaskError(f"{d}: MI data of another shape than {directories[0]}")
    return {k: torch.cat([p[k] for p in parts]) for k in common_keys(parts)}
