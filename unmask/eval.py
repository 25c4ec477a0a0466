"""The one evaluator every task uses: decode a whole set, score it, report the same figures.

:func:`decode_all` decodes a set in batches on the model's device, giving sequence k the seed
``seed + k`` so results never depend on the batch size; under ``torchrun --nproc_per_node N`` it
shards the set across the processes (sequence k on rank k mod N) and merges them back, identical to
one process. :func:`evaluate` adds the task's scoring; :func:`compare` runs many policies on many sets.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path

import torch
from tqdm import tqdm

from unmask import artifacts, dist
from unmask.decode import DecodeResult, Policy, TokenRule, decode, policy_spec
from unmask.denoiser import Denoiser
from unmask.errors import UnmaskError
from unmask.policies import parse_policy  # every family registered: a spec parses whatever was imported before
from unmask.runs import RowCache, code_digest, file_digest
from unmask.tasks.base import Task


@dataclass(frozen=True)
class Run:
    """A decoded dataset and how long it took."""

    result: DecodeResult  # decoded tokens, NFE, reveal steps and extra passes of every sequence (on the CPU)
    seconds: float  # wall time of the decoding


def decode_all(
    denoiser: Denoiser,
    tokens: torch.Tensor,
    policy: Policy,
    rule: TokenRule = TokenRule(),
    batch_size: int = 250,
    seed: int = 0,
    progress: bool = False,
    unit: str = "sequence",
) -> Run:
    """Decode ``tokens`` ``(N, L)`` in batches on ``denoiser.device``; sequence k always gets seed
    ``seed + k``, so results depend neither on ``batch_size`` nor on the number of processes."""
    rank, world = dist.rank_world()
    mine = torch.arange(rank, len(tokens), world)  # (n,) this process's share of the set
    parts = []
    start = time.perf_counter()
    with tqdm(total=len(mine), disable=not progress or rank != 0, desc="decode", unit=unit) as bar:  # rank 0's share
        for lo in range(0, len(mine), batch_size):
            index = mine[lo : lo + batch_size]
            res = decode(denoiser, tokens[index].to(denoiser.device), policy, rule, seeds=(index + seed).to(denoiser.device))
            parts.append((index, DecodeResult(*(getattr(res, f.name).cpu() for f in fields(DecodeResult)))))
            bar.update(len(index))
    pieces = [p for shard in dist.all_gather(parts) for p in shard]  # every rank's batches
    seconds = time.perf_counter() - start
    if not pieces:  # an empty set
        empty = torch.zeros(0, dtype=torch.long)
        return Run(DecodeResult(tokens.clone(), empty, torch.full(tokens.shape, -1), empty), seconds)
    order = torch.cat([index for index, _ in pieces]).argsort()  # back to the order of the set
    return Run(DecodeResult(**{f.name: torch.cat([getattr(r, f.name) for _, r in pieces])[order]
                               for f in fields(DecodeResult)}), seconds)


def evaluate(
    task: Task,
    denoiser: Denoiser,
    examples,
    policy: Policy,
    rule: TokenRule = TokenRule(),
    batch_size: int = 250,
    seed: int = 0,
    progress: bool = False,
    show: int = 0,
) -> dict:
    """Decode every example of ``task``; accuracy, NFE, extra passes and speed.

    ``show``: also list the first ``show`` examples as decoded (the task's fields plus ``correct`` and
    ``nfe``) under ``"examples"``."""
    run = decode_all(denoiser, task.encode(examples), policy, rule, batch_size, seed, progress, task.unit)
    correct = task.score(run.result.tokens, examples)
    nfe = run.result.nfe.double()
    n = len(correct)
    out = {
        "n": n,
        "accuracy": float(correct.double().mean()),
        "mean_nfe": float(nfe.mean()),
        "min_nfe": int(nfe.min()),
        "max_nfe": int(nfe.max()),
        "seconds": round(run.seconds, 3),
        "examples_per_s": round(n / max(run.seconds, 1e-9), 2),
    }
    if run.result.extra_passes.any():  # passes a policy spent itself, reported apart from NFE
        out["extra_passes"] = float(run.result.extra_passes.double().mean())
    if show:
        shown = task.show(run.result.tokens, examples, show)
        out["examples"] = [{**ex, "correct": bool(ok), "nfe": int(k)} for ex, ok, k in zip(shown, correct, run.result.nfe)]
    return out


def compare(task: Task, denoiser: Denoiser, sets: dict, policies: list, batch_size: int = 250, progress: bool = True,
            cache: RowCache | None = None) -> list[dict]:
    """Evaluate every policy (object or spec string) on every named set; one row per (set, policy).

    ``cache``: rows already measured in its context are taken from it, new ones stored as they finish
    (so an interrupted benchmark resumes). A row is keyed by the set's name and the policy's spec, so
    the context must name the examples and whatever a policy loads (see :func:`results_cache`)."""
    rows = []
    for set_name, examples in sets.items():
        for policy in tqdm(policies, desc=set_name, disable=not progress, unit="policy"):
            policy = parse_policy(policy) if isinstance(policy, str) else policy
            spec = policy_spec(policy)
            if cache is not None and any(f.metadata.get("inner") for f in fields(policy)):
                raise ValueError(f"{spec}: a wrapping policy's spec does not name what it wraps; it cannot be cached")
            key = {"set": set_name, "policy": spec, "batch_size": batch_size}
            row = cache.get(key) if cache is not None else None
            if row is None:
                row = {"set": set_name, "policy": spec, **evaluate(task, denoiser, examples, policy, batch_size=batch_size)}
                if cache is not None:
                    cache.put(key, row)
            rows.append(row)
    return rows


ARTIFACT_FILES = {name for kind in (artifacts.MODEL, artifacts.MI_HEAD, artifacts.ORDER_POLICY)
                  for name in (kind.weights, kind.meta)}


def results_cache(out: Path, name: str, model_dir: str | os.PathLike, files: list, **context) -> RowCache:
    """The :class:`RowCache` of benchmark ``name`` (``out/name.partial.jsonl``).

    Its context: the digests of every file the model directory holds (weights, MI head, order
    policy: what a policy may load), of the ``unmask`` code, of the example ``files`` (a missing one
    recorded as missing) and ``context`` (the settings that change rows, threads included where rows
    carry timings)."""
    model_files = sorted(p for p in Path(model_dir).iterdir() if p.is_file() and p.name in ARTIFACT_FILES)
    return RowCache(Path(out) / f"{name}.partial.jsonl", {
        "model": {p.name: file_digest(p) for p in model_files}, "code": code_digest(),
        "files": {str(f): file_digest(f) if Path(f).is_file() else None for f in files}, **context})


def frontier(rows: list[dict], n: float, key: str = "accuracy %") -> float | None:
    """Best ``row[key]`` among ``rows`` at mean NFE ≤ ``n`` (None if none is that cheap): the step
    frontier of a family of policies."""
    ok = [r[key] for r in rows if r["mean_nfe"] <= n + 1e-9]
    return max(ok) if ok else None


def mixture_frontier(rows: list[dict], n: float, key: str = "accuracy %") -> float | None:
    """The best ``row[key]`` a per-example coin flip between two of ``rows`` reaches at mean NFE ``n``:
    the upper concave hull of (mean NFE, key) at ``n``, flat past the best row (None below the cheapest).

    A stricter comparator than :func:`frontier`: a mixture of two settings is itself a policy, so a
    method that beats only the step frontier between two sweep points has not beaten the family."""
    return hull_value(upper_hull([(r["mean_nfe"], r[key]) for r in rows]), n)


def upper_hull(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The upper concave hull of (cost, value) points that rises with cost, cheapest first."""
    hull: list[tuple[float, float]] = []
    for x, y in sorted(points, key=lambda p: (p[0], -p[1])):  # by cost, the best first at equal cost
        if hull and y <= hull[-1][1]:
            continue  # dominated: no better than something as cheap (so no two hull points share a cost)
        while (len(hull) >= 2
               and (hull[-1][1] - hull[-2][1]) * (x - hull[-2][0]) <= (y - hull[-2][1]) * (hull[-1][0] - hull[-2][0])):
            hull.pop()  # under the chord from hull[-2] to this point
        hull.append((x, y))
    return hull


