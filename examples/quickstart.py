"""Decode fresh Sudoku puzzles with the shipped model under two policies: accuracy and forward passes.

    python examples/quickstart.py            # about 15 seconds on 2 CPU cores

The lines between the ``quickstart`` markers are the README's Python quickstart, word for word
(``tests/test_examples.py`` checks that they stay so and runs this file).
"""

# --8<-- [start:quickstart]
import unmask
from unmask.tasks.sudoku import SudokuTask, generate

loaded = unmask.load_denoiser(unmask.shipped_model("sudoku"))  # the 4.8M-parameter model in the wheel
puzzles = generate("hard", n=10, seed=0)  # fresh minimal puzzles, about 24 givens each
for spec in ["sequential", "eb:gamma=0.1"]:
    policy = unmask.build_policy(spec, loaded.denoiser, loaded.directory)
    m = unmask.evaluate(SudokuTask(), loaded.denoiser, puzzles, policy)
    print(f"{spec:14} accuracy {m['accuracy']:6.1%}   forward passes per puzzle {m['mean_nfe']:5.1f}")
# --8<-- [end:quickstart]
