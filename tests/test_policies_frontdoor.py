"""The front door unmask.policies: specs in, policies with their resources attached out; --help.

Each test names the planted bug it is there to catch.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from unmask.decode import FixedBudget, SemiAR, attach, needed_resources
from unmask.errors import UnmaskError
from unmask.mi.estimator import MIHead
from unmask.policies import POLICIES, build_policy, describe_policies, parse_policy, policy_spec

SHIPPED = Path(__file__).resolve().parent.parent / "unmask" / "models" / "sudoku"


@pytest.fixture
def headless_dir(tmp_path, make_sudoku_model):
    """A model directory with a model and no MI head."""
    from unmask.model import save_model

    save_model(make_sudoku_model(), tmp_path / "m")
    return tmp_path / "m"


def test_mi_head_only_when_lam_is_positive(make_sudoku_model, tmp_path):
    # Bug caught: the MI head loaded (and required) for every mi spec, even the pure entropy budget λ = 0.
    model = make_sudoku_model()
    p = build_policy("mi:lam=0", model, SHIPPED)
    assert p.head is None and p.lam == 0
    assert build_policy("mi", model, SHIPPED).head is None  # the default λ is 0
    # Not even looked at: a broken head beside the model does not matter when λ = 0.
    (tmp_path / "mi_head.json").write_text("{broken")
    assert build_policy("mi:gamma=0.2", model, tmp_path).head is None


def test_mi_head_loaded_from_the_model_dir_when_lam_is_positive(make_sudoku_model):
    # Bug caught: the head not attached (policy.head None, failing at the first step) or loaded from elsewhere.
    model = make_sudoku_model()
    p = build_policy("mi:gamma=0.1,lam=2", model, SHIPPED)
    assert isinstance(p.head, MIHead) and p.lam == 2.0 and p.gamma == 0.1
    assert not p.head.training
    assert policy_spec(p) == "mi:gamma=0.1,lam=2.0"  # resources are not part of the spec


def test_mi_head_missing_names_the_command(make_sudoku_model, headless_dir):
    # Bugs caught: a FileNotFoundError (or a None head) instead of a refusal saying how to make a head.
    model = make_sudoku_model()
    with pytest.raises(UnmaskError, match="unmask mi train"):
        build_policy("mi:lam=2", model, headless_dir)
    with pytest.raises(UnmaskError, match="--head DIR"):
        build_policy("mi:lam=2", model, None)
    with pytest.raises(UnmaskError, match="give the model"):
        build_policy("mi:lam=2")


def test_exact_gets_the_denoiser(make_sudoku_model):
    # Bug caught: the exact oracle built without its model to probe (it would fail at the first step).
    model = make_sudoku_model()
    p = build_policy("exact:gamma=0.2", model)
    assert p.denoiser is model and p.gamma == 0.2
    assert needed_resources(p) == set()
    assert needed_resources(parse_policy("exact")) == {"denoiser"}
    with pytest.raises(UnmaskError, match="denoiser"):
        build_policy("exact")
    assert build_policy("sequential") == parse_policy("sequential")  # nothing needed, nothing required


def test_budget(make_sudoku_model):
    # Bugs caught: --budget ignored; --budget silently accepted by an adaptive policy; a spec's own
    # steps silently overridden by --budget (or the reverse).
    assert build_policy("top_prob", budget=5).steps == 5
    assert build_policy("margin", budget=2).steps == 2
    assert build_policy("random").steps == FixedBudget().steps
    assert build_policy("random:steps=3").steps == 3
    with pytest.raises(UnmaskError, match="no step budget"):
        build_policy("eb", budget=5)
    with pytest.raises(UnmaskError, match="no step budget"):
        build_policy("exact", make_sudoku_model(), budget=5)
    with pytest.raises(UnmaskError, match="steps"):
        build_policy("random:steps=3", budget=5)
    with pytest.raises(UnmaskError, match="steps"):
        build_policy("top_prob: steps = 3", budget=5)
    for name, cls in POLICIES.items():  # every fixed-budget family takes a budget
        if issubclass(cls, FixedBudget):
            assert build_policy(name, budget=4, resolve=False).steps == 4


def test_attach_reaches_inside_semi_ar(make_sudoku_model):
    # Bug caught: attach filling only the outer policy's resource fields, leaving the wrapped exact bare.
    model = make_sudoku_model()
    wrapped = SemiAR(parse_policy("exact"), block=9)
    assert needed_resources(wrapped) == {"denoiser"}
    got = attach(wrapped, denoiser=model)
    assert got.inner.denoiser is model and got.block == 9
    assert needed_resources(got) == set()
    assert wrapped.inner.denoiser is None  # frozen: attach returns a new policy
    plain = SemiAR(parse_policy("sequential"))
    assert attach(plain, denoiser=model) is plain  # nothing to fill: the same object


def test_attach_never_overwrites_a_given_resource(make_sudoku_model, make_model):
    # Bug caught: attach replacing a resource the caller already set.
    a, b = make_sudoku_model(), make_model()
    p = attach(parse_policy("exact"), denoiser=a)
    assert attach(p, denoiser=b).denoiser is a


@pytest.mark.parametrize("spec", ["topk:k=3,k=4", "eb:gamma=0.1,gamma=0.2", "mi:lam=1, lam=1"])
def test_repeated_keys_are_refused(spec):
    # Bug caught: the last value silently winning.
    with pytest.raises(UnmaskError, match="twice"):
        build_policy(spec)


@pytest.mark.parametrize("spec", ["nope", "topk:q=3", "topk:k", "topk:k=x", "threshold:tau=nan", "random:steps=0", "mi:lam=-1"])
def test_bad_specs_are_refused(spec):
    # Bug caught: a bad spec raising TypeError/ValueError instead of a one-line UnmaskError.
    with pytest.raises(UnmaskError) as e:
        build_policy(spec)
    assert "\n" not in str(e.value)


def test_specs_round_trip():
    # Bug caught: policy_spec and parse_policy disagreeing (benchmarks record specs and re-read them).
    for name in POLICIES:
        p = parse_policy(name)
        assert parse_policy(policy_spec(p)) == p, name


def test_describe_policies_lists_every_policy_with_its_defaults():
    # Bug caught: a policy family (e.g. the MI ones registered from unmask.mi) missing from --help, or
    # its defaults not shown.
    lines = [ln for ln in describe_policies() if ln.startswith("  ")]  # (the tier headings are not indented)
    assert len(lines) == len(POLICIES)
    assert {"mi", "exact", "sequential", "topk", "eb", "threshold", "random", "top_prob", "margin"} <= set(POLICIES)
    for name, cls in POLICIES.items():
        mine = [ln for ln in lines if ln.split()[0].split(":")[0] == name]
        assert len(mine) == 1, name
        for f in dataclasses.fields(cls):
            if "resource" in f.metadata or "inner" in f.metadata:
                assert f"{f.name}=" not in mine[0].split()[0], (name, f.name)  # resources are not spec keys
            else:
                assert f"{f.name}={f.default}" in mine[0], (name, f.name)
        assert len(mine[0].split(None, 1)) == 2, f"{name} has no one-line rule"


def _run_cli(capsys, argv):
    from unmask.cli import main

    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 0
    return capsys.readouterr().out


def test_eval_help_lists_every_policy(capsys):
    # Bug caught: the --help epilog built before the MI policies register, or the defaults formatter lost.
    out = _run_cli(capsys, ["sudoku", "eval", "--help"])
    head, sep, epilog = out.partition("policies (SPEC")
    assert sep, "no policy list in --help"
    starts = {line.split()[0].split(":")[0] for line in epilog.splitlines()[1:] if line.startswith("  ")}
    assert set(POLICIES) <= starts, set(POLICIES) - starts
    assert "(default:" in head


def test_version(capsys):
    # Bug caught: --version missing or printing without the program name.
    out = _run_cli(capsys, ["--version"])
    assert out.startswith("unmask ") and len(out.strip()) > len("unmask")


TIERS = {  # the policy tiers as documented (README, --help); a new policy must be placed in one
    "stable": ["demask", "eb", "learned", "margin", "mi", "random", "sequential", "threshold", "top_prob", "topk"],
    "research": ["mi_paced", "mi_prefix", "mi_steps"],
    "oracle": ["exact", "exact_prefix", "exact_steps"],
}


def test_every_policy_has_a_tier_and_the_tiers_are_as_documented():
    # Bugs caught: a policy registered without a tier (or with a bare string), an oracle listed as
    # stable, policies_in_tier missing a family registered outside unmask.decode.
    from unmask.policies import Tier, policies_in_tier

    assert all(isinstance(cls.tier, Tier) for cls in POLICIES.values())
    assert {t.value: policies_in_tier(t) for t in Tier} == TIERS
    assert policies_in_tier("oracle") == policies_in_tier(Tier.ORACLE)
    assert sorted(sum(TIERS.values(), [])) == sorted(POLICIES)


def test_help_lists_the_tiers_apart_stable_first_and_says_what_an_oracle_costs():
    # Bugs caught: the tiers mixed in one alphabetical list, the oracles listed first, or an oracle's
    # line not saying that it probes the model at up to 1 + N·|V| extra passes a step, apart from NFE.
    lines = describe_policies()
    headings = [i for i, ln in enumerate(lines) if not ln.startswith(" ")]
    assert [lines[i].split()[0] for i in headings] == ["stable", "research", "oracle"]
    bounds = headings + [len(lines)]
    for (start, end), names in zip(zip(bounds, bounds[1:]), TIERS.values()):
        assert [ln.split()[0].split(":")[0] for ln in lines[start + 1:end]] == names
    for ln in lines[headings[2] + 1:]:
        assert "1 + N·|V| extra passes a step" in ln and "apart from NFE" in ln, ln
    assert not any("extra passes a step" in ln for ln in lines[:headings[2]])


# CamelCase of the spec name, word by word; these words are written as acronyms (or, topk, as TopK).
WORDS = {"eb": "EB", "mi": "MI", "topk": "TopK"}


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_class_names_are_the_camel_case_spec_names(name):
    # Bug caught: a class named apart from its spec (MIGuided for mi, LearnedOrder for learned), so
    # code, docs and --help spell one policy two ways.
    assert POLICIES[name].__name__ == "".join(WORDS.get(w, w.capitalize()) for w in name.split("_"))
    assert POLICIES[name].spec_name == name


@pytest.mark.parametrize("old,new", [
    ("mi_exact", "exact:charge=mi"),
    ("mi_exact:gamma=0.5,lam=1,eps=0.01", "exact:gamma=0.5,lam=1,charge=mi,eps=0.01"),
    ("mi_exact:gamma=1,lam=2,eps=0.001,joint=True", "exact:gamma=1,lam=2,charge=joint,eps=0.001"),
    ("mi_exact:joint=0", "exact:charge=mi"),
    ("influence_exact:lam=3", "exact:lam=3,charge=influence"),
])
def test_old_oracle_names_parse_to_exact_with_one_note(old, new):
    # Bugs caught: an old spelling refused (recorded specs and scripts still use them), parsed with
    # other settings than it meant, noted twice by one build (parse, then the --budget check), or
    # not noted at all.
    import warnings

    from unmask.policies import SpecRenamed

    with pytest.warns(SpecRenamed) as notes:
        got = build_policy(old, resolve=False)
    assert [str(n.message) for n in notes] == [f"policy spec {old!r} is now {new!r}"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new spelling parses without a note
        assert got == parse_policy(new) and type(got).__name__ == "Exact"


@pytest.mark.filterwarnings("ignore::FutureWarning")  # (the note on mi_exact:gamma=-1 before its refusal)
@pytest.mark.parametrize("spec", ["influence_exact:joint=1", "mi_exact:charge=mi", "mi_exact:joint=maybe", "mi_exact:gamma=-1"])
def test_old_oracle_names_refuse_what_they_always_refused(spec):
    # Bug caught: an old spelling taking keys it never took (or a bad value) silently.
    with pytest.raises(UnmaskError):
        parse_policy(spec)


def _fresh_python(code: str) -> None:
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parent.parent, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr


def test_eval_parses_every_family_without_the_front_door_imported_first():
    # Bug caught: unmask.eval parsing with the decode package's registry, which knows the MI and
    # learned policies only if something imported unmask.policies (or unmask.mi, unmask.order) before.
    _fresh_python(
        "import unmask.eval as ev\n"
        "from unmask.decode import parse_policy\n"
        "from unmask.errors import UnmaskError\n"
        "seen = []\n"
        "ev.evaluate = lambda task, denoiser, examples, policy, batch_size: seen.append(policy) or {'accuracy': 1.0}\n"
        "rows = ev.compare(None, None, {'a': 'A'}, ['mi', 'mi:gamma=0.2', 'learned:steps=3'], progress=False)\n"
        "assert [r['policy'] for r in rows] == "
        "['mi:gamma=0.03,lam=0.0', 'mi:gamma=0.2,lam=0.0', 'learned:steps=3,sample=True'], rows\n"
        "assert type(parse_policy('learned')).__name__ == 'Learned'\n"
    )


def test_the_front_door_parses_an_oracle_in_a_fresh_process():
    _fresh_python("from unmask.policies import parse_policy\n"
                  "p = parse_policy('exact:gamma=1,lam=1')\n"
                  "assert (p.gamma, p.lam, p.charge, p.eps) == (1.0, 1.0, 'mi', 1e-3), p\n")
