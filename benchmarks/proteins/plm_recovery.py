"""Do the imported antibody models know antibodies? Argmax recovery of randomly masked residues of real heavy chains.

    python benchmarks/proteins/plm_recovery.py        # AntiBERTy and Sapiens (heavy), 29 UniProt heavy chains

Each heavy chain of ``benchmarks/proteins/data/heavy_chains.fasta`` has every residue masked with probability
``--rate`` (5 seeded masks), all masked residues predicted in one pass; the share predicted right, by
argmax, overall and inside / outside the CDRs. A conversion that put a tensor or a position offset
wrong would fall to chance (5 %). Writes ``benchmarks/results/proteins/plm_recovery.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from unmask.adapters import load_denoiser
from unmask.eval import markdown_table, shown_path
from unmask.tasks import task_denoiser
from unmask.tasks.proteins.antibody import AntibodyTask
from unmask.tasks.proteins.pretrained import import_pretrained
from unmask.tasks.proteins.task import EOS_ID, MASK_ID

MODELS = ["antiberty", "sapiens-heavy"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--antibodies", default="benchmarks/proteins/data/heavy_chains.fasta")
    p.add_argument("--models", default="runs/plm", type=Path, help="where the imported models are (made if missing)")
    p.add_argument("--rate", type=float, default=0.15)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--out", default="benchmarks/results/proteins", type=Path)
    args = p.parse_args()

    torch.set_num_threads(1)
    rows = []
    for name in MODELS:
        path = args.models / name
        if not (path / "config.json").is_file():
            import_pretrained(name, path)
        model = task_denoiser("antibodies", load_denoiser(f"hf:{path}"))
        task = AntibodyTask(model.cfg.seq_len)
        antibodies = task.read(args.antibodies)
        x0 = task.targets(antibodies)  # (N, L)
        cdr = task.masked(antibodies)  # (N, L) all three CDRs
        hits = {"all": [], "cdr": [], "framework": []}
        for seed in range(args.seeds):
            gen = torch.Generator().manual_seed(seed)
            mask = (torch.rand(x0.shape, generator=gen) < args.rate) & (x0 != EOS_ID)
            right = model(torch.where(mask, MASK_ID, x0)).logits.argmax(-1) == x0  # (N, L)
            for part, where in (("all", mask), ("cdr", mask & cdr), ("framework", mask & ~cdr)):
                hits[part].append(right[where].float())
        row = {"model": name, "parameters": model.num_parameters(), "antibodies": len(antibodies), "rate": args.rate,
               "masks": args.seeds}
        row |= {f"recovery_{part}": float(torch.cat(v).mean()) for part, v in hits.items()}
        rows.append(row)
        print(json.dumps(row), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "plm_recovery.json").write_text(
        json.dumps({"antibodies": shown_path(args.antibodies), "rows": rows}, indent=1) + "\n")
    md = markdown_table(rows, list(rows[0]))
    (args.out / "plm_recovery.md").write_text(md + "\n")
    print(md)


if __name__ == "__main__":
    main()
