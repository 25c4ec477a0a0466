"""The shipped maths models on their standard test splits (no test question is in any training set)."""

from __future__ import annotations

from unmask.eval import evaluate
from unmask.model import load_model
from unmask.policies import parse_policy
from unmask.tasks.maths.arith import ArithConfig
from unmask.tasks.maths.data import standard_sets
from unmask.tasks.maths.task import DEFAULT_MODEL as DEFAULT_MATHS_MODEL
from unmask.tasks.maths.task import MathsTask

THREE_STEP_MODEL = DEFAULT_MATHS_MODEL.parent / "maths-3step"


def test_two_step_model_solves_test_problems_even_in_parallel():
    problems = standard_sets(ArithConfig())["test"][:24]
    model = load_model(DEFAULT_MATHS_MODEL, task="maths")
    m = evaluate(MathsTask.for_model(model.cfg), model, problems, parse_policy("sequential"))
    assert m["n"] == 24 and m["mean_nfe"] == 48  # one position per pass over the 48-character answer region
    assert m["accuracy"] >= 0.9  # measured 24/24 (99.8 % on all 999)
    m = evaluate(MathsTask.for_model(model.cfg), model, problems, parse_policy("top_prob:steps=4"))
    assert m["mean_nfe"] == 4 and m["accuracy"] >= 0.9  # measured 24/24: this task no longer punishes parallel steps


def test_three_step_model_needs_its_steps():
    problems = standard_sets(ArithConfig(operations=3))["test"][:24]
    model = load_model(THREE_STEP_MODEL, task="maths")
    seq = evaluate(MathsTask.for_model(model.cfg), model, problems, parse_policy("sequential"))
    assert seq["mean_nfe"] == 72 and seq["accuracy"] >= 0.9  # measured 24/24
    par = evaluate(MathsTask.for_model(model.cfg), model, problems, parse_policy("top_prob:steps=4"))
    assert par["mean_nfe"] == 4 and par["accuracy"] <= seq["accuracy"] - 0.15  # measured 16/24: chained results break


def test_three_step_model_ships_a_learned_order_that_beats_top_prob_at_four_steps():
    from unmask.policies import build_policy

    problems = standard_sets(ArithConfig(operations=3))["test"][:24]
    model = load_model(THREE_STEP_MODEL, task="maths")
    task = MathsTask.for_model(model.cfg)
    learned = evaluate(task, model, problems, build_policy("learned", model, THREE_STEP_MODEL, budget=4))
    top = evaluate(task, model, problems, parse_policy("top_prob:steps=4"))
    assert learned["max_nfe"] <= 4  # never over the budget
    assert learned["accuracy"] >= 0.9 and learned["accuracy"] >= top["accuracy"] + 0.15  # see the README table
    # trained with a step cost, it stops early: measured 2.17 passes on these 24 (a plain-ELBO policy spends ~3.8)
    assert learned["mean_nfe"] <= 3
