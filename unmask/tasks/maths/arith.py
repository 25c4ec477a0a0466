"""Synthetic multi-step arithmetic word problems with a worked solution in GSM8K format.

Each problem starts from a number and applies ``operations`` chained operations (+, −, ×) told in words; the
worked solution writes one equation per step, each starting from the previous result, then
``#### answer``. Later characters depend on earlier ones (chained results) and on carries inside
a number, so the order in which an MDM reveals them matters. Deterministic by seed.

    question: "Ava has 47 shells. She finds 85 more. Then she gives away 19. How many shells does Ava have now?"
    answer:   "0047+0085=0132. 0132-0019=0113. #### 0113"      (zero_pad, the default)
    answer:   "47+85=132. 132-19=113. #### 113"                (zero_pad=False)

With ``zero_pad`` every number of the solution is written to one width (the widest value the knobs
allow), so each digit has a fixed place, as each cell has in Sudoku. Measured on this project's
1.2M-parameter MDM: with natural widths, 1,200 CPU training steps left even the units digit of a sum
at chance (the model must first find where each operand sits); see the README's maths section.
The final answer is compared after normalisation (``0113`` = ``113``), GSM8K's convention.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from unmask import checks

NAMES = ["Ava", "Ben", "Cleo", "Dan", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jin", "Kai", "Lea", "Max", "Nia", "Omar", "Pia"]
PRONOUN = {n: ("She" if n in {"Ava", "Cleo", "Fay", "Hana", "Lea", "Nia", "Pia"} else "He") for n in NAMES}
ITEMS = ["apples", "coins", "shells", "cards", "stamps", "marbles", "books", "pens"]
ADD = ["{p} finds {b} more.", "{p} buys {b} more.", "{p} gets {b} more."]
SUB = ["{p} gives away {b}.", "{p} loses {b}.", "{p} sells {b}."]
MUL = ["Then the number becomes {b} times as large.", "{p} ends up with {b} times as many."]


@dataclass(frozen=True)
class ArithConfig:
    """Difficulty knobs."""

    digits: int = 2  # operands of + and − have 1..digits digits (the start too)
    operations: int = 2  # chained operations per problem
    max_factor: int = 9  # × operands are 2..max_factor
    mul: bool = True  # allow × steps
    zero_pad: bool = True  # write the solution's numbers zero-padded to one width (fixed digit places)

    def __post_init__(self) -> None:
        checks.integer("digits", self.digits, 1, 6)
        checks.integer("operations", self.operations, 1, 8)
        checks.integer("max_factor", self.max_factor, 2, 99)


@dataclass(frozen=True)
class Problem:
    """A question, its worked solution (ending ``#### answer``) and the normalised final answer."""

    question: str  # the problem text
    solution: str  # worked solution, GSM8K style, ending "#### <answer>"
    answer: str  # the final answer as a normalised number string (see answer.normalise_number)


def max_value(cfg: ArithConfig) -> int:
    """The largest number a solution can contain: every step the bigger of +top and ×max_factor."""
    top = 10**cfg.digits - 1
    x = top
    for _ in range(cfg.operations):
        x = max(x + top, x * cfg.max_factor if cfg.mul else 0)
    return x


def make_problem(cfg: ArithConfig, rng: random.Random) -> Problem:
    """Draw one problem; intermediate results stay non-negative."""
    name, item = rng.choice(NAMES), rng.choice(ITEMS)
    p = PRONOUN[name]
    top = 10**cfg.digits - 1
    x = rng.randint(1, top)
    said = [f"{name} has {x} {item}."]
    worked = []
    ops = ["+", "-", "*"] if cfg.mul else ["+", "-"]
    width = len(str(max_value(cfg))) if cfg.zero_pad else 0
    num = f"{{:0{width}d}}" if width else "{}"
    for _ in range(cfg.operations):
        op = rng.choice(ops)
        if op == "-" and x == 0:
            op = "+"
        if op == "+":
            b = rng.randint(1, top)
            said.append(rng.choice(ADD).format(p=p, b=b))
            y = x + b
        elif op == "-":
            b = rng.randint(1, min(x, top))
            said.append(rng.choice(SUB).format(p=p, b=b))
            y = x - b
        else:
            b = rng.randint(2, cfg.max_factor)
            said.append(rng.choice(MUL).format(p=p, b=b))
            y = x * b
        worked.append(f"{num.format(x)}{op}{num.format(b)}={num.format(y)}.")
        x = y
    said.append(f"How many {item} does {name} have now?")
    return Problem(" ".join(said), " ".join(worked) + f" #### {num.format(x)}", str(x))


def generate(cfg: ArithConfig, n: int, seed: int) -> list[Problem]:
    """``n`` problems; problem k comes from its own stream, so prefixes of a set are stable."""
    checks.integer("n", n, 1)
    checks.integer("seed", seed, 0)
    return [make_problem(cfg, random.Random(f"arith:{seed}:{k}")) for k in range(n)]