def hull_value(hull: list[tuple[float, float]], n: float) -> float | None:
    """The value of an :func:`upper_hull` at cost ``n`` (None below its cheapest point, flat past its last)."""
    if not hull or n < hull[0][0] - 1e-9:
        return None
    for (x0, y0), (x1, y1) in zip(hull, hull[1:]):
        if n <= x1:
            return y0 + (y1 - y0) * max(n - x0, 0.0) / (x1 - x0)
    return hull[-1][1]


Family = tuple[torch.Tensor, torch.Tensor]  # (solved, nfe), each (R, N): row r's outcome and passes on example n


def bootstrap_weights(n_examples: int, resamples: int, seed: int = 0) -> torch.Tensor:
    """``(1 + B, N)`` times each example is drawn: row 0 the examples as they are, then ``resamples``
    draws of N with replacement, each ``torch.randint(N, (N,))`` from ``torch.Generator().manual_seed(seed)``."""
    gen = torch.Generator().manual_seed(seed)
    rows = [torch.ones(n_examples, dtype=torch.long)]
    rows += [torch.bincount(torch.randint(n_examples, (n_examples,), generator=gen), minlength=n_examples)
             for _ in range(resamples)]
    return torch.stack(rows).double()


def _resampled(weights: torch.Tensor, family: Family) -> tuple[torch.Tensor, torch.Tensor]:
    """Each row's accuracy (points) and mean NFE under each draw of ``weights``: two ``(1 + B, R)``."""
    solved, nfe = family
    if solved.shape != nfe.shape or solved.shape[1] != weights.shape[1]:
        raise ValueError(f"solved {tuple(solved.shape)} and nfe {tuple(nfe.shape)} "
                         f"must both be (rows, {weights.shape[1]} examples)")
    n = weights.shape[1]
    return 100 * weights @ solved.double().T / n, weights @ nfe.double().T / n


