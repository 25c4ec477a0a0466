"""``unmask maths generate|train|eval|demo``."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from functools import partial
from pathlib import Path

from unmask.commands.common import (
    HelpFormatter,
    add_dataclass_args,
    add_demo_args,
    add_eval_args,
    add_init_arg,
    check_policy,
    deprecated,
    from_args,
    input_paths,
    integer,
    json_record,
    load_demo_model,
    load_for_eval,
    policy_epilog,
    policy_from_args,
    positive_int,
    print_demo_table,
    renamed_flag,
    seed_int,
    train_inputs,
    write_outputs,
)
from unmask.commands.order import add_train_order_parser
from unmask.errors import UnmaskError
from unmask.io import check_output_file, dumps_strict
from unmask.tasks.maths.task import DEFAULT_MODEL

PROMPT_LEN, ANSWER_LEN = 144, 48  # default layout of a fresh `maths train` run
# the model shape `maths train` takes from flags
MODEL_FLAGS = ["prompt_len", "answer_len", "d_model", "n_layers", "n_heads", "d_ff", "dropout", "rope"]
DEMO_N = 40  # fresh problems in `maths demo`: every default policy in about DEMO_SECONDS
DEMO_SECONDS = 60  # wall time of `unmask maths demo` on 2 CPU cores (shipped maths model; measured 2026-12)
DEMO_POLICIES = [f"{name}:steps={t}" for t in (4, 10) for name in ("random", "top_prob", "margin")] + [
    "sequential", "threshold:tau=0.9", "eb:gamma=0.1", "mi:gamma=0.1"]  # fixed budgets at 4 and 10 passes; adaptive ones


def _generate(args: argparse.Namespace) -> None:
    from unmask.tasks.maths.arith import ArithConfig, generate
    from unmask.tasks.maths.data import STANDARD_SETS, gsm_symbolic, read_problems, standard_sets, write_problems

    renamed_flag(args, "old_operations", "operations", "--steps on maths generate")
    _refuse_ignored_flags(args)
    if args.standard and args.exclude:
        raise UnmaskError("--exclude applies to a single set, not to --standard (whose sets exclude each other)")
    if not args.standard and not args.out:
        raise UnmaskError("--out FILE is required" + ("" if args.kind == "gsm" else " unless --standard is given"))
    if args.out and not args.standard:
        check_output_file(args.out, input_paths(args))  # before the generation
    seen = {p.question for path in args.exclude or [] for p in read_problems(path)}
    n, seed = args.n or 1000, args.seed or 0  # the flags default to None so that a given one can be told apart
    if not args.standard:
        if args.kind == "gsm":
            problems = gsm_symbolic(n, seed, test=args.split != "train")
        else:
            problems = generate(from_args(ArithConfig, args), n, seed)
        kept = [p for p in problems if p.question not in seen]
        write_problems(args.out, kept)
        if args.exclude:
            print(f"{len(kept)} problems ({len(problems) - len(kept)} in --exclude files dropped)", file=sys.stderr)
        return
    cfg = from_args(ArithConfig, args)
    out = Path(args.out or "data/maths")
    for name, problems in standard_sets(cfg).items():
        write_problems(out / f"{name}.jsonl", problems)
        dropped = STANDARD_SETS[name][0] - len(problems)
        print(f"{name}: {len(problems)} problems ({dropped} seen before and dropped)", file=sys.stderr)


def _refuse_ignored_flags(args: argparse.Namespace) -> None:
    """A flag that the chosen kind of set would ignore is an error, never silently dropped."""
    from unmask.tasks.maths.arith import ArithConfig

    if args.kind == "gsm":
        given = ["--" + f.name.replace("_", "-") for f in dataclasses.fields(ArithConfig) if getattr(args, f.name) is not None]
        if args.standard:
            given.append("--standard")
        if given:
            raise UnmaskError(f"{', '.join(given)}: not used with --kind gsm")
    elif args.split is not None:
        raise UnmaskError("--split: only for --kind gsm")
    if args.standard and (args.n is not None or args.seed is not None):
        raise UnmaskError("--n/--seed: the --standard sets have fixed sizes and seeds")


def _eval(args: argparse.Namespace) -> None:
    from unmask.adapters import HF_PREFIX

    hf = args.model.startswith(HF_PREFIX)
    check_policy(args, args.block if hf else None)  # before a model load that may take minutes
    if hf:
        return _eval_hf(args)
    if args.gen_length is not None or args.block is not None:
        raise UnmaskError("--gen-length/--block: only for a Hugging Face model (--model hf:DIR)")
    from unmask.decode import TokenRule, policy_spec
    from unmask.dist import is_main
    from unmask.eval import evaluate
    from unmask.tasks.maths.data import problems_or_standard
    from unmask.tasks.maths.task import MathsTask

    loaded = load_for_eval(args, "maths")
    task = MathsTask.for_model(loaded.denoiser.cfg)
    limit = args.n if args.n or args.problems else 200  # without a file: the first 200 of the test split
    problems = problems_or_standard(args.problems, "test", (task.prompt_len, task.answer_len))[:limit]
    policy = policy_from_args(args, loaded)
    m = evaluate(task, loaded.denoiser, problems, policy, TokenRule(args.temperature), args.batch_size, args.seed,
                 progress=not args.json, show=len(problems) if args.out else 3)
    m = {**json_record(args, policy_spec(policy), m), "problems": str(args.problems or "standard test split")}
    if not is_main():
        return
    write_outputs(args, m["examples"])
    m["examples"] = m["examples"][:3]
    if args.json:
        print(dumps_strict(m))
    else:
        print(f"{m['policy']}: accuracy {m['accuracy']:.1%} on {m['n']} problems, mean NFE {m['mean_nfe']:.2f}")
        for ex in m["examples"]:
            print(f"  Q: {ex['question']}\n  A: {ex['output']!r} (target {ex['target']})")


def _eval_hf(args: argparse.Namespace) -> None:
    """GSM8K-style problems with a local Hugging Face masked diffusion LM (LLaDA/Dream)."""
    from unmask.decode import SemiAR, TokenRule, policy_spec
    from unmask.dist import is_main
    from unmask.tasks.maths.data import read_problems
    from unmask.tasks.maths.gsm8k import answer_from_text, generate_answers

    gen_length = args.gen_length or 256
    if args.block and gen_length % args.block:
        raise UnmaskError(f"--gen-length {gen_length} is not a multiple of --block {args.block}")
    if not args.problems:
        raise UnmaskError("--problems FILE is required with a Hugging Face model (e.g. GSM8K's test.jsonl)")
    problems = read_problems(args.problems)[: args.n]
    loaded = load_for_eval(args, "maths")
    policy = policy_from_args(args, loaded)
    gen = generate_answers(loaded.denoiser, loaded.tokenizer, [p.question for p in problems], policy, gen_length, args.block,
                           TokenRule(args.temperature), args.batch_size, args.seed, progress=not args.json)
    correct = [answer_from_text(t) == p.answer for t, p in zip(gen.texts, problems)]
    spec = str(SemiAR(policy, args.block)) if args.block else policy_spec(policy)
    m = {"n": len(problems), "accuracy": sum(correct) / len(problems), "mean_nfe": float(gen.nfe.double().mean()),
         "max_nfe": int(gen.nfe.max()), "seconds": round(gen.seconds, 3),
         "examples_per_s": round(len(problems) / max(gen.seconds, 1e-9), 2)}  # the keys of unmask.eval.evaluate
    if gen.extra_passes.any():
        m["extra_passes"] = float(gen.extra_passes.double().mean())
    m = {**json_record(args, spec, m), "problems": str(args.problems)}
    if is_main():
        write_outputs(args, [{"question": p.question, "output": t, "target": p.answer, "correct": ok, "nfe": int(k)}
                             for p, t, ok, k in zip(problems, gen.texts, correct, gen.nfe)])
        print(dumps_strict(m) if args.json else f"{spec}: accuracy {m['accuracy']:.1%} on {m['n']}, mean NFE {m['mean_nfe']:.1f}")


def _hf_eval_alias(args: argparse.Namespace) -> None:
    """The old ``unmask maths hf-eval --model-dir DIR`` spelling of ``eval --model hf:DIR``."""
    if args.model != str(DEFAULT_MODEL):
        raise UnmaskError("hf-eval takes --model-dir DIR; give either that or `eval --model hf:DIR`, not --model")
    deprecated("`unmask maths hf-eval --model-dir DIR`", "`unmask maths eval --model hf:DIR`")
    args.model = "hf:" + args.model_dir
    _eval(args)


def _demo(args: argparse.Namespace) -> None:
    import time

    from unmask.eval import compare
    from unmask.policies import build_policy
    from unmask.tasks.maths.arith import ArithConfig, generate
    from unmask.tasks.maths.data import STANDARD_SETS
    from unmask.tasks.maths.task import MathsTask

    started = time.perf_counter()
    seeds = {seed for _, seed in STANDARD_SETS.values()}
    if args.seed in seeds:
        raise UnmaskError(f"--seed {args.seed} draws a standard split; choose another for fresh problems")
    loaded = load_demo_model(args, "maths")
    model = loaded.denoiser
    task = MathsTask.for_model(model.cfg)
    print(f"model: {args.model} ({model.num_parameters() / 1e6:.2f}M parameters)", file=sys.stderr)
    problems = generate(ArithConfig(operations=args.operations), args.n, args.seed)
    policies = [build_policy(s, model, loaded.directory) for s in args.policies or DEMO_POLICIES]
    print_demo_table(compare(task, model, {f"fresh ({args.n})": problems}, policies, batch_size=128), started)


def _train(args: argparse.Namespace) -> None:
    from unmask.tasks.maths.data import read_problems
    from unmask.tasks.maths.task import MathsTraining, default_model_config
    from unmask.train import TrainConfig, train

    cfg = from_args(TrainConfig, args)
    problems = read_problems(args.data)
    fresh = partial(default_model_config, args.prompt_len or PROMPT_LEN, args.answer_len or ANSWER_LEN)
    if args.init and (args.prompt_len or args.answer_len):
        raise UnmaskError("--prompt-len/--answer-len: a run started from --init keeps that model's layout; leave them out")
    model_cfg, source, init = train_inputs(args, MODEL_FLAGS, fresh)
    val = read_problems(args.val)[: args.val_n] if args.val else []
    train(MathsTraining(problems, model_cfg, val), cfg, args.out, model_cfg, resume=args.resume, source=source, init=init)


def add_parser(sub) -> None:
    """``unmask maths ...``."""
    from unmask.tasks.maths.arith import ArithConfig

    maths = sub.add_parser("maths", help="maths word problems: generate sets, train, evaluate decoding policies, demo")
    ms = maths.add_subparsers(dest="action", required=True, metavar="{generate,train,train-order,eval,demo}")
    g = ms.add_parser("generate", help="write GSM8K-style JSONL problems (question, answer ending '#### n')",
                      formatter_class=HelpFormatter)
    g.add_argument("--kind", choices=["arith", "gsm"], default="arith",
                   help="arith: synthetic multi-step; gsm: reasoning-gym gsm_symbolic")
    g.add_argument("--n", type=positive_int, help="problems (default 1000)")
    g.add_argument("--seed", type=seed_int, help="default 0")
    g.add_argument("--split", choices=["train", "test"], help="gsm: templates of the train or the test split (default test)")
    g.add_argument("--standard", action="store_true", help="arith: write the project's train/val/test sets")
    g.add_argument("--out", help="JSONL file (with --standard: a folder, default data/maths)")
    g.add_argument("--exclude", action="append", metavar="JSONL",
                   help="drop questions that appear in this file (repeatable), e.g. a test split")
    add_dataclass_args(g, ArithConfig)
    g.add_argument("--steps", dest="old_operations", type=integer, help=argparse.SUPPRESS)  # old name of --operations
    g.set_defaults(run=_generate)

    add_train_parser(ms, "train")
    add_train_order_parser(ms, "maths", DEFAULT_MODEL, "GSM8K-style JSONL (the answer is x_0)")

    e = ms.add_parser("eval", help="infill answers with a policy; exact final answers, mean NFE",
                      formatter_class=HelpFormatter, epilog=policy_epilog())
    _add_eval_flags(e)
    e.set_defaults(run=_eval)

    h = ms.add_parser("hf-eval", help=argparse.SUPPRESS, formatter_class=HelpFormatter)  # old spelling, one release
    h.add_argument("--model-dir", required=True, help="local directory with the model and tokenizer")
    _add_eval_flags(h)
    h.set_defaults(run=_hf_eval_alias, policy="top_prob")
    ms._choices_actions = [a for a in ms._choices_actions if a.dest != "hf-eval"]  # hidden from --help (not ==SUPPRESS==)

    dm = ms.add_parser("demo", help=f"fresh problems, fixed budgets and adaptive policies, one table (about {DEMO_SECONDS} s on "
                       "2 CPU cores)", formatter_class=HelpFormatter, epilog=policy_epilog(),
                       description=f"Answer {DEMO_N} fresh arithmetic problems with every default policy: about "
                       f"{DEMO_SECONDS} seconds\n"
                       "on 2 CPU cores with the shipped model. --n widens the set (the time grows about in proportion\n"
                       "to --n).")
    dm.add_argument("--n", type=positive_int, default=DEMO_N, help=f"fresh problems; the default takes about {DEMO_SECONDS} s "
                    "on 2 CPU cores, more widens the table's sample")
    dm.add_argument("--seed", type=seed_int, default=2026, help="seed of the fresh problems (not a standard split's)")
    dm.add_argument("--operations", type=positive_int, default=2, help="chained operations per problem (3 for maths-3step)")
    add_demo_args(dm, DEFAULT_MODEL, " ".join(DEMO_POLICIES))
    dm.set_defaults(run=_demo)


def _add_eval_flags(e: argparse.ArgumentParser) -> None:
    e.add_argument("--problems", help="GSM8K-style JSONL (default: the first --n (200) of the standard test split)")
    e.add_argument("--n", type=positive_int, help="only the first N problems (default: all of --problems, else 200)")
    add_eval_args(e, DEFAULT_MODEL, batch_size=128)
    hf = [g for g in e._action_groups if g.title.startswith("Hugging Face")][0]
    hf.add_argument("--gen-length", type=positive_int, help="masked positions after the prompt (default 256)")
    hf.add_argument("--block", type=positive_int, help="semi-autoregressive blocks of this length (LLaDA)")


def add_train_parser(sub, name: str = "maths") -> None:
    """``unmask maths train ...`` (and the old spelling ``unmask train maths``)."""
    from unmask.model import ModelConfig
    from unmask.train import TrainConfig

    t = sub.add_parser(name, help="train the maths MDM: question given, answer region infilled", formatter_class=HelpFormatter)
    t.add_argument("--data", required=True, help="training JSONL")
    t.add_argument("--val", help="validation JSONL, scored by sequential decoding")
    t.add_argument("--val-n", type=positive_int, default=200)
    t.add_argument("--out", required=True, help="run directory")
    t.add_argument("--resume", action="store_true")
    add_init_arg(t)
    t.add_argument("--prompt-len", type=positive_int, help=f"question positions, left-padded (default: {PROMPT_LEN})")
    t.add_argument("--answer-len", type=positive_int, help=f"answer region positions, EOS-padded (default: {ANSWER_LEN})")
    add_dataclass_args(t, TrainConfig)
    add_dataclass_args(t, ModelConfig, [f for f in MODEL_FLAGS if f not in ("prompt_len", "answer_len")])
    t.set_defaults(run=_train)
