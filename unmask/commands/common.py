"""Helpers shared by the command modules: typed flags from dataclasses, and the flags every
evaluating command shares (model, policy, budget, device, token rule)."""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import re
import sys
import typing

from unmask.errors import UnmaskError
from unmask.io import dumps_strict

# integers a flag accepts lie in (-INT_LIMIT, INT_LIMIT): counts, seeds and sizes beyond overflow torch's int64 arithmetic
INT_LIMIT = 2**31


def integer(text: str) -> int:
    """argparse type: an integer of magnitude below :data:`INT_LIMIT`."""
    value = int(text)
    if abs(value) >= INT_LIMIT:
        raise argparse.ArgumentTypeError(f"{text} is out of range (|value| < 2**31)")
    return value


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1 (below :data:`INT_LIMIT`)."""
    value = integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def seed_int(text: str) -> int:
    """argparse type: a seed, an integer in [0, 2**31); every command refuses a negative one alike, at the flag."""
    value = integer(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"a seed must be >= 0, got {value}")
    return value


def temperature(text: str) -> float:
    """argparse type: a finite number >= 0 (inf would turn the −∞ logits of ruled-out tokens into NaN)."""
    value = float(text)
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text}")
    return value


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Shows every flag's default (once, and only a real one) and keeps the policy list's line breaks."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if action.default is None or action.default is False or "(default:" in text:  # (0 and 0.0 are real defaults)
            return text
        return super()._get_help_string(action)


def deprecated(old: str, new: str) -> None:
    """One line on stderr: an old spelling still works for this release."""
    print(f"unmask: note: {old} is now {new}; the old spelling goes in the next release", file=sys.stderr)


def policy_epilog() -> str:
    """Every registered policy with its defaults and one-line rule (the ``--help`` epilog)."""
    from unmask.policies import describe_policies

    return "policies (SPEC = name or name:key=value,...; defaults shown):\n  " + "\n  ".join(describe_policies())


def field_comments(cls: type) -> dict[str, str]:
    """The comment on each field of a config dataclass (``steps: int = 6000  # optimizer steps``)."""
    try:
        source = inspect.getsource(cls)
    except (OSError, TypeError):
        return {}
    found = (re.match(r"\s+(\w+)\s*:[^#]*#\s*(.+)$", line) for line in source.splitlines())
    return {m.group(1): m.group(2).strip() for m in found if m}


def add_dataclass_args(parser: argparse.ArgumentParser, cls: type, only: list[str] | None = None) -> None:
    """One ``--flag`` per dataclass field, its comment as help (default None = keep the dataclass default, shown)."""
    hints = typing.get_type_hints(cls)
    comments = field_comments(cls)
    for f in dataclasses.fields(cls):
        if only is not None and f.name not in only:
            continue
        flag = "--" + f.name.replace("_", "-")
        default = f.default if f.default is not dataclasses.MISSING else None
        text = comments.get(f.name, "").replace("%", "%%") + ("" if default in (None, "") else f" (default: {default})")
        if hints[f.name] is bool:
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=None, help=text)
        else:
            kind = (seed_int if f.name == "seed" else integer) if hints[f.name] is int else hints[f.name]
            parser.add_argument(flag, type=kind, default=None, metavar=f.name.upper(), help=text)


def from_args(cls: type, args: argparse.Namespace, base=None):
    """Build ``cls`` from the flags that were given, over ``base`` (or the defaults)."""
    given = {f.name: getattr(args, f.name) for f in dataclasses.fields(cls) if getattr(args, f.name, None) is not None}
    return dataclasses.replace(base, **given) if base is not None else cls(**given)


