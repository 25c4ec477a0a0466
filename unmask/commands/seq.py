"""``unmask seq generate|eval``: fill the user's own sequences (FASTA, JSONL or plain text) with any model."""

from __future__ import annotations

import argparse

from unmask.commands.common import (
    HelpFormatter,
    add_dataclass_args,
    add_eval_args,
    check_policy,
    from_args,
    json_record,
    load_for_eval,
    policy_epilog,
    policy_from_args,
    positive_int,
    write_outputs,
)
from unmask.commands.order import add_train_order_parser
from unmask.errors import UnmaskError
from unmask.io import dumps_strict

BATCH_SIZE = 64  # sequences per forward pass for an unmask model (hf: models take 8, as on every command)
COLUMNS = ["policy", "n", "mean_nfe", "max_nfe", "accuracy %", "pll", "judge_pll"]  # eval's table, the measured ones
SHOWN = 3  # decoded examples eval prints under its table


def _prepared(args: argparse.Namespace):
    """What ``generate`` and ``eval`` share: the flags checked and the file read before the model loads,
    then the model, the task bound to it, each example's row, the policy and the decode."""
    from unmask.decode import SemiAR, TokenRule, policy_spec
    from unmask.tasks.seq.buckets import fill_rows
    from unmask.tasks.seq.task import SeqConfig, bind, read_seq

    config = from_args(SeqConfig, args)
    rule = TokenRule(args.temperature)
    check_policy(args, config.block or None)  # spec, budget and --out, before a load that may take minutes
    examples = read_seq(args.examples, config)[: args.n]
    judge = _judge(args, config) if getattr(args, "judge", None) else None
    loaded = load_for_eval(args, None)
    task, denoiser = bind(loaded, config)
    rows = task.rows(examples)
    policy = policy_from_args(args, loaded, denoiser)
    filled = fill_rows(denoiser, rows, policy, rule, args.batch_size, args.seed, config.block, progress=not args.json)
    spec = str(SemiAR(policy, config.block)) if config.block else policy_spec(policy)
    return examples, task, denoiser, rows, filled, spec, judge


def _judge(args: argparse.Namespace, config):
    """The ``--judge`` model bound to the same choices (its own tokenizer, or the same alphabet)."""
    from unmask.tasks.seq.task import bind

    return bind(load_for_eval(argparse.Namespace(**{**vars(args), "model": args.judge}), None), config)


def _summary(filled) -> dict:
    """NFE and speed of a decode, under the keys of :func:`unmask.eval.evaluate`."""
    nfe = filled.nfe.double()
    n = len(nfe)
    out = {"n": n, "mean_nfe": float(nfe.mean()), "min_nfe": int(nfe.min()), "max_nfe": int(nfe.max()),
           "seconds": round(filled.seconds, 3), "examples_per_s": round(n / max(filled.seconds, 1e-9), 2)}
    if filled.extra_passes.any():
        out["extra_passes"] = float(filled.extra_passes.double().mean())
    return out


def _generate(args: argparse.Namespace) -> None:
    from unmask.dist import is_main
    from unmask.tasks.seq.task import records

    if not args.out:
        raise UnmaskError("--out FILE is required (JSONL: one filled sequence per line)")
    examples, task, _, rows, filled, spec, _ = _prepared(args)
    if not is_main():
        return
    write_outputs(args, records(task.codec, examples, rows, filled.tokens, filled.nfe))
    m = {**json_record(args, spec, _summary(filled)), "input": args.examples, "out": args.out}
    print(dumps_strict(m) if args.json else f"{m['n']} sequences filled by {spec} at mean NFE {m['mean_nfe']:.2f}: {args.out}")