def _interval(gaps: torch.Tensor, level: float) -> dict | None:
    """Summary of ``gaps`` ``(1 + B,)`` (NaN: undefined in that draw): the drawn value, the percentile
    interval and the share ahead over the resamples where it is defined, and that share (None if the
    drawn value is undefined)."""
    drawn, boot = gaps[0], gaps[1:]
    ok = boot[~boot.isnan()]
    if drawn.isnan():
        return None
    if not len(ok):  # no resamples: the interval is the drawn value
        ok = drawn[None]
    lo, hi = torch.quantile(ok, torch.tensor([(1 - level) / 2, (1 + level) / 2], dtype=torch.float64)).tolist()
    return {"gap": float(drawn), "low": lo, "high": hi, "share_ahead": float((ok > 0).double().mean()),
            "defined": float((~boot.isnan()).double().mean()) if len(boot) else 1.0}


def mixture_gap_interval(base: Family, other: Family, points: list[float], resamples: int = 2000, level: float = 0.95,
                         seed: int = 0) -> list[dict]:
    """How far ``other``'s mixture frontier lies above ``base``'s at each mean NFE of ``points``, in
    accuracy points, with a paired bootstrap percentile interval (Efron 1979): the examples are resampled
    with replacement (:func:`bootstrap_weights`), the same draw for both families, and both hulls rebuilt
    from the resampled rows.

    ``base`` and ``other``: ``(solved, nfe)`` of one family, each ``(R, N)``: whether row r (a sweep
    setting) solved example n, and the passes it took; every row of both on the same N examples.
    Returns per point the gap on the examples as drawn, the interval's ends, the share of resamples
    where ``other`` is ahead, and ``defined``: the share of resamples where both families have a row
    that cheap (the others are left out of the interval, so read a point with ``defined`` below 1 with
    care). Points where the drawn gap is undefined are left out."""
    weights = bootstrap_weights(base[0].shape[1], resamples, seed)

    def hulls(family: Family) -> list[list[tuple[float, float]]]:
        acc, cost = _resampled(weights, family)  # (1 + B, R) each
        return [upper_hull(list(zip(c.tolist(), a.tolist()))) for c, a in zip(cost, acc)]

    hb, ho = hulls(base), hulls(other)
    out = []
    for n in points:
        gaps = torch.tensor([float("nan") if (b := hull_value(x, n)) is None or (o := hull_value(y, n)) is None else o - b
                             for x, y in zip(hb, ho)], dtype=torch.float64)  # (1 + B,)
        if (summary := _interval(gaps, level)) is not None:
            out.append({"nfe": n, **summary})
    return out


