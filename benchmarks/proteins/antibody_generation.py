"""The first paper's protein table with a real pretrained model: AntiBERTy writes antibody heavy chains.

    benchmarks/proteins/pretrained_addons.sh   # imports AntiBERTy, trains its MI head and learned order
    python benchmarks/proteins/antibody_generation.py --model hf:runs/pretrained-addons/antiberty \
        --head runs/pretrained-addons/mi-head --order runs/pretrained-addons/order --judge sapiens-heavy \
        --n 500 --device cuda --batch-size 256 --out benchmarks/results/proteins/antibody-generation

Sharma, Wang, Li 2026 (arXiv 2605.20187) write proteins from all-masked sequences with ESM-C 300M and compare
decoding policies by the Jensen–Shannon divergence of residue composition to real proteins at their NFE. Here
the writer is AntiBERTy (or any ``--model``) and the proteins are unconditional heavy chains: every position
masked, chain k of length ``lengths[k]`` (drawn with ``--seed`` from the real heavy-chain variable domains,
:func:`unmask.tasks.proteins.judges.real.real_heavy_chains` with ``complete=True``, cached as
``OUT/real_heavy_chains.fasta``; ``--real FASTA`` gives a saved copy) and decoded with seed ``seed + k`` at
temperature 1, the same lengths for every policy. Each policy is judged by
:func:`~unmask.tasks.proteins.judges.summary.judge_heavy_chains` (residue and dipeptide JSD to the real set
beside its split-half floor, ANARCI heavy share, germline species and identity, diversity, novelty, optional
AntPack humanness) and by the mean per-residue pseudo-log-likelihood under the writer and under each
``--judge`` (default Sapiens-heavy, imported from its wheel into ``OUT/judges`` when installed): means with
95 % percentile bootstrap intervals over the chains. The real chains' own PLL is the reference row.

Rows are kept as they finish (``OUT/antibody_generation.partial.jsonl``, kept after the run too), so an
interrupted run resumes and a rerun with more policies measures only the new ones; ``--tables-only`` rebuilds
``antibody_generation.md`` and the plots from ``OUT/antibody_generation.json``.
Out: ``antibody_generation.{json,md}``, ``jsd_vs_nfe.png``, ``pll_vs_nfe.png``, ``fasta/<policy>.fasta``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import sys
import time
from pathlib import Path

import torch

from unmask.adapters import is_pretrained, load_denoiser
from unmask.artifacts import MI_HEAD, ORDER_POLICY, model_digest
from unmask.decode import TokenRule
from unmask.errors import UnmaskError
from unmask.eval import bootstrap_weights, decode_all, markdown_table, results_cache, shown_path
from unmask.io import dumps_strict
from unmask.plots import _plain_log_ticks, pyplot, save_png
from unmask.policies import build_policy, needed_resources, parse_policy, policy_spec
from unmask.tasks import task_denoiser
from unmask.tasks.proteins.antibody import pseudo_log_likelihood
from unmask.tasks.proteins.fasta import Record, read_fasta, write_fasta
from unmask.tasks.proteins.judges.summary import judge_heavy_chains
from unmask.tasks.proteins.metrics import dipeptide_counts, jsd, residue_counts
from unmask.tasks.proteins.pretrained import PRETRAINED, import_pretrained
from unmask.tasks.proteins.task import (
    EOS_ID,
    ProteinTask,
    decode_residues,
    draw_lengths,
    encode_residues,
    length_prompts,
)

NAME = "antibody_generation"
TEMPERATURE = 1.0  # the paper samples
# Budgets: AntiBERTy's heavy chains take NFE ~ 130 / γ under the entropy budget (2 chains: γ = 8 gave 16 and 17), so
# γ from 6 to 32 spans NFE ~ 22 to ~ 4; γ = 2 and 4 are the paper's MI rows.
GAMMAS = (6, 8, 12, 16, 24, 32)
BASELINES = (["sequential"] + [f"topk:k={k}" for k in (4, 8, 12)] + [f"eb:gamma={g}" for g in (3, 4, 6, 8, 12, 16)]
             + [f"mi:gamma={g},lam=0" for g in (2, 4, *GAMMAS)])
WITH_HEAD = ([f"mi:gamma={g},lam={lam}" for lam in (0.5, 1, 2) for g in ((2, 4) if lam == 1 else ()) + GAMMAS]
             + [f"demask:delta={d}" for d in (0.1, 0.2, 0.4, 0.8, 1.6)])
WITH_ORDER = ["learned:steps=5", "learned", "learned:steps=20"]  # the trained budget (steps=0), half and twice it
# The paper's rows (ESM-C 300M on UniRef50 lengths, its own reference set): spec, label, mean NFE, residue JSD
PAPER = [("sequential", "sequential", 74.8, 0.093), ("topk:k=4", "naive top-k, k = 4", 19.1, 0.185),
         ("topk:k=8", "naive top-k, k = 8", 9.8, 0.196), ("topk:k=12", "naive top-k, k = 12", 6.2, 0.218),
         ("mi:gamma=2,lam=1", "MI-guided, λ = 1, γ = 2", 15.3, 0.136),
         ("mi:gamma=4,lam=1", "MI-guided, λ = 1, γ = 4", 10.0, 0.174)]
RESAMPLES = 1000


def default_policies(head: bool, order: bool) -> list[str]:
    """The baselines, then what the given add-ons allow (MI-guided and DEMASK with a head, the learned order)."""
    return BASELINES + (WITH_HEAD if head else []) + (WITH_ORDER if order else [])


def real_set(args) -> list[Record]:
    """``--real``, else the cached ``OUT/real_heavy_chains.fasta``, else found anew (ANARCI, ~1 min) and cached."""
    if args.real:
        return read_fasta(args.real)
    cached = args.out / "real_heavy_chains.fasta"
    if not cached.is_file():
        from unmask.tasks.proteins.judges.real import real_heavy_chains

        print("finding the real heavy chains (ANARCI over metastudent-data, about a minute)", file=sys.stderr)
        write_fasta(cached, real_heavy_chains(complete=True))
    return read_fasta(cached)


def load_judges(specs: list[str], out: Path, device: str) -> tuple[dict, dict]:
    """Name → protein denoiser, and name → weights digest. A name of :data:`PRETRAINED` is imported from its wheel
    into ``out/judges/NAME`` (skipped with a note when the wheel is missing); anything else is a model spec (``hf:DIR``)."""
    judges, digests = {}, {}
    for spec in specs:
        name = spec if spec in PRETRAINED else Path(spec.split(":", 1)[-1]).name
        if name in judges or name in digests or name == "writer":
            raise UnmaskError(f"--judge {spec}: a second judge named {name!r} (judges are named by their folder; "
                              "'writer' is the writer's)")
        if spec in PRETRAINED:
            folder = out / "judges" / spec
            if not (folder / "model.safetensors").is_file():
                if importlib.util.find_spec(PRETRAINED[spec].package) is None:
                    print(f"judge {spec} skipped: {PRETRAINED[spec].pip}", file=sys.stderr)
                    continue
                import_pretrained(spec, folder)
            spec = f"hf:{folder}"
        loaded = load_denoiser(spec, device, task="proteins")
        judges[name], digests[name] = task_denoiser("proteins", loaded), model_digest(loaded.weights)
    return judges, digests


def pll(model, seqs: list[str], batch: int) -> torch.Tensor:
    """``(N,)`` mean per-residue pseudo-log-likelihood of each chain under ``model`` (every residue masked alone)."""
    tokens = encode_residues(seqs, model.cfg.seq_len)
    return pseudo_log_likelihood(model, tokens, tokens != EOS_ID, batch).double()


def interval(draws: torch.Tensor) -> list[float]:
    """The 95 % percentile interval of bootstrap ``draws`` ``(B,)``."""
    return [round(v, 4) for v in torch.quantile(draws.double(), torch.tensor([0.025, 0.975], dtype=torch.float64)).tolist()]


def bootstrap(seqs: list[str], real: list[str], per_chain: dict[str, list[float]], resamples: int, seed: int = 0) -> dict:
    """95 % intervals over the chains (resampled with replacement, one draw for every figure): the residue and
    dipeptide JSD of the resampled set to ``real``, and the mean of each per-chain figure."""
    w = bootstrap_weights(len(seqs), resamples, seed)[1:]  # (B, N) times each chain is drawn
    out = {}
    for key, counts in (("jsd_aa", residue_counts), ("jsd_dipeptide", dipeptide_counts)):
        per = torch.stack([counts([s]) for s in seqs])  # (N, C)
        ref = counts(real)
        out[f"{key}_95"] = interval(torch.tensor([jsd(c, ref) for c in w @ per]))
    for key, values in per_chain.items():
        out[f"{key}_95"] = interval(w @ torch.tensor(values, dtype=torch.float64) / len(seqs))
    return out


def judged(seqs: list[str], writer, judges: dict, args) -> dict:
    """The PLL of every chain under the writer and each judge: ``pll_NAME`` (mean), ``pll_NAME_chains``."""
    out = {}
    for name, model in {"writer": writer, **judges}.items():
        values = pll(model, seqs, args.batch_size)
        out |= {f"pll_{name}": round(float(values.mean()), 4), f"pll_{name}_chains": [round(v, 4) for v in values.tolist()]}
    return out


def measure(spec: str, writer, loaded, lengths: list[int], real: list[str], judges: dict, args) -> dict:
    """One policy's row: its chains (chain k of ``lengths[k]``, seed ``seed + k``), their NFE and every judge."""
    needed = needed_resources(parse_policy(spec))
    policy = build_policy(spec, writer, loaded.directory, head_dir=args.head if "mi_head" in needed else None,
                          order_dir=args.order if "order_policy" in needed else None, base=loaded.weights)
    run = decode_all(writer, length_prompts(lengths, writer.cfg.seq_len), policy, TokenRule(TEMPERATURE), args.batch_size,
                     args.seed, progress=True, unit="protein")
    seqs, nfe = decode_residues(run.result.tokens), run.result.nfe.tolist()
    start = time.perf_counter()
    verdict = judge_heavy_chains(seqs, real, with_humanness=args.humanness)
    plls = judged(seqs, writer, judges, args)
    per_chain = {"mean_nfe": nfe, **{k[: -len("_chains")]: v for k, v in plls.items() if k.endswith("_chains")}}
    return {"mean_nfe": round(sum(nfe) / len(nfe), 3), "max_nfe": max(nfe), **verdict, **plls,
            **bootstrap(seqs, real, per_chain, args.resamples), "nfe": nfe, "sequences": seqs,
            "decode_seconds": round(run.seconds, 1), "judge_seconds": round(time.perf_counter() - start, 1)}


