"""How much of each shipped maths model's test split was seen in training: questions and worked solutions.

    python benchmarks/maths/maths_overlap.py                # counts only (~1 min: regenerates the training sets)
    python benchmarks/maths/maths_overlap.py --eval         # + sequential accuracy on the clean and the seen subsets

Test questions are dropped from every training set by construction (``--exclude``, and the standard
sets drop questions seen in an earlier set). But a question is a name, an item and three or four
numbers told in words, while the worked solution (the ``answer`` field, the part the model writes)
holds only the arithmetic chain: the same chain under another name or item is a different question
with a verbatim identical solution. This counts, for each test problem, whether its question and
whether its worked solution appear verbatim in any training set of that model; "clean" problems
are those whose solution appears in none.

The training sets are regenerated in-process with the same library calls the documented commands
make (README, "How the models were made"; they are deterministic by seed), so no data files are
needed:

* ``unmask/models/maths``: the standard train split (CPU phase, ``unmask maths generate --standard``)
  and 400,000 fresh problems of seed 11 without any val or test question (GPU phase,
  ``benchmarks/maths/train_maths_gpu.sh``); test = the standard test split (999 problems).
* ``unmask/models/maths-3step``: 150,000 problems of seed 11 with ``--operations 3`` without any val
  or test question (``train-150k-seed11.jsonl``); test = the standard 3-step test split (its first
  200 are the ones every 3-step table in the README is measured on).

With ``--eval`` each model decodes its test problems (sequential, argmax; the 3-step model its first
200) and the accuracy is split by clean / seen. Writes ``benchmarks/results/maths/maths_overlap.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from unmask.eval import evaluate, shown_path
from unmask.model import load_model
from unmask.policies import build_policy
from unmask.tasks.base import MODELS
from unmask.tasks.maths.arith import ArithConfig, generate
from unmask.tasks.maths.data import standard_sets
from unmask.tasks.maths.task import MathsTask


def fresh(cfg: ArithConfig, n: int, seed: int, exclude: list) -> list:
    """``unmask maths generate --n N --seed S --exclude ...``: fresh problems without excluded questions."""
    seen = {p.question for p in exclude}
    return [p for p in generate(cfg, n, seed) if p.question not in seen]


def setups() -> list[dict]:
    """Each shipped model: its test split, its training sets, and how many test problems its tables use."""
    two = standard_sets(ArithConfig())
    three = standard_sets(ArithConfig(operations=3))
    return [
        {"model": MODELS / "maths", "test": two["test"], "eval_n": len(two["test"]), "train": {
            "standard train (CPU phase)": two["train"],
            "400k seed 11 (GPU phase)": fresh(ArithConfig(), 400_000, 11, two["val"] + two["test"]),
        }},
        {"model": MODELS / "maths-3step", "test": three["test"], "eval_n": 200, "train": {
            "150k seed 11": fresh(ArithConfig(operations=3), 150_000, 11, three["val"] + three["test"]),
        }},
    ]


def overlap(test: list, train: dict) -> tuple[dict, list[bool]]:
    """Counts of test questions and solutions found in each training set and in any; per-problem cleanliness."""
    out = {"test": len(test)}
    seen_solution = [False] * len(test)
    seen_question = [False] * len(test)
    for name, problems in train.items():
        questions = {p.question for p in problems}
        solutions = {p.solution for p in problems}
        hit = [p.solution in solutions for p in test]
        seen_question = [a or p.question in questions for a, p in zip(seen_question, test)]
        out[name] = {"problems": len(problems), "questions_seen": sum(p.question in questions for p in test),
                     "solutions_seen": sum(hit), "distinct_questions": len(questions), "distinct_solutions": len(solutions)}
        seen_solution = [a or b for a, b in zip(seen_solution, hit)]
    out["questions_seen_any"] = sum(seen_question)
    out["solutions_seen_any"] = sum(seen_solution)
    out["clean"] = len(test) - sum(seen_solution)
    return out, [not s for s in seen_solution]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--eval", action="store_true", help="also decode the test problems and split accuracy by clean / seen")
    p.add_argument("--policy", default="sequential", help="decoding policy for --eval")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    p.add_argument("--out", default="benchmarks/results/maths", type=Path)
    args = p.parse_args()

    torch.set_num_threads(args.threads)
    start = time.time()
    results = []
    for s in setups():
        counts, clean = overlap(s["test"], s["train"])
        row = {"model": shown_path(s["model"]), **counts}
        if args.eval:
            model = load_model(s["model"], task="maths")
            task = MathsTask.for_model(model.cfg)
            n = s["eval_n"]
            subsets = {"clean": [q for q, c in zip(s["test"][:n], clean[:n]) if c],
                       "seen": [q for q, c in zip(s["test"][:n], clean[:n]) if not c]}
            policy = build_policy(args.policy, model, s["model"])
            row["eval"] = {"policy": args.policy, "n": n}
            for name, problems in subsets.items():
                m = evaluate(task, model, problems, policy)
                row["eval"][name] = {"n": m["n"], "correct": round(m["accuracy"] * m["n"]), "accuracy": m["accuracy"],
                                     "mean_nfe": m["mean_nfe"], "seconds": m["seconds"]}
        results.append(row)
        print(json.dumps(row), flush=True)
    meta = {"threads": args.threads, "minutes": round((time.time() - start) / 60, 1)}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "maths_overlap.json").write_text(json.dumps({"meta": meta, "models": results}, indent=1) + "\n")
    lines = ["| model | test problems | training set | training problems | distinct questions | distinct solutions "
             "| test questions in it | test solutions in it |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results:
        names = [k for k, v in r.items() if isinstance(v, dict) and "problems" in v]
        for name in names:
            t = r[name]
            lines.append(f"| `{r['model']}` | {r['test']} | {name} | {t['problems']} | {t['distinct_questions']} | "
                         f"{t['distinct_solutions']} | {t['questions_seen']} | {t['solutions_seen']} |")
        lines.append(f"| `{r['model']}` | {r['test']} | any | | | | {r['questions_seen_any']} | {r['solutions_seen_any']} |")
    lines += ["", "| model | test problems | solution seen in training | clean (solution never seen) |", "|---|---|---|---|"]
    lines += [f"| `{r['model']}` | {r['test']} | {r['solutions_seen_any']} | {r['clean']} |" for r in results]
    if args.eval:
        lines += ["", "| model | policy | problems decoded | clean: correct / n | clean accuracy % "
                      "| seen: correct / n | seen accuracy % |",
                  "|---|---|---|---|---|---|---|"]
        for r in results:
            e = r["eval"]
            lines.append(f"| `{r['model']}` | {e['policy']} | {e['n']} | {e['clean']['correct']} / {e['clean']['n']} | "
                         f"{100 * e['clean']['accuracy']:.1f} | {e['seen']['correct']} / {e['seen']['n']} | "
                         f"{100 * e['seen']['accuracy']:.1f} |")
    (args.out / "maths_overlap.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"{meta['minutes']} min")


if __name__ == "__main__":
    main()