def row_gap_interval(base: Family, other: Family, resamples: int = 2000, level: float = 0.95, seed: int = 0) -> list[dict]:
    """Each row of ``other`` against ``base``'s mixture frontier at that row's own mean NFE (accuracy
    points), with the paired bootstrap interval of :func:`mixture_gap_interval`: in every draw the row's
    accuracy minus ``base``'s hull at the row's mean NFE in that draw. Unlike a gap read at a fixed NFE,
    it is defined for a family of one row, wherever ``base`` has a row as cheap. Returns per row its
    index, its mean NFE and accuracy as drawn, and the summary of :func:`mixture_gap_interval`."""
    weights = bootstrap_weights(base[0].shape[1], resamples, seed)
    acc_b, cost_b = _resampled(weights, base)
    acc_o, cost_o = _resampled(weights, other)  # (1 + B, R) each
    hb = [upper_hull(list(zip(c.tolist(), a.tolist()))) for c, a in zip(cost_b, acc_b)]
    out = []
    for r in range(acc_o.shape[1]):
        gaps = torch.tensor([float("nan") if (b := hull_value(h, float(c))) is None else float(a) - b
                             for h, c, a in zip(hb, cost_o[:, r], acc_o[:, r])], dtype=torch.float64)  # (1 + B,)
        if (summary := _interval(gaps, level)) is not None:
            out.append({"row": r, "nfe": float(cost_o[0, r]), "accuracy %": float(acc_o[0, r]), **summary})
    return out


def family_outcomes(rows: list[dict], n: int) -> Family:
    """``(solved, nfe)``, each ``(R, n)``, of benchmark rows that keep their examples' outcomes (``row["solved"]``:
    a string of 0/1, ``row["nfe"]``: a list), on their first ``n`` examples: a family of
    :func:`mixture_gap_interval`."""
    solved = torch.tensor([[c == "1" for c in r["solved"][:n]] for r in rows])  # (R, n)
    return solved, torch.tensor([r["nfe"][:n] for r in rows], dtype=torch.float64)


def regapped(path: Path, points: list[float], resamples: int, gap_rows: Callable[[list[dict], list[float], int], dict]) -> dict:
    """A benchmark's saved result (JSON at ``path``, with its ``rows``) with its gaps recomputed:
    ``gap_rows(rows, points, resamples)`` replaces what it returns, and ``points`` and ``resamples`` are recorded."""
    if not Path(path).is_file():
        raise UnmaskError(f"no {path} to recompute")
    result = json.loads(Path(path).read_text())
    return result | {"points": points, "resamples": resamples, **gap_rows(result["rows"], points, resamples)}


def gap_summary(g: dict) -> dict:
    """The shown figures of one bootstrapped gap of :func:`mixture_gap_interval` or :func:`row_gap_interval`."""
    return {"gap": round(g["gap"], 1), "95% interval": f"{g['low']:+.1f}…{g['high']:+.1f}", "low": round(g["low"], 2),
            "high": round(g["high"], 2), "share of resamples ahead": round(g["share_ahead"], 3),
            "defined": round(g["defined"], 3)}


def markdown_table(rows: list[dict], columns: list[str]) -> str:
    """A Markdown table of ``rows`` restricted to ``columns`` (floats to 3 significant places; a ``|``
    inside a cell escaped, so that it stays one cell)."""

    def cell(v) -> str:
        if isinstance(v, float):
            return f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"
        return "" if v is None else str(v).replace("|", "\\|")

    lines = ["| " + " | ".join(c.replace("|", "\\|") for c in columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(r.get(c)) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


def shown_path(path: str | os.PathLike) -> str:
    """``path`` as a results file should record it: relative to the working directory when inside it,
    so that committed results carry no machine-specific prefix."""
    full = Path(path).resolve()
    return str(full.relative_to(Path.cwd())) if full.is_relative_to(Path.cwd()) else str(path)
