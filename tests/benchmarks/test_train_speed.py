"""benchmarks/sudoku/train_speed.py: every variant times real steps and writes its rows (tiny sizes)."""

from __future__ import annotations

import json
import sys

import torch
import torch.nn.functional as F

import unmask.model
from tests.benchmarks.scripts import load_script


def test_train_speed_runs_each_variant_on_its_kernel_and_restores_the_attention(tmp_path, monkeypatch):
    # Bugs caught: the fused variant's patch left in place after it ran (every later model would train
    # on the slow kernel), a variant timed on the wrong kernel or without autocast, rows not written.
    speed = load_script("train_speed")
    fused_dtypes: dict[str, set] = {}
    kernel = F.scaled_dot_product_attention

    def recording(q, k, v, **kw):
        fused_dtypes.setdefault(current[0], set()).add(q.dtype)
        return kernel(q, k, v, **kw)

    current = [""]
    real_time = speed.time_variant

    def timed(args, variant):
        current[0] = variant
        return real_time(args, variant)

    monkeypatch.setattr(F, "scaled_dot_product_attention", recording)
    monkeypatch.setattr(speed, "time_variant", timed)
    real = unmask.model.attention
    out = tmp_path / "speed"
    monkeypatch.setattr(sys, "argv", ["train_speed.py", "--task", "sudoku", "--n-layers", "1", "--batch-size", "4",
                                      "--steps", "1", "--warmup", "0", "--variants", "bf16", "bf16-fused", "fp32",
                                      "--out", str(out)])
    speed.main()
    rows = json.loads(out.with_suffix(".json").read_text())
    assert [r["variant"] for r in rows] == ["bf16", "bf16-fused", "fp32"]
    assert all(r["n_layers"] == 1 and r["batch_size"] == 4 and r["ms_per_step"] > 0 for r in rows)
    # bf16 writes attention out (the fused kernel never sees it); bf16-fused hands it bfloat16; fp32 float32.
    assert fused_dtypes == {"bf16-fused": {torch.bfloat16}, "fp32": {torch.float32}}
    assert unmask.model.attention is real
    assert "| sudoku | bf16-fused |" in out.with_suffix(".md").read_text()
