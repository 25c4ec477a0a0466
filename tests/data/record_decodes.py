"""Recorded decode outputs of the code at commit 0a702c9, before the "one house" refactor (issue 10).

Run then from the repository root (`python tests/data/record_decodes.py`); it uses the API of that commit
(`attach(..., head=)`, `policy.counter`) and is kept as the provenance of `recorded_decodes.json.gz`.
tests/decode/test_recorded.py checks that today's loop reproduces every recorded output exactly.
"""
import json
import sys

import torch

sys.path.insert(0, "tests")
from unmask.decode import TokenRule, attach, decode, parse_policy
from unmask.decode.semi_ar import SemiAR
from unmask.mi.estimator import load_head
from unmask.model import load_model
from unmask.tasks.maths.arith import ArithConfig
from unmask.tasks.maths.data import standard_sets
from unmask.tasks.maths.task import encode
from unmask.tasks.sudoku.data import to_tokens
from unmask.tasks.sudoku.generate import generate

torch.set_num_threads(2)
out = {"commit": "0a702c9", "sudoku": [], "maths3": []}
model = load_model("unmask/models/sudoku")
head = load_head("unmask/models/sudoku")
quizzes = generate("hard", 4, 77, progress=False).quizzes.tolist() + generate("kaggle", 4, 78, progress=False).quizzes.tolist()
out["sudoku_quizzes"] = quizzes
tokens = to_tokens(__import__("numpy").array(quizzes, dtype="int8"))
specs = ["sequential", "sequential:metric=top_prob", "sequential:metric=margin", "topk:k=3", "topk:k=5,metric=margin",
         "random:steps=4", "top_prob:steps=7", "margin:steps=6", "eb:gamma=0.5", "eb:gamma=2,metric=top_prob",
         "threshold:tau=0.9", "threshold:tau=0.5", "mi:gamma=0.01,lam=0", "mi:gamma=0.1,lam=2", "mi_exact:gamma=0.5,lam=1,eps=0.01"]
for spec in specs:
    for temp in (0.0, 1.0):
        if spec.startswith("mi_exact") and temp:
            continue
        pol = attach(parse_policy(spec), denoiser=model, head=head)
        res = decode(model, tokens, pol, TokenRule(temp), seeds=torch.arange(8) + 5)
        rec = {"spec": spec, "temperature": temp, "tokens": res.tokens.tolist(), "nfe": res.nfe.tolist(), "reveal_step": res.reveal_step.tolist()}
        if hasattr(pol, "counter"):
            rec["probe_passes"] = pol.counter.passes
        out["sudoku"].append(rec)
        print(spec, temp, res.nfe.tolist(), flush=True)
m3 = load_model("unmask/models/maths-3step")
probs = standard_sets(ArithConfig(steps=3))["test"][:4] if False else None

from unmask.tasks.maths.arith import generate as agen

problems = agen(ArithConfig(steps=3), 4, 12345)
t3 = encode(problems, m3.cfg, with_answers=False)
for spec in ["sequential", "top_prob:steps=4", "random:steps=5", "margin:steps=10", "threshold:tau=0.9", "eb:gamma=0.1", "mi:gamma=0.1,lam=0"]:
    for temp in (0.0, 0.7):
        res = decode(m3, t3, parse_policy(spec), TokenRule(temp), seeds=torch.arange(4) + 3)
        out["maths3"].append({"spec": spec, "temperature": temp, "tokens": res.tokens.tolist(), "nfe": res.nfe.tolist(), "reveal_step": res.reveal_step.tolist()})
        print(spec, temp, res.nfe.tolist(), flush=True)
    res = decode(m3, t3, SemiAR(parse_policy(spec), 24, m3.cfg.prompt_len) if "steps=4" in spec or "steps=5" in spec or "steps=10" in spec or "steps" not in spec else parse_policy(spec), seeds=torch.arange(4) + 3)
    out["maths3"].append({"spec": "semi_ar24:" + spec, "temperature": 0.0, "tokens": res.tokens.tolist(), "nfe": res.nfe.tolist(), "reveal_step": res.reveal_step.tolist()})
out["maths3_questions"] = [p.question for p in problems]
out["maths3_solutions"] = [p.solution for p in problems]
import gzip

with gzip.open("tests/data/recorded_decodes.json.gz", "wt") as f:
    json.dump(out, f)