def reference_row(real: list[str], writer, judges: dict, args) -> dict:
    """The real chains' own PLL under every model, with bootstrap intervals: what a plausible chain scores."""
    plls = judged(real, writer, judges, args)
    per_chain = {k[: -len("_chains")]: v for k, v in plls.items() if k.endswith("_chains")}
    w = bootstrap_weights(len(real), args.resamples)[1:]
    return {"n": len(real), "mean_length": round(sum(map(len, real)) / len(real), 1), **plls,
            **{f"{k}_95": interval(w @ torch.tensor(v, dtype=torch.float64) / len(real)) for k, v in per_chain.items()}}


def fasta_path(out: Path, policy: str) -> Path:
    """``out/fasta/<policy>.fasta``, the spec's punctuation as ``_`` (``topk_k_4_metric_entropy.fasta``)."""
    return out / "fasta" / f"{re.sub(r'[^A-Za-z0-9.]+', '_', policy)}.fasta"


def write_fasta_of(row: dict, seed: int, out: Path) -> None:
    """A row's chains as FASTA, named as ``unmask proteins generate`` names its chains."""
    records = [Record(f"gen{k} len={len(s)} nfe={n} policy={row['policy']} T={TEMPERATURE} seed={seed + k}", s)
               for k, (s, n) in enumerate(zip(row["sequences"], row["nfe"]))]
    write_fasta(fasta_path(out, row["policy"]), records)