def add_eval_args(p: argparse.ArgumentParser, default_model, batch_size: int, policy: str = "sequential",
                  outputs: bool = True) -> None:
    """The flags of every command that decodes with a model (``outputs``: also ``--out JSONL``)."""
    p.add_argument("--model", default=str(default_model),
                   help="unmask model directory, or hf:DIR for a local Hugging Face masked LM")
    p.add_argument("--policy", default=policy, metavar="SPEC", help="decoding policy (listed below)")
    from unmask.policies import budget_policies

    p.add_argument("--budget", type=positive_int,
                   help=f"passes per sequence for a fixed-budget policy ({', '.join(budget_policies())}; default: the "
                   "spec's steps)")
    p.add_argument("--steps", dest="old_budget", type=positive_int, help=argparse.SUPPRESS)  # old spelling of --budget
    p.add_argument("--temperature", type=temperature, default=0.0, help="token rule: 0 = argmax, > 0 = sample")
    p.add_argument("--batch-size", type=positive_int,
                   help=f"sequences per forward pass (default: {batch_size}; 8 for hf: models)")
    p.set_defaults(default_batch_size=batch_size)
    p.add_argument("--seed", type=seed_int, default=0, help="sequence k gets seed SEED + k (batch-invariant)")
    p.add_argument("--device", default="cpu", help="where the model and the decode loop run (cpu, cuda, cuda:1)")
    add_addon_args(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    if outputs:
        p.add_argument("--out", metavar="JSONL",
                       help="also write every decoded example (input, output, target, correct, nfe), one JSON per line")
    add_hf_args(p)


def add_hf_args(p: argparse.ArgumentParser) -> None:
    """The flags that say how to load a Hugging Face model (refused with an unmask model: :func:`hf_options`)."""
    hf = p.add_argument_group("Hugging Face models (--model hf:DIR)")
    hf.add_argument("--trust-remote-code", action="store_true", help="needed by LLaDA/Dream checkpoints")
    hf.add_argument("--shift-logits", action="store_true", help="Dream-style models predict token i at position i-1")
    hf.add_argument("--dtype", choices=["float32", "bfloat16"], help="weights' dtype (default: float32)")


def hf_options(args: argparse.Namespace):
    """The :class:`~unmask.adapters.HFOptions` of the flags :func:`add_hf_args` adds; refused, in one line,
    for a model they cannot apply to (an unmask model directory)."""
    import torch

    from unmask.adapters import HF_PREFIX, HFOptions, is_pretrained

    given = [flag for flag, on in (("--trust-remote-code", getattr(args, "trust_remote_code", False)),
                                   ("--shift-logits", getattr(args, "shift_logits", False))) if on]
    if given and not str(args.model).startswith(HF_PREFIX):
        raise UnmaskError(f"{', '.join(given)}: only for a Hugging Face model (--model hf:DIR), not {args.model}")
    if getattr(args, "dtype", None) is not None and not is_pretrained(str(args.model)):
        raise UnmaskError(f"--dtype: only for a pretrained model (hf:DIR, esmc:FILE), not {args.model}")
    dtype = {None: torch.float32, "float32": torch.float32, "bfloat16": torch.bfloat16}[getattr(args, "dtype", None)]
    return HFOptions(bool(getattr(args, "trust_remote_code", False)), bool(getattr(args, "shift_logits", False)), dtype)


def add_addon_args(p: argparse.ArgumentParser, order: bool = True) -> None:
    """``--head DIR`` (and ``--order DIR``): the trained add-ons of the model (default: those saved beside it)."""
    p.add_argument("--head", metavar="DIR", help="folder of the MI head the mi policies read (`unmask mi train --out`; "
                   "default: the one beside the model)")
    if order:
        p.add_argument("--order", metavar="DIR", help="folder of the order policy `learned` reads (`unmask <task> "
                       "train-order --out`; default: the one beside the model)")


def add_seq_args(p: argparse.ArgumentParser) -> None:
    """The flags that lay out the user's own sequences (``--task seq``; refused with another task)."""
    from unmask.tasks.seq.task import SeqConfig

    add_dataclass_args(p.add_argument_group("your own sequences (--task seq; see `unmask seq generate --help`)"), SeqConfig)


def task_and_model(name: str, loaded, args: argparse.Namespace):
    """``(task, denoiser)``: task ``name`` laid out for ``loaded`` and the model as the task decodes it.
    The user's own sequences (``seq``) are bound with the flags of :func:`add_seq_args`; they are refused
    for any other task."""
    from dataclasses import fields

    from unmask.tasks import get_task, task_denoiser
    from unmask.tasks.seq.task import SeqConfig, bind

    if name == "seq":
        return bind(loaded, from_args(SeqConfig, args))
    given = ["--" + f.name.replace("_", "-") for f in fields(SeqConfig) if getattr(args, f.name, None) is not None]
    if given:
        raise UnmaskError(f"{', '.join(given)}: only for your own sequences (--task seq / unmask seq)")
    model = task_denoiser(name, loaded)
    return get_task(name, getattr(model, "cfg", None)), model


def check_pretrained_task(spec: str, task: str) -> None:
    """Refuse, in one line, a pretrained model (``hf:DIR``, ``esmc:FILE``) for a task that cannot map its
    vocabulary onto the task's own ids (Sudoku and maths read ids only their own models know)."""
    from unmask.adapters import is_pretrained
    from unmask.tasks import HF_ADAPTERS

    if is_pretrained(spec) and task not in HF_ADAPTERS:
        raise UnmaskError(f"--model {spec}: the {task} task reads its own token ids, which a pretrained model does not "
                          f"know (the tasks that map a pretrained model: {', '.join(HF_ADAPTERS)})")


def add_demo_args(p: argparse.ArgumentParser, default_model, policies_default: str) -> None:
    """The flags a demo shares with the others: the model, the device and the policy list."""
    p.add_argument("--model", default=str(default_model), help="unmask model directory (default: the shipped model)")
    p.add_argument("--device", default="cpu", help="where the model and the decode loop run")
    p.add_argument("--policies", "--policy", dest="policies", nargs="+", metavar="SPEC",
                   help=f"policy specs, one or more (default: {policies_default}); --policy is the same flag")
    p.set_defaults(trust_remote_code=False, shift_logits=False, dtype=None, head=None, order=None)  # unmask models only


DEMO_COLUMNS = ["set", "policy", "mean_nfe", "accuracy %", "seconds", "examples_per_s"]


def print_demo_table(rows: list[dict], started: float) -> None:
    """A demo's table (one row per set and policy: forward passes, accuracy, decoding seconds) on
    stdout, then the demo's wall time since ``started`` (a ``time.perf_counter()``) on stderr."""
    import time

    import torch

    from unmask.eval import markdown_table

    for r in rows:
        r["accuracy %"] = 100 * r["accuracy"]
    print(markdown_table(rows, DEMO_COLUMNS))
    print(f"total {time.perf_counter() - started:.0f} s wall on {torch.get_num_threads()} threads "
          "(--n widens the sets; the time grows with it)", file=sys.stderr)


def renamed_flag(args: argparse.Namespace, old: str, new: str, where: str) -> None:
    """Move a value given under a flag's old name (dest ``old``) to its new one, with a note."""
    if getattr(args, old) is None:
        return
    flag = "--" + new.replace("_", "-")
    if getattr(args, new) is not None:
        raise UnmaskError(f"{where} is the old name of {flag}; give one")
    deprecated(where, flag)
    setattr(args, new, getattr(args, old))


INPUT_FLAGS = ("puzzles", "problems", "examples", "reference", "antibodies", "exclude", "data", "val")  # files a command reads


def input_paths(args: argparse.Namespace) -> list[str]:
    """The files a command was given to read (the values of its :data:`INPUT_FLAGS`), for refusing an
    output that would overwrite one of them."""
    paths = []
    for flag in INPUT_FLAGS:
        value = getattr(args, flag, None)
        paths += [v for v in (value if isinstance(value, list) else [value]) if isinstance(v, str) and v]
    return paths


def settle_eval_args(args: argparse.Namespace) -> None:
    """Resolve what depends on other flags (the old ``--steps``, the batch size of hf: models) and
    refuse an ``--out`` that cannot be written, before any work."""
    from unmask.adapters import HF_PREFIX
    from unmask.io import check_output_file

    renamed_flag(args, "old_budget", "budget", "--steps on eval")
    if getattr(args, "out", None) is not None:  # (--out '' is refused, not taken for no --out)
        check_output_file(args.out, input_paths(args))
    if args.batch_size is None:
        args.batch_size = 8 if args.model.startswith(HF_PREFIX) else args.default_batch_size


def load_for_eval(args: argparse.Namespace, task: str | None, device: str | None = None):
    """The model named by ``--model`` on ``device`` (default ``--device``, else the CPU), an
    :class:`unmask.adapters.Loaded`. An unmask model must be one of ``task``'s, except for your own
    sequences (``seq``), which take any model."""
    from unmask.adapters import load_denoiser

    device = device or getattr(args, "device", None) or "cpu"
    return load_denoiser(args.model, device, task=None if task == "seq" else task, hf=hf_options(args))


def load_demo_model(args: argparse.Namespace, task: str):
    """A demo's model: an unmask model directory (it reports the model's size and shape)."""
    from unmask.adapters import is_pretrained

    if is_pretrained(args.model):
        raise UnmaskError(f"the demo runs an unmask model directory; for {args.model} use "
                          f"`unmask {task} eval --model {args.model}`")
    return load_for_eval(args, task)


def policy_from_args(args: argparse.Namespace, loaded, denoiser=None):
    """The ``--policy`` with ``--budget`` set and its resources attached from the loaded model
    (``denoiser``: the model as the task reads it, when that is not ``loaded.denoiser``)."""
    from unmask.policies import build_policy

    return build_policy(args.policy, denoiser or loaded.denoiser, loaded.directory, args.budget,
                        head_dir=args.head, order_dir=args.order, base=loaded.weights)


def check_policy(args: argparse.Namespace, block: int | None = None):
    """Refuse a bad ``--policy``/``--budget`` (and, with ``block``, a budget the blocks cannot hold)
    before a model load that may take minutes."""
    from unmask.decode import SemiAR
    from unmask.policies import build_policy

    settle_eval_args(args)
    policy = build_policy(args.policy, budget=args.budget, resolve=False, head_dir=args.head, order_dir=args.order)
    return SemiAR(policy, block) if block else policy


def train_inputs(args: argparse.Namespace, model_flags: list[str], fresh_config):
    """``(model_cfg, source, init)`` of ``<task> train``.

    A fresh run's shape comes from the model flags over ``fresh_config()``, or over ``--init``'s
    config when it starts from a trained model (``init``, else None); a resumed run's shape comes from
    its checkpoint (model flags are refused, not ignored). ``source`` identifies ``--data`` (and the
    ``--init`` weights) so that a resumed run refuses other inputs.
    """
    from pathlib import Path

    from unmask.artifacts import MODEL
    from unmask.model import ModelConfig, check_warm_start, load_model
    from unmask.runs import file_digest, read_checkpoint

    source = {"data_sha256": file_digest(args.data)}
    init_dir = getattr(args, "init", None)
    if args.resume:
        given = ["--" + f.replace("_", "-") for f in model_flags if getattr(args, f, None) is not None]
        if given:
            raise UnmaskError(f"{', '.join(given)}: a resumed run keeps the model shape of its checkpoint; leave them out")
        state = read_checkpoint(args.out)
        if init_dir and not (Path(init_dir) / MODEL.weights).is_file():
            raise UnmaskError(f"--init {init_dir}: no {MODEL.weights} there")
        if init_dir and state.get("source", {}).get("init_sha256") != file_digest(Path(init_dir) / MODEL.weights):
            raise UnmaskError(f"--init {init_dir}: the run did not start from this model; a resumed run takes its weights "
                              "from its checkpoint, leave --init out")
        return ModelConfig(**state["model_config"]), source, None
    if not init_dir:
        return from_args(ModelConfig, args, fresh_config()), source, None
    init = load_model(init_dir, task=fresh_config().task)
    cfg = from_args(ModelConfig, args, init.cfg)
    try:
        check_warm_start(cfg, init.cfg)
    except UnmaskError as e:
        raise UnmaskError(f"--init {init_dir}: {e}") from None
    source["init_sha256"] = file_digest(Path(init_dir) / MODEL.weights)
    return cfg, source, init


def add_init_arg(parser: argparse.ArgumentParser) -> None:
    """``--init DIR``: start a fresh training run from a trained model (deeper by stacking)."""
    parser.add_argument("--init", metavar="DIR", help="start from this trained model's weights (same shape, or n_layers a "
                        "multiple of its own: stacked); a fresh optimizer and schedule")


def write_outputs(args: argparse.Namespace, examples: list[dict]) -> None:
    """Write the decoded examples to ``--out`` (JSON lines, atomically), if it was given."""
    from pathlib import Path

    from unmask.io import atomic_write

    if args.out:
        text = "".join(dumps_strict(ex) + "\n" for ex in examples)
        atomic_write(args.out, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))


def json_record(args: argparse.Namespace, policy_spec: str, metrics: dict) -> dict:
    """What ``--json`` prints: the run's settings, then the metrics."""
    from unmask.eval import shown_path

    model = args.model if args.model.startswith("hf:") else shown_path(args.model)
    return {"policy": policy_spec, "model": model, "temperature": args.temperature, "seed": args.seed, **metrics}
