"""``unmask proteins data|train|generate|eval``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from unmask.adapters import load_denoiser
from unmask.commands.common import (
    HelpFormatter,
    add_dataclass_args,
    add_eval_args,
    add_init_arg,
    check_policy,
    from_args,
    input_paths,
    load_for_eval,
    policy_epilog,
    policy_from_args,
    positive_int,
    train_inputs,
)
from unmask.commands.order import add_train_order_parser
from unmask.errors import UnmaskError
from unmask.io import check_output_file, dumps_strict
from unmask.tasks.proteins.task import DEFAULT_MODEL, DEFAULT_REFERENCE, MAX_LEN, draw_lengths

MODEL_FLAGS = ["d_model", "n_layers", "n_heads", "d_ff", "dropout"]  # the model shape `proteins train` takes from flags


def _data(args: argparse.Namespace) -> None:
    from unmask.tasks.proteins.uniprot import DataConfig, build_uniprot_data

    manifest = build_uniprot_data(args.out, from_args(DataConfig, args))
    print(dumps_strict(manifest["splits"]), file=sys.stderr)


def _train(args: argparse.Namespace) -> None:
    from unmask.tasks.proteins.task import ProteinTask, ProteinTraining, default_model_config
    from unmask.train import TrainConfig, train

    cfg = from_args(TrainConfig, args)
    if args.init and args.max_len:
        raise UnmaskError("--max-len: a run started from --init keeps that model's length; leave it out")
    if args.init:
        from unmask.model import read_config

        task = ProteinTask(int(read_config(args.init)["config"]["seq_len"]))
    else:
        task = ProteinTask(args.max_len or MAX_LEN)
    records = task.read(args.data)
    model_cfg, source, init = train_inputs(args, MODEL_FLAGS, lambda: default_model_config(task.max_len))
    val = task.read(args.val)[: args.val_n] if args.val else []
    train(ProteinTraining(records, model_cfg, val), cfg, args.out, model_cfg, resume=args.resume, source=source, init=init)


def parse_lengths(text: str) -> tuple[int, int]:
    """``--length LO:HI`` (or one number) as ``(lo, hi)``."""
    lo, _, hi = text.partition(":")
    try:
        bounds = int(lo), int(hi or lo)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected LO:HI residues, got {text!r}") from None
    if not 1 <= bounds[0] <= bounds[1] <= 10_000:
        raise argparse.ArgumentTypeError(f"need 1 <= LO <= HI, got {text!r}")
    return bounds


def parse_cdrs(text: str) -> tuple[str, ...]:
    """``--cdrs H1,H3`` as ``("H1", "H3")``: known CDRs, each once (checked at the flag, before a model loads)."""
    from unmask.tasks.proteins.antibody import AntibodyTask

    cdrs = tuple(c.strip() for c in text.split(","))
    try:
        AntibodyTask(cdrs=cdrs)
    except UnmaskError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return cdrs


def _generate(args: argparse.Namespace) -> None:
    from unmask.decode import TokenRule, policy_spec
    from unmask.eval import decode_all
    from unmask.tasks import task_denoiser
    from unmask.tasks.proteins.fasta import Record, write_fasta
    from unmask.tasks.proteins.task import ProteinTask, decode_residues, length_prompts

    rule = TokenRule(args.temperature)
    check_policy(args)
    check_output_file(args.out, input_paths(args))  # before the model loads
    loaded = load_for_eval(args, "proteins")
    denoiser = task_denoiser("proteins", loaded)
    task = ProteinTask.for_model(denoiser.cfg)
    task.check_model(denoiser)
    if args.length[1] > task.max_len:
        raise UnmaskError(f"--length {args.length[0]}:{args.length[1]}: the model holds {task.max_len} residues")
    reference = task.read(args.reference) if args.reference else None
    lengths = draw_lengths(args.n, args.length, reference, args.seed)
    policy = policy_from_args(args, loaded, denoiser)
    run = decode_all(denoiser, length_prompts(lengths, task.max_len), policy, rule, args.batch_size, args.seed,
                     progress=not args.json, unit="protein")
    spec = policy_spec(policy)
    nfe = run.result.nfe.tolist()
    records = [Record(f"gen{k} len={len(s)} nfe={n} policy={spec} T={args.temperature} seed={args.seed + k}", s)
               for k, (s, n) in enumerate(zip(decode_residues(run.result.tokens), nfe))]
    write_fasta(args.out, records)
    summary = {"out": args.out, "n": len(records), "policy": spec, "mean_nfe": sum(nfe) / len(nfe), "max_nfe": max(nfe),
               "temperature": args.temperature, "seed": args.seed, "seconds": round(run.seconds, 2)}
    print(dumps_strict(summary) if args.json
          else f"{len(records)} proteins by {spec} at mean NFE {summary['mean_nfe']:.2f}: {args.out}")


def _eval(args: argparse.Namespace) -> None:
    from unmask.tasks.proteins.fasta import read_fasta
    from unmask.tasks.proteins.metrics import compare_sets, nearest_identity

    generated = read_fasta(args.generated)
    reference = read_fasta(args.reference)
    seqs = [r.sequence for r in generated]
    m = {"generated": args.generated, "reference": args.reference, "n": len(seqs),
         **compare_sets(seqs, [r.sequence for r in reference])}
    nfe = [float(t.split("=", 1)[1]) for r in generated for t in r.name.split() if t.startswith("nfe=")]
    if len(nfe) == len(seqs):  # written by `unmask proteins generate`
        m["mean_nfe"] = sum(nfe) / len(nfe)
    if args.train:
        m |= nearest_identity(seqs, read_fasta(args.train))
    if args.json:
        print(dumps_strict(m))
    else:
        print("\n".join(f"{k}: {v:.4g}" if isinstance(v, float) else f"{k}: {v}" for k, v in m.items()))


def _import(args: argparse.Namespace) -> None:
    from unmask.tasks.proteins.pretrained import import_pretrained

    out = import_pretrained(args.name, args.out or f"runs/plm/{args.name}")
    print(f"{args.name}: {out} (use --model hf:{out})")


def _antibodies(args: argparse.Namespace) -> None:
    from unmask.tasks.proteins.antibody import heavy_chains
    from unmask.tasks.proteins.fasta import write_fasta
    from unmask.tasks.proteins.uniprot import dump_metastudent

    chains = heavy_chains(dump_metastudent())
    write_fasta(args.out, chains)
    print(f"{len(chains)} heavy-chain variable domains: {args.out}", file=sys.stderr)


def _infill(args: argparse.Namespace) -> None:
    from unmask.decode import TokenRule, policy_spec
    from unmask.tasks import task_denoiser
    from unmask.tasks.proteins.antibody import AntibodyTask
    from unmask.tasks.proteins.fasta import Record, write_fasta
    from unmask.tasks.proteins.infill import infill
    from unmask.tasks.proteins.task import decode_residues

    rule = TokenRule(args.temperature)
    if not args.model:
        raise UnmaskError("infill needs --model: a pretrained antibody model, e.g. hf:runs/plm/antiberty "
                          "(`unmask proteins import antiberty`)")
    check_policy(args)
    if args.out is not None:  # (--out '' is refused, not taken for no --out)
        check_output_file(args.out, input_paths(args))
    loaded = load_for_eval(args, "antibodies")
    writer = task_denoiser("antibodies", loaded)
    judges = {}
    for k, spec in enumerate(args.judge or []):
        judge = task_denoiser("antibodies", load_denoiser(spec, args.device, task="antibodies"))
        name = Path(spec.split(":", 1)[-1]).name
        judges[name if name not in judges else f"{name}_{k + 1}"] = judge
    # every model must hold the sequences: the shortest capacity lays them out
    task = AntibodyTask(min(m.cfg.seq_len for m in [writer, *judges.values()]), args.cdrs)
    for m in [writer, *judges.values()]:
        task.check_model(m)
    antibodies = task.read(args.antibodies)
    policy = policy_from_args(args, loaded, writer)
    m, tokens = infill(task, writer, antibodies, policy, rule, args.samples, args.seed, args.batch_size, judges,
                       progress=not args.json)
    m = {"model": args.model, "policy": policy_spec(policy), "temperature": args.temperature, "seed": args.seed, **m}
    if args.out:
        names = [f"{a.name}_s{j} policy={m['policy']} T={args.temperature}" for a in antibodies for j in range(args.samples)]
        write_fasta(args.out, [Record(n, s) for n, s in zip(names, decode_residues(tokens))])
    if args.json:
        print(dumps_strict(m))
    else:
        print("\n".join(f"{k}: {v:.4g}" if isinstance(v, float) else f"{k}: {v}" for k, v in m.items()))


def add_parser(sub) -> None:
    """``unmask proteins ...``."""
    from unmask.model import ModelConfig
    from unmask.tasks.proteins.uniprot import DataConfig
    from unmask.train import TrainConfig

    proteins = sub.add_parser("proteins", help="protein sequences: UniProt data, train, generate, judge by JSD")
    ps = proteins.add_subparsers(dest="action", required=True,
                                 metavar="{data,train,train-order,generate,eval,import,antibodies,infill}")
    d = ps.add_parser("data", formatter_class=HelpFormatter,
                      help="UniProt train/val/test FASTA from Debian metastudent-data (needs ncbi-blast+ and mmseqs2)")
    d.add_argument("--out", default="data/proteins", help="folder for train.fasta, val.fasta, test.fasta, manifest.json")
    add_dataclass_args(d, DataConfig)
    d.set_defaults(run=_data)

    t = ps.add_parser("train", help="train the protein MDM (residues masked, length given)", formatter_class=HelpFormatter)
    t.add_argument("--data", required=True, help="training FASTA")
    t.add_argument("--val", help="validation FASTA, scored by masked-residue perplexity")
    t.add_argument("--val-n", type=positive_int, default=500, help="validation sequences to score")
    t.add_argument("--out", required=True, help="run directory (checkpoint.pt, log.jsonl, model/)")
    t.add_argument("--resume", action="store_true", help="continue the run in --out")
    t.add_argument("--max-len", type=positive_int, help=f"positions of a fresh model (default: {MAX_LEN})")
    add_init_arg(t)
    add_dataclass_args(t, TrainConfig)
    add_dataclass_args(t, ModelConfig, MODEL_FLAGS)
    t.set_defaults(run=_train)
    add_train_order_parser(ps, "proteins", DEFAULT_MODEL, "FASTA of proteins (each decode starts from its length, all "
                           "masked; its residues are x_0)")

    g = ps.add_parser("generate", help="generate proteins of given lengths with a decoding policy (FASTA out)",
                      formatter_class=HelpFormatter, epilog=policy_epilog())
    g.add_argument("--n", type=positive_int, default=500, help="proteins to generate")
    g.add_argument("--length", type=parse_lengths, default=(50, 100), metavar="LO:HI",
                   help="residues per protein (default: 50:100)")
    g.add_argument("--reference", default=str(DEFAULT_REFERENCE),
                   help="FASTA whose lengths (within --length) are drawn from; '' for uniform lengths")
    g.add_argument("--out", required=True, help="FASTA file of the generated proteins (names carry length, NFE, policy, seed)")
    add_eval_args(g, DEFAULT_MODEL, batch_size=250, outputs=False)
    g.set_defaults(temperature=1.0)
    g.set_defaults(run=_generate)

    e = ps.add_parser("eval", help="JSD of residue and dipeptide frequencies vs a reference, distinct share, NFE, "
                      "nearest-neighbour identity to the training set", formatter_class=HelpFormatter)
    e.add_argument("--generated", required=True, help="FASTA from `unmask proteins generate`")
    e.add_argument("--reference", default=str(DEFAULT_REFERENCE), help="FASTA of real proteins")
    e.add_argument("--train", help="training FASTA: report each generated protein's best mmseqs2 identity to it")
    e.add_argument("--json", action="store_true", help="print one JSON object")
    e.set_defaults(run=_eval)

    from unmask.tasks.proteins.pretrained import PRETRAINED

    i = ps.add_parser("import", formatter_class=HelpFormatter,
                      help="write a pretrained protein LM from its PyPI wheel (AntiBERTy, Sapiens) as a local Hugging Face model")
    i.add_argument("name", choices=list(PRETRAINED), help="the model")
    i.add_argument("--out", help="folder for the Hugging Face model (default: runs/plm/NAME)")
    i.set_defaults(run=_import)

    a = ps.add_parser("antibodies", formatter_class=HelpFormatter,
                      help="the UniProt heavy-chain variable domains (P01xxx) of metastudent-data, as FASTA")
    a.add_argument("--out", default="data/proteins/antibodies.fasta", help="FASTA file")
    a.set_defaults(run=_antibodies)

    f = ps.add_parser("infill", formatter_class=HelpFormatter, epilog=policy_epilog(),
                      help="infill antibody CDRs with a policy; recovery, diversity, judges' pseudo-log-likelihood, NFE")
    f.add_argument("--antibodies", required=True, help="FASTA of heavy-chain variable domains (see `proteins antibodies`)")
    f.add_argument("--cdrs", type=parse_cdrs, default="H3", help="comma-separated CDRs to mask, each once: H1, H2, H3")
    f.add_argument("--samples", type=positive_int, default=4, help="infills per antibody")
    f.add_argument("--judge", action="append", metavar="MODEL",
                   help="a model scoring the infills by pseudo-log-likelihood (repeatable)")
    f.add_argument("--out", metavar="FASTA", help="also write every infilled sequence")
    add_eval_args(f, "", batch_size=64, outputs=False)
    f.set_defaults(temperature=1.0, model=None, run=_infill)