def series(spec: str) -> str:
    """The family a row is drawn with: the spec's name, MI split by λ (λ = 0: the entropy budget)."""
    name = spec.split(":")[0]
    if name == "mi":
        lam = float(dict(kv.split("=") for kv in spec.split(":")[1].split(","))["lam"])
        return "entropy budget (mi, λ = 0)" if lam == 0 else f"mi, λ = {lam:g}"
    return name


def span(row: dict, key: str) -> str:
    lo, hi = row.get(f"{key}_95") or (None, None)
    return "" if lo is None else f"{lo:.3g}…{hi:.3g}"


def plot(rows: list[dict], keys: list[tuple[str, str]], out: Path, title: str, lines: dict, line_label: str) -> None:
    """Mean NFE (log x) against each ``(key, label)``, one panel each, bootstrap 95 % intervals on both axes;
    ``lines[key]``: a horizontal reference line (``line_label``)."""
    plt = pyplot()
    fig, axes = plt.subplots(1, len(keys), figsize=(6.5 * len(keys), 5), squeeze=False)
    names = list(dict.fromkeys(series(r["policy"]) for r in rows))
    for ax, (key, label) in zip(axes[0], keys):
        for i, name in enumerate(names):
            rs = sorted((r for r in rows if series(r["policy"]) == name and r.get(key) is not None), key=lambda r: r["mean_nfe"])
            if not rs:
                continue
            x, y, colour = [r["mean_nfe"] for r in rs], [r[key] for r in rs], f"C{i % 10}"
            ax.plot(x, y, ("o-", "s--", "^:", "D-.")[i // 10 % 4], color=colour, label=name)
            # the intervals as drawn lines, not errors about the point: a resampled JSD is biased upwards (a resample
            # repeats chains), so for few chains its interval can lie wholly above the set's own JSD
            ax.vlines(x, *zip(*(r[f"{key}_95"] for r in rs)), color=colour, lw=1, alpha=0.7)
            ax.hlines(y, *zip(*(r["mean_nfe_95"] for r in rs)), color=colour, lw=1, alpha=0.7)
        if lines.get(key) is not None:
            ax.axhline(lines[key], color="grey", ls=":", label=line_label)
        ax.set_xscale("log")
        _plain_log_ticks(ax.xaxis, min(r["mean_nfe"] for r in rows), max(r["mean_nfe"] for r in rows))
        ax.set_xlabel("mean NFE (forward passes per chain)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    save_png(fig, out)


def beside_paper(rows: list[dict]) -> list[dict]:
    """The paper's rows, each with our row of the same spec (blank where we did not run it)."""
    by = {r["policy"]: r for r in rows}
    out = []
    for spec, label, nfe, j in PAPER:
        ours = by.get(policy_spec(parse_policy(spec)), {})
        out.append({"policy (paper)": label, "paper NFE": nfe, "paper JSD aa": j, "our spec": policy_spec(parse_policy(spec)),
                    "our NFE": ours.get("mean_nfe"), "our JSD aa": ours.get("jsd_aa"), "our JSD aa 95%": span(ours, "jsd_aa")})
    return out


def write_tables(result: dict, out: Path) -> str:
    """``antibody_generation.md`` and both plots from the result; returns the Markdown."""
    rows, meta, ref = result["rows"], result["meta"], result["reference"]
    plls = [k[len("pll_"):] for k in ref if k.startswith("pll_") and not k.endswith(("_chains", "_95"))]
    shown = []
    for r in rows:
        s = {"policy": r["policy"], "mean NFE": r["mean_nfe"], "NFE 95%": span(r, "mean_nfe"), "JSD aa": r["jsd_aa"],
             "JSD aa 95%": span(r, "jsd_aa"), "JSD dipeptide": r["jsd_dipeptide"], "JSD dip. 95%": span(r, "jsd_dipeptide"),
             "heavy %": None if r["heavy_share"] is None else round(100 * r["heavy_share"], 1), "V id.": r["v_identity"],
             "J id.": r["j_identity"], "V species": ", ".join(f"{k} {v}" for k, v in r["v_species"].items()),
             "diversity": r["diversity"], "novelty": r["novelty"], "copies %": round(100 * r["novelty_copies"], 1),
             "distinct": r["distinct"], "humanness": r.get("humanness"),
             "minutes": round((r["decode_seconds"] + r["judge_seconds"]) / 60, 1)}
        for m in plls:
            s |= {f"PLL {m}": r[f"pll_{m}"], f"PLL {m} 95%": span(r, f"pll_{m}")}
        shown.append(s)
    pll_cols = [c for m in plls for c in (f"PLL {m}", f"PLL {m} 95%")]
    main = markdown_table(shown, ["policy", "mean NFE", "NFE 95%", "JSD aa", "JSD aa 95%", "JSD dipeptide", "JSD dip. 95%",
                                  *pll_cols])
    judges = markdown_table(shown, ["policy", "mean NFE", "heavy %", "V id.", "J id.", "V species", "diversity", "novelty",
                                    "copies %", "distinct", *(["humanness"] if meta["humanness"] else []), "minutes"])
    reference = markdown_table([{"set": f"real heavy chains (n = {ref['n']}, mean length {ref['mean_length']})",
                                 **{f"PLL {m}": ref[f"pll_{m}"] for m in plls},
                                 **{f"PLL {m} 95%": span(ref, f"pll_{m}") for m in plls}}], ["set", *pll_cols])
    paper = markdown_table(beside_paper(rows), ["policy (paper)", "paper NFE", "paper JSD aa", "our spec", "our NFE",
                                                "our JSD aa", "our JSD aa 95%"])
    f = rows[0] if rows else {}
    floor = (f"Split-half floor of the real set: residue JSD {f.get('floor_jsd_aa', 0):.3g} ± {f.get('floor_jsd_aa_sd', 0):.2g}, "
             f"dipeptide {f.get('floor_jsd_dipeptide', 0):.3g} ± {f.get('floor_jsd_dipeptide_sd', 0):.2g} (nats).")
    text = (f"# Antibody heavy chains written by {meta['model']}\n\n{meta['n']} chains per policy, lengths drawn from the "
            f"{ref['n']} real heavy-chain variable domains (seed {meta['seed']}), all masked, temperature {TEMPERATURE:g}; "
            f"95 % bootstrap intervals over the chains ({meta['resamples']} resamples). {floor}\n\n{main}\n\n"
            f"## Antibody judges\n\n{judges}\n\n## The real chains' own pseudo-log-likelihood\n\n{reference}\n\n"
            "## Beside the paper (Sharma, Wang, Li 2026, arXiv 2605.20187: ESM-C 300M on UniRef50 proteins, against its "
            "own reference set; not comparable in absolute terms, only in how the policies rank and trade off)\n\n"
            f"{paper}\n")
    (out / f"{NAME}.md").write_text(text)
    if rows:
        title = f"heavy chains by {meta['model']}, {meta['n']} per policy (95 % bootstrap intervals)"
        floors = {"jsd_aa": f["floor_jsd_aa"], "jsd_dipeptide": f["floor_jsd_dipeptide"]}
        plot(rows, [("jsd_aa", "residue-composition JSD to the real set (nats)"),
                    ("jsd_dipeptide", "dipeptide JSD to the real set (nats)")], out / "jsd_vs_nfe.png", title, floors,
             "real set's split-half floor")
        plot(rows, [(f"pll_{m}", f"mean PLL per residue under {m}") for m in plls], out / "pll_vs_nfe.png", title,
             {f"pll_{m}": ref[f"pll_{m}"] for m in plls}, "the real chains")
    return text


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", help="the writer, e.g. hf:runs/plm/antiberty (`unmask proteins import antiberty`)")
    p.add_argument("--head", help="MI head folder for the writer (`unmask mi train --out`): adds MI-guided and DEMASK rows")
    p.add_argument("--order", help="order policy folder for the writer (`unmask proteins train-order --out`): adds `learned`")
    p.add_argument("--policies", nargs="+", metavar="SPEC", help="policy specs (default: sequential, top-k, EB, the entropy "
                   "budget, and with --head / --order the MI-guided, DEMASK and learned rows)")
    p.add_argument("--judge", nargs="*", default=["sapiens-heavy"], metavar="MODEL",
                   help=f"PLL judges: {', '.join(PRETRAINED)} (imported from the wheel) or hf:DIR; none: give --judge alone")
    p.add_argument("--real", help="FASTA of the real heavy chains (default: found once and cached in OUT)")
    p.add_argument("--n", type=int, default=500, help="chains per policy")
    p.add_argument("--seed", type=int, default=0, help="draws the lengths; chain k is decoded with seed SEED + k")
    p.add_argument("--humanness", action="store_true", help="also AntPack's humanness (pip install antpack==0.3.8.6.3)")
    p.add_argument("--batch-size", type=int, default=64, help="chains per decode pass and masked copies per PLL pass")
    p.add_argument("--resamples", type=int, default=RESAMPLES, help="bootstrap resamples of the intervals")
    p.add_argument("--device", default="cpu")
    p.add_argument("--out", type=Path, required=True, help="folder for antibody_generation.{json,md}, PNGs, fasta/")
    p.add_argument("--tables-only", action="store_true", help="rebuild the tables and plots from OUT/antibody_generation.json")
    args = p.parse_args(argv)
    try:
        if args.tables_only:
            print(write_tables(json.loads((args.out / f"{NAME}.json").read_text()), args.out))
            return
        run(p, args)
    except (UnmaskError, OSError, json.JSONDecodeError) as e:
        p.error(str(e))


def run(p: argparse.ArgumentParser, args) -> None:
    if not args.model:
        p.error("--model is required (or --tables-only)")
    if args.n < 2 or args.batch_size < 1 or args.resamples < 1:
        p.error("--n must be >= 2, --batch-size and --resamples >= 1")
    policies = args.policies or default_policies(args.head is not None, args.order is not None)
    for spec in policies:  # a bad spec or a missing add-on, in one line before any load
        needed = needed_resources(parse_policy(spec))
        for resource, flag in (("mi_head", "head"), ("order_policy", "order")):
            if resource in needed and getattr(args, flag) is None and is_pretrained(args.model):
                p.error(f"{spec} needs --{flag} DIR (a pretrained model keeps no add-ons beside it)")
    start = time.time()
    args.out.mkdir(parents=True, exist_ok=True)
    real = [r.sequence for r in real_set(args)]
    loaded = load_denoiser(args.model, args.device, task="proteins")
    writer = task_denoiser("proteins", loaded)
    ProteinTask.for_model(writer.cfg).check_model(writer)
    judges, judge_digests = load_judges(args.judge, args.out, args.device)
    lengths = draw_lengths(args.n, (1, writer.cfg.seq_len), [Record("", s) for s in real], args.seed)
    addons = [Path(d) / f for d, kind in ((args.head, MI_HEAD), (args.order, ORDER_POLICY)) if d
              for f in (kind.weights, kind.meta)]
    files = [Path(__file__), Path(args.real or args.out / "real_heavy_chains.fasta"), *addons]
    cache = results_cache(args.out, NAME, loaded.directory, files, n=args.n, seed=args.seed, temperature=TEMPERATURE,
                          resamples=args.resamples, humanness=args.humanness, device=args.device,
                          writer=model_digest(loaded.weights), judges=judge_digests)
    rows = []
    for spec in policies:
        key = {"policy": policy_spec(parse_policy(spec))}
        row = cache.get(key)
        if row is None:
            row = measure(spec, writer, loaded, lengths, real, judges, args)
            cache.put(key, row)
        rows.append({**key, **row})
        write_fasta_of(rows[-1], args.seed, args.out)
        print({k: v for k, v in rows[-1].items() if k in ("policy", "mean_nfe", "jsd_aa", "jsd_dipeptide", "heavy_share")
               or k.startswith("pll_") and not k.endswith(("_chains", "_95"))}, flush=True)
    ref = cache.get({"policy": "real"})
    if ref is None:
        ref = reference_row(real, writer, judges, args)
        cache.put({"policy": "real"}, ref)
    prefix, _, path = args.model.rpartition(":")
    meta = {"model": f"{prefix}:{shown_path(path)}" if prefix else shown_path(path), "head": args.head and shown_path(args.head),
            "order": args.order and shown_path(args.order), "judges": list(judges), "n": args.n, "seed": args.seed,
            "lengths": lengths, "temperature": TEMPERATURE, "resamples": args.resamples, "humanness": args.humanness,
            "device": args.device, "minutes": round((time.time() - start) / 60, 1), "reused_rows": cache.hits}
    result = {"meta": meta, "reference": ref, "rows": [{k: v for k, v in r.items() if k != "sequences"} for r in rows]}
    text = dumps_strict(result, indent=1) + "\n"  # (NaN as null, as the cached rows and --tables-only read it)
    (args.out / f"{NAME}.json").write_text(text)
    print(write_tables(json.loads(text), args.out))  # the partial file stays: a rerun with more policies measures only those


if __name__ == "__main__":
    main()