def _eval(args: argparse.Namespace) -> None:
    from unmask.dist import is_main
    from unmask.eval import markdown_table
    from unmask.tasks.seq.pll import pseudo_log_likelihood, transcode
    from unmask.tasks.seq.score import scorer, target_text
    from unmask.tasks.seq.task import records

    rule = scorer(args.answer_regex)  # a bad regex before any work
    examples, task, denoiser, rows, filled, spec, judge = _prepared(args)
    out = records(task.codec, examples, rows, filled.tokens, filled.nfe)
    targets = [target_text(task.codec, ex, r) for ex, r in zip(examples, rows)]
    have = sum(t is not None for t in targets)
    if 0 < have < len(targets):
        missing = next(ex.name for ex, t in zip(examples, targets) if t is None)
        raise UnmaskError(f"{have} of {len(targets)} examples have a target ({missing} has none): give every one a target, "
                          "or none (to score by pseudo-log-likelihood)")
    if args.answer_regex and not have:
        raise UnmaskError("--answer-regex: no example has a target to compare with")
    m = _summary(filled)
    if have:
        for rec, t in zip(out, targets):
            rec |= {"target": t, "correct": rule.correct(rec["answer"], t)}
        m["accuracy"] = sum(r["correct"] for r in out) / len(out)
    else:
        _pll(m, out, "pll", pseudo_log_likelihood(denoiser.base, filled.tokens, [r.fill for r in rows], args.batch_size))
    if judge is not None:
        (jtask, jden), name = judge, "judge_pll"
        tokens, fills = transcode(rows, filled.tokens, task.codec, jtask.codec)
        for ex, t in zip(examples, tokens):
            jtask.setup.lengths.check(len(t), f"--judge: {ex.name}")
        _pll(m, out, name, pseudo_log_likelihood(jden.base, tokens, fills, args.batch_size))
    m = {**json_record(args, spec, m), "input": args.examples}
    if args.judge:
        m["judge"] = args.judge
    if not is_main():
        return
    write_outputs(args, out)
    if args.json:
        print(dumps_strict(m))
        return
    row = {**m, "accuracy %": 100 * m["accuracy"] if have else None}
    print(markdown_table([row], [c for c in COLUMNS if row.get(c) is not None]))
    for rec in out[:SHOWN]:
        print(f"  {rec['name']}: {rec['answer']!r}" + (f" (target {rec['target']!r})" if have else ""))


def _pll(metrics: dict, out: list[dict], key: str, pll) -> None:
    """Put a pseudo-log-likelihood's per-example values in the records and its mean in the metrics."""
    for rec, v in zip(out, pll.tolist()):
        rec[key] = v
    metrics[key] = float(pll.mean())


def add_parser(sub) -> None:
    """``unmask seq ...``."""
    from unmask.tasks.seq.task import SeqConfig

    seq = sub.add_parser("seq", help="your own sequences (FASTA, JSONL, text): fill masks, spans or continuations; "
                         "score them")
    ss = seq.add_subparsers(dest="action", required=True, metavar="{generate,eval,train-order}")
    g = ss.add_parser("generate", formatter_class=HelpFormatter, epilog=policy_epilog(),
                      help="fill each sequence's positions (masks, --spans, or --generate N after it); JSONL out",
                      description="Fill the positions of each sequence of --input and write one JSON line per sequence:\n"
                      "index, name, text (the whole sequence), answer (the filled text), filled (its tokens),\n"
                      "positions (counted as --spans counts) and nfe. Nothing outside those positions changes.")
    e = ss.add_parser("eval", formatter_class=HelpFormatter, epilog=policy_epilog(),
                      help="fill and score: exact match (or --answer-regex) against targets, else pseudo-log-likelihood",
                      description="Fill every sequence, then score it: against its target (a JSONL target field, or the\n"
                      "tokens under --spans) by exact match or --answer-regex; without targets by the model's own\n"
                      "pseudo-log-likelihood of the filled positions, and with --judge MODEL by a second model's.")
    for p in (g, e):
        p.add_argument("--input", dest="examples", required=True, metavar="FILE",
                       help="FASTA, JSONL or text (one sequence per line); --format says which")
        p.add_argument("--n", type=positive_int, help="only the first N sequences")
        add_dataclass_args(p, SeqConfig)
        add_eval_args(p, None, batch_size=BATCH_SIZE)
        model = next(a for a in p._actions if a.dest == "model")
        model.required, model.default = True, None  # no shipped model: the user's own
    g.set_defaults(run=_generate)
    e.add_argument("--answer-regex", metavar="RE", default="",
                   help="compare RE's first match in the filled text (its first group that matched, if RE has groups) with "
                   "the target's (or the whole target where RE finds nothing)")
    e.add_argument("--judge", metavar="MODEL", help="also score the fills by this model's pseudo-log-likelihood (hf:DIR, ...)")
    e.set_defaults(run=_eval)
    add_train_order_parser(ss, "seq", None, "sequences of one length with their targets (the filled positions' x_0: "
                           "--spans, a JSONL target field, or the continuation of --generate)")
