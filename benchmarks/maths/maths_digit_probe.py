"""Does the maths MDM compute? Per-digit accuracy of the first equation's result from its operands.

    python benchmarks/maths/maths_digit_probe.py                      # the shipped model, the standard val split

For each problem the answer region is given up to the first ``=`` (the operands and the operator) and
masked from there to the end, so no later copy of the result can be read off; one forward pass, then
the argmax at each digit of the result is scored, grouped by operator and by place (0 = units). A
model that only copies scores ~10 % on units digits (chance); one that adds scores ~100 %. Writes
``maths_digit_probe.{json,md}`` under ``--out``.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import defaultdict
from pathlib import Path

import torch

from unmask.eval import markdown_table, shown_path
from unmask.model import load_model
from unmask.tasks.maths.data import problems_or_standard
from unmask.tasks.maths.task import DEFAULT_MODEL, MathsTask, shape

FIRST_EQUATION = re.compile(r"(\d+)([+*-])(\d+)=(\d+)\.")


@torch.no_grad()
def probe(model, problems) -> list[dict]:
    """Rows ``{op, place, n, accuracy %}`` for the first result's digits (place 0 = units)."""
    cfg, start = model.cfg, model.cfg.prompt_len
    clean = MathsTask.for_model(cfg).encode(problems, with_answers=True)  # (N, L)
    spans = [FIRST_EQUATION.search(p.solution) for p in problems]
    keep = [k for k, s in enumerate(spans) if s is not None]
    x = clean[keep].clone()
    for row, k in enumerate(keep):
        x[row, start + spans[k].start(4):] = cfg.mask_id  # the result and everything after it
    pred = model(x).logits.argmax(-1)  # (N, L)
    hits: dict[tuple[str, int], list[int]] = defaultdict(list)
    for row, k in enumerate(keep):
        s, e = spans[k].span(4)
        for place in range(e - s):
            pos = start + e - 1 - place
            hits[(spans[k].group(2), place)].append(int(pred[row, pos] == clean[k, pos]))
    return [{"op": op, "place": place, "n": len(h), "accuracy %": round(100 * sum(h) / len(h), 1)}
            for (op, place), h in sorted(hits.items())]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=str(DEFAULT_MODEL), help="model directory")
    p.add_argument("--problems", help="GSM8K-style JSONL (default: the standard val split, regenerated)")
    p.add_argument("--n", type=int, default=500)
    p.add_argument("--out", type=Path, default=Path("benchmarks/results/maths"))
    args = p.parse_args()
    if args.n < 1:
        p.error("--n must be >= 1")
    model = load_model(args.model, task="maths")
    problems = problems_or_standard(args.problems, "val", shape(model.cfg))
    rows = probe(model, problems[: args.n])
    args.out.mkdir(parents=True, exist_ok=True)
    meta = {"model": shown_path(args.model), "problems": args.problems or "standard val split", "n": min(args.n, len(problems))}
    (args.out / "maths_digit_probe.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    table = markdown_table(rows, ["op", "place", "n", "accuracy %"])
    (args.out / "maths_digit_probe.md").write_text(table + "\n")
    print(table)


if __name__ == "__main__":
    main()
