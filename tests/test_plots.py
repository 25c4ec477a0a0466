"""Plots: the log axis of accuracy-vs-NFE plots is labelled where the data lie."""

from __future__ import annotations

import pytest

from unmask.plots import _plain_log_ticks, pyplot


def labels(lo: float, hi: float) -> list[str]:
    """The x tick labels a log axis over [lo, hi] gets."""
    plt = pyplot()
    fig, ax = plt.subplots()
    try:
        ax.set_xscale("log")
        ax.plot([lo, hi], [0, 1])
        _plain_log_ticks(ax.xaxis, lo, hi)
        fig.canvas.draw()
        return [t.get_text() for t in ax.get_xticklabels() if t.get_text() and lo <= float(t.get_text()) <= hi]
    finally:
        plt.close(fig)


@pytest.mark.parametrize(("lo", "hi", "want"), [(3, 10, ["3", "4", "6", "8"]), (1, 100, ["1", "2", "4", "8", "16", "32", "64"])])
def test_log_axis_is_labelled_in_plain_numbers_where_the_data_lie(lo, hi, want):
    # Bugs caught: a narrow range (fixed-pass tables: 3–10 passes) left with one labelled tick, or a
    # wide one crowded with the in-between labels.
    assert labels(lo, hi) == want
