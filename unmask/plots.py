"""PNG figures: MI maps and accuracy-vs-NFE Pareto plots (needs the ``plots`` extra: matplotlib)."""

from __future__ import annotations

import os

import numpy as np

from unmask.errors import UnmaskError
from unmask.io import atomic_write


def pyplot():
    """matplotlib.pyplot on the Agg backend, or a clear error if matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UnmaskError("plots need matplotlib: pip install 'unmask[plots]'") from None
    return plt


def plot_mi_map(board, maps: dict[str, np.ndarray], position: int, out: str | os.PathLike) -> None:
    """For each named ``(L, L)`` MI matrix: the matrix over the positions the task draws, and the MI
    of every position with ``position``, laid out on the task's :class:`~unmask.tasks.base.Board`.

    The board's labels (givens) are written in their cells; ``position`` is outlined.
    """
    plt = pyplot()
    rows, cols = board.shape
    cells = board.positions.numpy()  # (rows·cols,) sequence position per cell, -1 = empty
    shown = cells[cells >= 0]  # the positions drawn, in board order
    w = 4.6 * min(2.0, max(1.0, cols / (2 * rows)))  # inches per map: wider for a long, flat board
    fig, axes = plt.subplots(2, len(maps), figsize=(w * len(maps), 0.98 * w + w * rows / cols + 0.5), squeeze=False)
    where = int(np.flatnonzero(cells == position)[0])
    r, c = divmod(where, cols)
    for col, (name, mi) in enumerate(maps.items()):
        ax = axes[0, col]
        im = ax.imshow(mi[np.ix_(shown, shown)], cmap="magma")
        ax.set_title(f"{name}: MI matrix ({len(shown)}×{len(shown)})")
        if board.block:
            for k in range(0, len(shown) + 1, cols):  # one line per board row
                ax.axhline(k - 0.5, color="w", lw=0.3)
                ax.axvline(k - 0.5, color="w", lw=0.3)
        fig.colorbar(im, ax=ax, fraction=0.046, label="nats")
        ax = axes[1, col]
        values = np.where(cells >= 0, mi[position][np.maximum(cells, 0)], np.nan).reshape(rows, cols)
        values[r, c] = np.nan
        im = ax.imshow(values, cmap="viridis")
        if board.block:
            for k in range(0, max(rows, cols) + 1, board.block):
                ax.axhline(k - 0.5, color="k", lw=2)
                ax.axvline(k - 0.5, color="k", lw=2)
        for i, text in enumerate(board.labels):
            if text:
                ax.text(i % cols, i // cols, text, ha="center", va="center", color="w", fontsize=9)
        ax.add_patch(plt.Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, ec="red", lw=2.5))
        ax.set_title(f"{name}: MI with the outlined position\n(row {r + 1}, column {c + 1})")
        ax.set_xticks([])
        ax.set_yticks([])
        fig.colorbar(im, ax=ax, fraction=0.046, label="nats")
    fig.tight_layout()
    save_png(fig, out)


def save_png(fig, out: str | os.PathLike) -> None:
    """Write ``fig`` as a PNG atomically (parent folders made); one-line UnmaskError if it cannot be written."""
    plt = pyplot()
    try:
        atomic_write(out, lambda tmp: fig.savefig(tmp, dpi=110, format="png"))
    finally:
        plt.close(fig)


def _plain_log_ticks(axis, lo: float, hi: float) -> None:
    """Ticks at powers of two labelled as plain numbers (1, 2, 4, …), no crowded minor labels; over
    a range narrower than 16× (data from ``lo`` to ``hi``) also at 1.5 × each power (3, 6, 12, …)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis.set_major_locator(LogLocator(base=2, subs=(1.0, 1.5) if hi < 16 * lo else (1.0,)))
    axis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
    axis.set_minor_formatter(NullFormatter())


def plot_pareto(rows: list[dict], out: str | os.PathLike, title: str, y: str = "accuracy %",
                ylabel: str = "exact-match accuracy %") -> None:
    """Mean NFE (log x) vs ``row[y]`` (accuracy by default), one marker per row, grouped by
    ``row['set']`` and policy name."""
    plt = pyplot()
    sets = sorted({r["set"] for r in rows})
    ncols = min(3, len(sets))  # panels per row
    nrows = -(-len(sets) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(6.5 * ncols, 5 * nrows), squeeze=False)
    for ax in axes.flat[len(sets):]:
        ax.set_visible(False)
    # one colour and style per name, in every panel
    series = {name: i for i, name in enumerate(dict.fromkeys(r["policy"].split(":")[0] for r in rows))}
    for ax, s in zip(axes.flat, sets):
        by_name: dict[str, list[dict]] = {}
        for r in rows:
            if r["set"] == s:
                by_name.setdefault(r["policy"].split(":")[0], []).append(r)
        for name, rs in by_name.items():
            i = series[name]
            rs = sorted(rs, key=lambda r: r["mean_nfe"])
            style = ("o-", "s--", "^:", "D-.")[i // 10 % 4]  # the colour cycle repeats after 10 series
            ax.plot([r["mean_nfe"] for r in rs], [r[y] for r in rs], style, color=f"C{i % 10}", label=name)
        ax.set_xscale("log")
        xs = [r["mean_nfe"] for r in rows if r["set"] == s]
        _plain_log_ticks(ax.xaxis, min(xs), max(xs))
        ax.set_xlabel("mean NFE (forward passes per sequence)")
        ax.set_ylabel(ylabel)
        ax.set_title(f"{title}: {s}")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    save_png(fig, out)
