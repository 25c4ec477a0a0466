"""Antibody CDR infilling with real pretrained models: each policy's sampled infills judged by the *other* model.

    python benchmarks/proteins/antibody_infill.py       # AntiBERTy and Sapiens (heavy), CDR-H3 of 29 UniProt antibodies

Needs ``pip install --no-deps antiberty==0.1.3 sapiens==1.0.5`` (the models are written once to
``runs/plm/`` by ``unmask proteins import``). Each writer infills the masked CDRs of every antibody
in ``benchmarks/proteins/data/heavy_chains.fasta`` ``--samples`` times at temperature 1 with each policy; the
other model judges the infills by pseudo-log-likelihood (mean log p per infilled residue, each
masked alone), beside recovery, diversity and the writer's forward passes; each policy's PLL is also
compared with sequential decoding's on the same antibodies (mean difference in %, paired standard error). Two argmax rows per
writer (sequential, and everything in one pass) show how little argmax recovery separates policies.
Writes ``benchmarks/results/proteins/antibody_infill.{json,md,png}``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from unmask.adapters import load_denoiser
from unmask.decode import TokenRule
from unmask.eval import markdown_table, shown_path
from unmask.plots import plot_pareto
from unmask.policies import build_policy, policy_spec
from unmask.tasks import task_denoiser
from unmask.tasks.proteins.antibody import AntibodyTask
from unmask.tasks.proteins.infill import infill
from unmask.tasks.proteins.pretrained import import_pretrained

WRITERS = {"antiberty": "sapiens-heavy", "sapiens-heavy": "antiberty"}  # writer → its judge
# CDR-H3 has 11.3 residues on average here, each with about 2 nats of entropy under Sapiens, so
# the budgets γ = 3–15 nats reveal a few residues per pass.
POLICIES = ["sequential", "topk:k=2", "topk:k=4", "random:steps=3", "eb:gamma=3", "eb:gamma=5", "eb:gamma=10",
            "threshold:tau=0.3", "mi:gamma=5,lam=0", "mi:gamma=7,lam=0", "mi:gamma=15,lam=0"]  # mi with λ = 0: the entropy budget
ARGMAX = ["sequential", "topk:k=64"]  # temperature 0: one residue per pass vs every CDR residue in one pass
MATCHED_TOPK = "topk:k=4"  # the naive rule at about 3 passes (a third of sequential's ~11), to compare with
COLUMNS = ["set", "policy", "temperature", "mean_nfe", "recovery", "diversity", "pll_judge", "pll_judge_se",
           "vs_sequential_%", "paired_se_%", "seconds"]


def paired(row: dict, base: dict) -> dict:
    """The judge's PLL of ``row`` relative to ``base`` (same antibodies), in % of |base|, with its paired SE."""
    diff = torch.tensor(row["pll_judge_per_antibody"]) - torch.tensor(base["pll_judge_per_antibody"])  # (A,)
    scale = 100 / abs(base["pll_judge"])
    return {"vs_sequential_%": float(diff.mean()) * scale, "paired_se_%": float(diff.std() / len(diff) ** 0.5) * scale}


def model_dir(name: str, root: Path) -> Path:
    path = root / name
    if not (path / "config.json").is_file():
        import_pretrained(name, path)
    return path


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--antibodies", default="benchmarks/proteins/data/heavy_chains.fasta")
    p.add_argument("--cdrs", default="H3", help="comma-separated: H1, H2, H3")
    p.add_argument("--samples", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--models", default="runs/plm", type=Path, help="where the imported models are (made if missing)")
    p.add_argument("--policies", nargs="+", default=POLICIES)
    p.add_argument("--out", default="benchmarks/results/proteins", type=Path)
    p.add_argument("--tables-only", action="store_true", help="rewrite the tables and plot from OUT/antibody_infill.json")
    args = p.parse_args()
    if args.tables_only:
        result = json.loads((args.out / "antibody_infill.json").read_text())
        write_tables(result, args.out)
        (args.out / "antibody_infill.json").write_text(json.dumps(result, indent=1) + "\n")
        return

    torch.set_num_threads(1)
    start = time.time()
    models = {name: task_denoiser("antibodies", load_denoiser(f"hf:{model_dir(name, args.models)}")) for name in WRITERS}
    seq_len = min(m.cfg.seq_len for m in models.values())
    task = AntibodyTask(seq_len, tuple(args.cdrs.split(",")))
    antibodies = task.read(args.antibodies)
    rows = []
    for writer, judge in WRITERS.items():
        runs = [(spec, 1.0) for spec in args.policies] + [(spec, 0.0) for spec in ARGMAX]
        for spec, temperature in runs:
            policy = build_policy(spec, models[writer])
            m, _ = infill(task, models[writer], antibodies, policy, TokenRule(temperature), args.samples, args.seed,
                          judges={"judge": models[judge]}, progress=True)
            row = {"set": f"{writer} writes, {judge} judges", "policy": policy_spec(policy), "temperature": temperature, **m}
            base = next((r for r in rows if r["set"] == row["set"] and r["temperature"] == temperature
                         and r["policy"].startswith("sequential")), row)
            row |= paired(row, base)
            rows.append(row)
            print(json.dumps(row), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    result = {"antibodies": shown_path(args.antibodies), "n": len(antibodies), "cdrs": list(task.cdrs),
              "samples": args.samples, "seed": args.seed, "rows": rows, "minutes": round((time.time() - start) / 60, 1)}
    (args.out / "antibody_infill.json").write_text(json.dumps(result, indent=1) + "\n")
    write_tables(result, args.out)


def matched(rows: list[dict]) -> list[dict]:
    """Each adaptive rule's row at about 3 passes against naive top-k at the same passes, paired on the antibodies."""
    out = []
    for s in sorted({r["set"] for r in rows}):
        mine = [r for r in rows if r["set"] == s and r["temperature"] > 0]
        ref = next((r for r in mine if r["policy"].startswith(MATCHED_TOPK)), None)
        if ref is None:
            continue
        for r in mine:
            if r["policy"].split(":")[0] in ("mi", "eb", "random", "threshold") and abs(r["mean_nfe"] - ref["mean_nfe"]) <= 1.0:
                d = paired(r, ref)
                out.append({"set": s, "policy": r["policy"], "mean_nfe": r["mean_nfe"], "vs": ref["policy"],
                            "vs_mean_nfe": ref["mean_nfe"], "pll_gain_%": d["vs_sequential_%"], "paired_se_%": d["paired_se_%"]})
    return out


def write_tables(result: dict, out: Path) -> None:
    """The Markdown tables and the plot, from the results (also: ``--tables-only`` from a saved JSON)."""
    rows = result["rows"]
    for r in rows:  # the standard error over antibodies (the samples of one antibody are not independent)
        per = torch.tensor(r["pll_judge_per_antibody"])
        r["pll_judge_se"] = float(per.std() / len(per) ** 0.5)
    md = markdown_table(rows, COLUMNS)
    pairs = matched(rows)
    if pairs:
        md += "\n\nAgainst naive top-k at matched passes (PLL difference in % of top-k's, paired on the antibodies):\n\n"
        md += markdown_table(pairs, list(pairs[0]))
    (out / "antibody_infill.md").write_text(md + "\n")
    plot_pareto([r for r in rows if r["temperature"] > 0], out / "antibody_infill.png", "CDR-H3 infills",
                y="pll_judge", ylabel="judge's pseudo-log-likelihood (nats per residue)")
    print(md)


if __name__ == "__main__":
    main()
