"""``unmask maths generate|eval`` and ``unmask train maths``."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from unmask.commands.common import add_dataclass_args, from_args, policy_for, positive_int
from unmask.errors import UnmaskError

DEFAULT_MATHS_MODEL = Path(__file__).resolve().parent.parent / "models" / "maths"


def _generate(args: argparse.Namespace) -> None:
    from unmask.tasks.maths.arith import ArithConfig, generate
    from unmask.tasks.maths.data import STANDARD_SETS, gsm_symbolic, read_problems, standard_sets, write_problems

    _refuse_ignored_flags(args)
    if args.standard and args.exclude:
        raise UnmaskError("--exclude applies to a single set, not to --standard (whose sets exclude each other)")
    if not args.standard and not args.out:
        raise UnmaskError("--out FILE is required" + ("" if args.kind == "gsm" else " unless --standard is given"))
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
    from unmask.decode import TokenRule, policy_spec
    from unmask.model import load_model, resolve_device
    from unmask.tasks.maths.data import problems_or_standard
    from unmask.tasks.maths.task import evaluate, shape, with_budget

    device = resolve_device(args.device)
    model = load_model(args.model, task="maths").to(device)
    limit = args.n if args.n or args.problems else 200  # without a file: the first 200 of the test split
    problems = problems_or_standard(args.problems, "test", shape(model.cfg))[:limit]
    policy = with_budget(policy_for(args.policy, model, args.model), args.steps)
    m = evaluate(model, model.cfg, problems, policy, TokenRule(args.temperature), args.batch_size, args.seed, progress=not args.json)
    m = {"policy": policy_spec(policy), "problems": str(args.problems or "standard test split"), **m}
    if args.json:
        print(json.dumps(m))
    else:
        print(f"{m['policy']}: accuracy {m['accuracy']:.1%} on {m['n']} problems, mean NFE {m['mean_nfe']:.2f}")
        for ex in m["examples"]:
            print(f"  Q: {ex['question']}\n  A: {ex['output']!r} (target {ex['target']})")


def _hf_eval(args: argparse.Namespace) -> None:
    import torch

    from unmask.adapters.hf import HFDenoiser, answer_from_text, generate_answers
    from unmask.decode import TokenRule, parse_policy, policy_spec
    from unmask.decode.semi_ar import SemiAR
    from unmask.tasks.maths.data import read_problems
    from unmask.tasks.maths.task import with_budget

    if args.block and args.gen_length % args.block:
        raise UnmaskError(f"--gen-length {args.gen_length} is not a multiple of --block {args.block}")
    with_budget(parse_policy(args.policy), args.steps)  # these checks come before a load that may take minutes
    problems = read_problems(args.problems)[: args.n]
    rule = TokenRule(args.temperature)
    dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16}[args.dtype]
    model, tok = HFDenoiser.from_pretrained(args.model_dir, trust_remote_code=args.trust_remote_code,
                                            shift_logits=args.shift_logits, device=args.device, dtype=dtype)
    policy = with_budget(policy_for(args.policy, model, args.model_dir), args.steps)
    gen = generate_answers(model, tok, [p.question for p in problems], policy, args.gen_length, args.block, rule,
                           args.batch_size, args.seed, progress=not args.json)
    correct = [answer_from_text(t) == p.answer for t, p in zip(gen.texts, problems)]
    spec = str(SemiAR(policy, args.block)) if args.block else policy_spec(policy)
    m = {"policy": spec, "n": len(problems), "accuracy": sum(correct) / len(problems),
         "mean_nfe": float(gen.nfe.double().mean()), "seconds": round(gen.seconds, 2)}
    print(json.dumps(m) if args.json else f"{spec}: accuracy {m['accuracy']:.1%} on {m['n']}, mean NFE {m['mean_nfe']:.1f}")


def _train(args: argparse.Namespace) -> None:
    from unmask.model import ModelConfig
    from unmask.tasks.maths.data import read_problems
    from unmask.tasks.maths.task import MathsTask, default_model_config
    from unmask.train import TrainConfig, train

    cfg = from_args(TrainConfig, args)
    model_cfg = from_args(ModelConfig, args, default_model_config(args.prompt_len, args.answer_len))
    problems = read_problems(args.data)
    val = read_problems(args.val)[: args.val_n] if args.val else []
    train(MathsTask(problems, model_cfg, val), cfg, args.out, model_cfg, resume=args.resume)


def add_parser(sub) -> None:
    """``unmask maths ...``."""
    from unmask.tasks.maths.arith import ArithConfig

    maths = sub.add_parser("maths", help="maths word problems: generate sets, evaluate decoding policies")
    ms = maths.add_subparsers(dest="action", required=True)
    g = ms.add_parser("generate", help="write GSM8K-style JSONL problems (question, answer ending '#### n')")
    g.add_argument("--kind", choices=["arith", "gsm"], default="arith", help="arith: synthetic multi-step; gsm: reasoning-gym gsm_symbolic")
    g.add_argument("--n", type=positive_int, help="problems (default 1000)")
    g.add_argument("--seed", type=int, help="default 0")
    g.add_argument("--split", choices=["train", "test"], help="gsm: templates of the train or the test split (default test)")
    g.add_argument("--standard", action="store_true", help="arith: write the project's train/val/test sets")
    g.add_argument("--out", help="JSONL file (with --standard: a folder, default data/maths)")
    g.add_argument("--exclude", action="append", metavar="JSONL", help="drop questions that appear in this file (repeatable), e.g. a test split")
    add_dataclass_args(g, ArithConfig)
    g.set_defaults(run=_generate)

    e = ms.add_parser("eval", help="infill answers with a policy; exact final answers, mean NFE")
    e.add_argument("--problems", help="GSM8K-style JSONL (default: the first --n (200) of the standard test split)")
    e.add_argument("--policy", default="sequential", help="SPEC, e.g. top_prob, margin, random, eb:gamma=0.1")
    e.add_argument("--steps", type=positive_int, help="step budget T for fixed-budget policies (random, top_prob, margin)")
    e.add_argument("--model", default=str(DEFAULT_MATHS_MODEL), help="model directory")
    e.add_argument("--n", type=positive_int, help="only the first N problems")
    e.add_argument("--temperature", type=float, default=0.0)
    e.add_argument("--batch-size", type=positive_int, default=128)
    e.add_argument("--device", default="cpu", help="where the model runs (the decode loop stays on the CPU)")
    e.add_argument("--seed", type=int, default=0)
    e.add_argument("--json", action="store_true", help="print one JSON object")
    e.set_defaults(run=_eval)

    h = ms.add_parser("hf-eval", help="GSM8K-style evaluation of a local Hugging Face masked diffusion LM (LLaDA/Dream)")
    h.add_argument("--model-dir", required=True, help="local directory with the model and tokenizer (never downloaded)")
    h.add_argument("--problems", required=True, help="GSM8K-style JSONL (e.g. GSM8K's test.jsonl)")
    h.add_argument("--policy", default="top_prob", help="SPEC")
    h.add_argument("--steps", type=positive_int, help="step budget of fixed-budget policies (per block with --block)")
    h.add_argument("--gen-length", type=positive_int, default=256, help="masked positions after the prompt")
    h.add_argument("--block", type=positive_int, help="semi-autoregressive blocks of this length (LLaDA)")
    h.add_argument("--n", type=positive_int, help="only the first N problems")
    h.add_argument("--device", default="cpu")
    h.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32")
    h.add_argument("--trust-remote-code", action="store_true", help="needed by LLaDA/Dream checkpoints")
    h.add_argument("--shift-logits", action="store_true", help="Dream-style models predict token i at position i-1")
    h.add_argument("--temperature", type=float, default=0.0)
    h.add_argument("--batch-size", type=positive_int, default=8)
    h.add_argument("--seed", type=int, default=0)
    h.add_argument("--json", action="store_true")
    h.set_defaults(run=_hf_eval)


def add_train_parser(tsub) -> None:
    """``unmask train maths ...``."""
    from unmask.model import ModelConfig
    from unmask.train import TrainConfig

    t = tsub.add_parser("maths", help="train the maths MDM: question given, answer region infilled")
    t.add_argument("--data", required=True, help="training JSONL")
    t.add_argument("--val", help="validation JSONL, scored by sequential decoding")
    t.add_argument("--val-n", type=positive_int, default=200)
    t.add_argument("--out", required=True, help="run directory")
    t.add_argument("--resume", action="store_true")
    t.add_argument("--prompt-len", type=int, default=144, help="question positions (left-padded)")
    t.add_argument("--answer-len", type=int, default=48, help="answer region positions (EOS-padded)")
    add_dataclass_args(t, TrainConfig)
    add_dataclass_args(t, ModelConfig, ["d_model", "n_layers", "n_heads", "d_ff", "dropout", "rope"])
    t.set_defaults(run=_train)
