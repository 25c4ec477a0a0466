"""Generated proteins vs real ones, by decoding policy: JSD of residue frequencies against forward passes
(the first reference paper's protein table, at our scale).

    python benchmarks/proteins/protein_policies.py          # the shipped protein model, 500 proteins per policy

Every policy generates ``--n`` proteins at temperature 1 with lengths drawn from the shipped reference
(500 held-out UniProt proteins, 50–100 residues), and is judged against that reference by JSD of
amino-acid frequencies (natural log), JSD of dipeptide frequencies, the share of distinct sequences,
and (with ``--train``) the mmseqs2 nearest-neighbour identity to the training set. Writes
``benchmarks/results/proteins/protein_policies.{json,md,png}`` beside the paper's rows (ESM-C vs UniRef50).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import torch

from unmask.decode import TokenRule
from unmask.eval import decode_all, markdown_table, shown_path
from unmask.model import load_model
from unmask.plots import plot_pareto
from unmask.policies import build_policy, policy_spec
from unmask.tasks.proteins.fasta import read_fasta
from unmask.tasks.proteins.metrics import compare_sets, nearest_identity, residue_counts
from unmask.tasks.proteins.task import (
    DEFAULT_MODEL,
    DEFAULT_REFERENCE,
    ProteinTask,
    decode_residues,
    encode_residues,
    length_prompts,
    masked_nll,
)

# Budgets in nats: this model's per-residue entropy is about 2.8 nats (near the 3.0 of 20 equal
# residues), so γ below that reveals one residue per pass; γ = 10 / 30 reveal about 3 / 10.
POLICIES = ["sequential", "topk:k=12", "topk:k=4", "random:steps=10", "eb:gamma=10", "eb:gamma=30",
            "mi:gamma=10,lam=0", "mi:gamma=30,lam=0",  # mi with λ = 0: the entropy budget
            "mi:gamma=10,lam=1", "mi:gamma=30,lam=1"]  # MI-guided with the shipped head
REFERENCE = [  # Sharma, Wang, Li 2026 (arXiv 2605.20187): ESM-C, 500 proteins of length 50–100 vs 500 UniRef50 sequences
    {"set": "reference (paper, ESM-C)", "policy": name, "mean_nfe": nfe, "jsd_aa": jsd}
    for name, nfe, jsd in [("sequential", 74.8, 0.093), ("naive parallel k=12", 6.2, 0.218), ("MI-guided γ=4", 10.0, 0.174)]
]
COLUMNS = ["set", "policy", "mean_nfe", "max_nfe", "jsd_aa", "jsd_dipeptide", "distinct", "nn_identity", "seconds"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=str(DEFAULT_MODEL))
    p.add_argument("--reference", default=str(DEFAULT_REFERENCE))
    p.add_argument("--train", help="training FASTA for the nearest-neighbour identity (e.g. data/proteins/train.fasta)")
    p.add_argument("--val",
                   help="validation FASTA: the model's masked-residue NLL there beside residue frequencies' (with --train)")
    p.add_argument("--n", type=int, default=500)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--policies", nargs="+", default=POLICIES)
    p.add_argument("--out", default="benchmarks/results/proteins", type=Path)
    args = p.parse_args()

    torch.set_num_threads(1)
    start = time.time()
    model = load_model(args.model, task="proteins")
    task = ProteinTask.for_model(model.cfg)
    reference = task.read(args.reference)
    gen = torch.Generator().manual_seed(args.seed)
    pool = torch.tensor([len(r.sequence) for r in reference])
    lengths = pool[torch.randint(len(pool), (args.n,), generator=gen)].tolist()  # the reference's length distribution
    prompts = length_prompts(lengths, task.max_len)
    train = read_fasta(args.train) if args.train else None
    rows = []
    for spec in args.policies:
        policy = build_policy(spec, model, args.model)
        run = decode_all(model, prompts, policy, TokenRule(1.0), batch_size=250, seed=args.seed, progress=True, unit="protein")
        seqs = decode_residues(run.result.tokens)
        row = {"set": f"ours ({args.n} vs {len(reference)} UniProt)", "policy": policy_spec(policy),
               "mean_nfe": float(run.result.nfe.double().mean()), "max_nfe": int(run.result.nfe.max()),
               **compare_sets(seqs, [r.sequence for r in reference]), "seconds": round(run.seconds, 1)}
        if train is not None:
            row |= nearest_identity(seqs, train)
        rows.append(row)
        print(json.dumps(row), flush=True)
    real = None  # the floor: n real training proteins judged the same way (sampling noise, not the model)
    if train is not None:
        picked = torch.randperm(len(train), generator=gen)[: args.n].tolist()
        real = compare_sets([train[k].sequence for k in picked], [r.sequence for r in reference])
    baseline = None  # how much the model knows beyond residue frequencies, on held-out proteins
    if train is not None and args.val:
        val = [r.sequence for r in read_fasta(args.val)]
        freq = residue_counts([r.sequence for r in train])
        counts = residue_counts(val)
        baseline = {"unigram_val_nll": float(-(counts * (freq / freq.sum()).log()).sum() / counts.sum()),
                    **{f"model_{k}": v for k, v in masked_nll(model, encode_residues(val, task.max_len)).items()}}
        baseline["unigram_val_ppl"] = math.exp(baseline["unigram_val_nll"])
    args.out.mkdir(parents=True, exist_ok=True)
    result = {"model": shown_path(args.model), "reference": shown_path(args.reference), "n": args.n, "seed": args.seed,
              "temperature": 1.0, "rows": rows, "paper": REFERENCE, "train_vs_reference": real, "baseline": baseline,
              "minutes": round((time.time() - start) / 60, 1)}
    (args.out / "protein_policies.json").write_text(json.dumps(result, indent=1) + "\n")
    md = markdown_table(rows, COLUMNS)
    if real is not None:  # sampling noise alone: real proteins judged like the generated ones
        md += "\n\nReal proteins (the floor):\n\n" + markdown_table(
            [{"set": f"{args.n} training proteins", **real}], ["set", "jsd_aa", "jsd_dipeptide", "distinct", "mean_length"])
    if baseline is not None:
        md += "\n\nMasked-residue NLL on the validation split (nats):\n\n" + markdown_table([baseline], list(baseline))
    md += "\n\nPaper (Sharma, Wang, Li 2026, ESM-C):\n\n" + markdown_table(REFERENCE, ["policy", "mean_nfe", "jsd_aa"])
    (args.out / "protein_policies.md").write_text(md + "\n")
    plot_pareto(rows, args.out / "protein_policies.png", "proteins", y="jsd_aa", ylabel="JSD of residue frequencies (nats)")
    print(md)


if __name__ == "__main__":
    main()
