"""Each policy's own rule on hand-made distributions, and exact decoding against an oracle joint."""

from __future__ import annotations

import math

import pytest
import torch

from unmask.decode import DecodeState, TokenRule, decode, parse_policy
from unmask.decode.policy import as_selection
from unmask.decode.scores import entropy
from unmask.denoiser import DenoiserOutput
from unmask.errors import UnmaskError
from unmask.oracle import JointDenoiser


def state_from_probs(probs: torch.Tensor, masked: torch.Tensor | None = None) -> DecodeState:
    """A one-row decode state whose distributions are ``probs`` ``(L, V)``."""
    n, v = probs.shape
    masked = torch.ones(1, n, dtype=torch.bool) if masked is None else masked[None]
    return DecodeState(
        tokens=torch.where(masked, v, 0), masked=masked, logits=probs.log()[None],
        hidden=torch.zeros(1, n, 1), step=0, seeds=torch.zeros(1, dtype=torch.long),
    )


# Four positions over 3 values: confident, two-way split, almost uniform, peaked with a runner-up.
PROBS = torch.tensor([[0.90, 0.05, 0.05], [0.50, 0.50, 0.00001], [0.34, 0.33, 0.33], [0.70, 0.29, 0.01]])
PROBS = PROBS / PROBS.sum(1, keepdim=True)


def chosen(spec: str, probs=PROBS, masked=None) -> list[int]:
    return as_selection(parse_policy(spec).select(state_from_probs(probs, masked))).reveal[0].nonzero().squeeze(1).tolist()


def test_sequential_metrics_pick_their_own_best():
    assert chosen("sequential:metric=entropy") == [0]
    assert chosen("sequential:metric=top_prob") == [0]
    # Margin: position 0 has 0.85, position 3 has 0.41, position 1 ~0.
    assert chosen("sequential:metric=margin") == [0]
    masked = torch.tensor([False, True, True, True])
    assert chosen("sequential:metric=entropy", masked=masked) == [3]
    assert chosen("sequential:metric=margin", masked=masked) == [3]
    # Among 1..3, position 3 (0.70, 0.29, 0.01) beats the 50/50 split on every metric.
    assert chosen("sequential:metric=top_prob", masked=masked) == [3]


def test_topk_takes_k_most_confident():
    assert chosen("topk:k=2") == [0, 3]
    assert chosen("topk:k=9") == [0, 1, 2, 3]


def test_threshold_takes_all_above_tau_or_the_best():
    assert chosen("threshold:tau=0.55") == [0, 3]
    assert chosen("threshold:tau=0.95") == [0]
    assert chosen("threshold:tau=0.95", masked=torch.tensor([False, True, True, False])) == [1]


def test_eb_prefix_rule():
    h = entropy(PROBS).tolist()  # order by entropy: 0, 3, 1, 2
    order = sorted(range(4), key=lambda i: h[i])
    for gamma in (0.0, h[order[0]] - 1e-6, h[order[0]] + 1e-6, h[order[0]] + h[order[1]] + 1e-6, 100.0):
        # Prefix of size m+1 is admitted iff the m lowest entropies sum to ≤ γ.
        m = max(k for k in range(4) if sum(h[i] for i in order[:k]) <= gamma)
        assert chosen(f"eb:gamma={gamma}") == sorted(order[: m + 1]), gamma


def test_budget_policies_choose_by_their_score():
    # 4 masked, 2 steps: reveal ⌈4/2⌉ = 2 now.
    assert chosen("top_prob:steps=2") == [0, 3]
    assert chosen("margin:steps=2") == [0, 3]
    assert len(chosen("random:steps=2")) == 2


# Four positions over 4 values on which the three metrics disagree about the best position:
# 0 is almost uniform (worst on all), 1 has the widest margin, 2 the highest top probability,
# 3 the lowest entropy (a strong runner-up keeps its margin down, a tail keeps 2's entropy up).
DISAGREE = torch.tensor([[0.25, 0.25, 0.25, 0.25], [0.75, 1 / 12, 1 / 12, 1 / 12], [0.80, 0.15, 0.05, 0.0],
                         [0.78, 0.22, 0.0, 0.0]])
BEST = {"entropy": 3, "top_prob": 2, "margin": 1}


def test_the_disagreeing_fixture_disagrees():
    # Guards the fixture below: each metric has its own strict best (no tie for stable sorting to hide).
    from unmask.decode.scores import CONFIDENCE

    for metric, best in BEST.items():
        score = CONFIDENCE[metric](DISAGREE)
        assert int(score.argmax()) == best and (score[best] - score.topk(2).values[1]) > 0.01, metric


def test_metric_values_on_a_hand_made_distribution():
    # Bugs caught: margin computed as the top probability (or from a top-3 that needs V >= 3);
    # entropy not negated in CONFIDENCE (least certain first), or in bits; 0 · log 0 giving NaN.
    from unmask.decode.scores import CONFIDENCE, entropy, margin, top_prob

    p = torch.tensor([[0.5, 0.3, 0.2], [0.1, 0.6, 0.3]])
    assert margin(p).tolist() == pytest.approx([0.2, 0.3])
    assert margin(torch.tensor([0.7, 0.3])).item() == pytest.approx(0.4)  # two values: top-2 is all of them
    assert top_prob(p).tolist() == pytest.approx([0.5, 0.6])
    h = -(0.5 * math.log(0.5) + 0.3 * math.log(0.3) + 0.2 * math.log(0.2))
    assert entropy(p)[0].item() == pytest.approx(h)
    assert entropy(torch.tensor([1.0, 0.0, 0.0])).item() == 0.0  # 0 · log 0 = 0, not NaN
    assert CONFIDENCE["entropy"](p).tolist() == pytest.approx((-entropy(p)).tolist())
    assert CONFIDENCE["margin"](p).tolist() == pytest.approx([0.2, 0.3])


@pytest.mark.parametrize("metric", sorted(BEST))
@pytest.mark.parametrize("spec", ["sequential", "topk:k=1", "eb:gamma=0"])
def test_confidence_policies_rank_by_their_own_metric(spec, metric):
    # Bug caught: sequential, topk or eb ignoring their ``metric`` field (always ranking by entropy,
    # or by one fixed metric); with PROBS above every metric agrees, so only this fixture sees it.
    sep = "," if ":" in spec else ":"
    assert chosen(f"{spec}{sep}metric={metric}", DISAGREE) == [BEST[metric]]


def test_topk_takes_the_k_best_by_its_metric():
    # Bug caught: topk ranking by one metric and the k-th pick by another (or ignoring k).
    assert chosen("topk:k=2,metric=margin", DISAGREE) == [1, 2]
    assert chosen("topk:k=2,metric=entropy", DISAGREE) == [2, 3]
    assert chosen("topk:k=3,metric=top_prob", DISAGREE) == [1, 2, 3]


def test_eb_charges_the_largest_entropy_of_the_prefix_not_its_last():
    # Bug caught: EB's Σ H − max H computed as Σ H − (last H) (right only in entropy order). In margin
    # order the prefix is 1 (H 0.837), 2 (H 0.613): Σ − max = 0.613, Σ − last = 0.837.
    h = entropy(DISAGREE)
    assert float(h[2]) < 0.62 < float(h[1])
    assert chosen("eb:gamma=0.62,metric=margin", DISAGREE) == [1, 2]
    assert chosen("eb:gamma=0.62,metric=entropy", DISAGREE) == [2, 3]
    assert chosen("eb:gamma=0.6,metric=margin", DISAGREE) == [1]


@pytest.mark.parametrize("steps", [4, 2])
def test_margin_and_top_prob_budgets_differ(steps):
    # Bug caught: margin (Top-Prob-Margin, top1 − top2) scoring replaced by top-prob scoring.
    # 4 masked, ``steps`` passes: ⌈4 / steps⌉ reveals now.
    assert chosen(f"margin:steps={steps}", DISAGREE) == [1, 2][: 4 // steps]
    assert chosen(f"top_prob:steps={steps}", DISAGREE) == [2, 3][: 4 // steps]


class Fixed:
    """A denoiser that always returns the same per-position distributions."""

    def __init__(self, probs: torch.Tensor) -> None:
        self.probs, self.vocab_size, self.mask_id = probs, probs.shape[1], probs.shape[1]

    def __call__(self, tokens):
        b = tokens.shape[0]
        return DenoiserOutput(self.probs.log().expand(b, -1, -1), torch.zeros(b, tokens.shape[1], 1))


def test_mask_id_inside_the_vocabulary_is_never_produced():
    probs = torch.tensor([[0.1, 0.9], [0.2, 0.8]])  # mask id 1 is the likeliest "token"
    model = Fixed(probs)
    model.mask_id = 1
    out = decode(model, torch.ones(3, 2, dtype=torch.long), parse_policy("topk:k=2"), TokenRule(1.0))
    assert (out.tokens == 0).all()


def test_sequential_recovers_a_deterministic_joint():
    p = torch.zeros((3,) * 4, dtype=torch.float64)
    p[2, 0, 1, 2] = 1.0
    oracle = JointDenoiser(p)
    tokens = torch.full((2, 4), oracle.mask_id)
    for spec in ("sequential", "topk:k=4", "random:steps=2", "eb:gamma=0.1"):
        assert decode(oracle, tokens, parse_policy(spec)).tokens.tolist() == [[2, 0, 1, 2]] * 2


@pytest.mark.parametrize("spec", ["sequential", "random:steps=3", "sequential:metric=margin"])
def test_one_at_a_time_sampling_is_exact(spec: str, make_joint, empirical_tv):
    oracle = make_joint(seq_len=3, vocab=3, seed=3, alpha=1.0)
    # 27 outcomes, 3000 draws: sampling noise gives TV ≈ 0.04; a wrong sampler gives far more.
    assert empirical_tv(oracle, spec) < 0.07


def test_parallel_sampling_breaks_dependencies(empirical_tv):
    # X1 = X2, uniform over 3 values: revealing both at once samples the product of marginals.
    p = torch.zeros(3, 3, dtype=torch.float64)
    p[range(3), range(3)] = 1 / 3
    oracle = JointDenoiser(p)
    assert empirical_tv(oracle, "topk:k=2") == pytest.approx(2 / 3, abs=0.05)
    assert empirical_tv(oracle, "sequential") < 0.05
    assert math.isclose(float(oracle.joint.sum()), 1.0)


def test_eb_at_gamma_zero_takes_every_certain_token():
    # Bug caught: EB's budget test made strict (Σ H − max H < γ). At γ = 0 the two tokens of entropy
    # exactly 0 cost 0 ≤ 0, the 50/50 one after them enters free (it is the max), the uniform one waits.
    probs = torch.tensor([[0.5, 0.5, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1 / 3, 1 / 3, 1 / 3]])
    assert chosen("eb:gamma=0", probs) == [0, 1, 2]


def test_threshold_reveals_a_top_probability_equal_to_tau():
    # Bug caught: the threshold made strict (p > τ): a 50/50 position has top-prob exactly 0.5.
    probs = torch.tensor([[0.5, 0.5, 0.0], [0.4, 0.3, 0.3], [0.5, 0.25, 0.25]])
    assert chosen("threshold:tau=0.5", probs) == [0, 2]


@pytest.mark.parametrize("spec, message", [
    ("eb:gamma=-0.1", "eb: gamma must be >= 0"),
    ("threshold:tau=0", r"threshold: tau must be in \(0, 1\]"),
    ("threshold:tau=1.5", r"threshold: tau must be in \(0, 1\]"),
    ("topk:k=0", "topk: k must be >= 1"),
    ("random:steps=0", "random: steps must be >= 1"),
    ("sequential:metric=bits", "unknown confidence metric 'bits'"),
])
def test_out_of_range_settings_are_refused_by_name(spec, message):
    # Bugs caught: τ = 0 (reveal everything) or τ > 1 (never sure) accepted; a refusal that loses its
    # message (UnmaskError(None) says nothing about which setting is wrong).
    with pytest.raises(UnmaskError, match=message):
        parse_policy(spec)


def test_spec_of_a_policy_without_settings_is_its_name():
    # Bug caught: policy_spec writing "name:" for a policy with no spec fields.
    from dataclasses import dataclass

    from unmask.decode import policy_spec

    @dataclass(frozen=True)
    class Bare:
        spec_name = "bare"

    assert policy_spec(Bare()) == "bare"
    assert policy_spec(parse_policy("topk:k=3")) == "topk:k=3,metric=entropy"


def test_spec_keys_and_semi_ar_name():
    # Bugs caught: spec_keys reporting the defaults (or nothing) instead of the keys a spec sets (the
    # CLI uses it to refuse --budget beside steps=); semi_ar's name dropping its inner policy.
    from unmask.decode import SemiAR
    from unmask.decode.registry import spec_keys

    assert spec_keys("random:steps=5") == {"steps"} and spec_keys("topk") == set()
    assert str(SemiAR(parse_policy("topk:k=2"), block=8)) == "semi_ar(block=8, topk:k=2,metric=entropy)"


@pytest.mark.parametrize("text, want", [("1", True), ("0", False), ("TRUE", True), ("false", False)])
def test_bool_settings_accept_one_and_zero(text, want):
    # Bug caught: the spelling list of booleans losing "1" or "0" (refused, or read as False).
    from unmask.policies import parse_policy as parse_any  # the learned policy has the bool field

    assert parse_any(f"learned:sample={text}").sample is want


def test_spec_integers_stop_below_two_to_the_31():
    # Bug caught: the overflow guard's bound moved (2**31 accepted, or a plain k = 100 refused); the
    # refusal losing its one-line message.
    assert parse_policy(f"topk:k={2**31 - 1}").k == 2**31 - 1
    assert parse_policy("topk:k=100").k == 100
    with pytest.raises(UnmaskError, match=r"topk: k='2147483648' is not a valid int"):
        parse_policy(f"topk:k={2**31}")


def test_eb_breaks_ties_in_its_order_by_position():
    # Bug caught: EB sorting its candidates without stable=True. torch's CPU sort is not stable from
    # 17 elements on, so tied scores would be visited in another order: here 20 positions share
    # top-prob 0.5; the first 10 have entropy log 2, the last 10 more. In position order the first two
    # cost log 2 ≤ γ = 0.8; visited from the back, two cost 1.04 > γ and only one goes in.
    two_way, tailed = torch.tensor([0.5, 0.5, 0.0]), torch.tensor([0.5, 0.25, 0.25])
    probs = torch.stack([two_way] * 10 + [tailed] * 10)
    assert chosen("eb:gamma=0.8,metric=top_prob", probs) == [0, 1]


def test_help_lines_show_parsable_defaults_and_the_first_paragraph():
    # Bugs caught: --help's spec column not parsing back to the defaults (a wrong separator); the rule
    # column cut at the first word, holding the whole docstring, or with newlines turned into junk; reST
    # markup (``x``, :mod:`x`) shown as it is written in the docstring.
    import inspect

    from unmask.decode.registry import ORACLE_COST, plain_text
    from unmask.policies import POLICIES as ALL
    from unmask.policies import Tier, describe_policies
    from unmask.policies import parse_policy as parse_any

    lines = {line.split()[0].split(":")[0]: line
             for line in describe_policies() if line.startswith("  ")}  # (not the tier headings)
    for name, cls in ALL.items():
        spec, rule = lines[name].split(None, 1)
        assert parse_any(spec) == cls(), name
        cost = f" {ORACLE_COST}" if cls.tier is Tier.ORACLE else ""  # an oracle's line says what it costs
        assert rule == plain_text(" ".join(inspect.cleandoc(cls.__doc__).split("\n\n")[0].split())) + cost, name
        assert "``" not in rule and ":mod:" not in rule and ":class:" not in rule, name  # --help is plain text, not reST


def test_budget_refusal_names_the_budgeted_policies():
    # Bug caught: the --budget refusal losing the list of policies that do take a budget.
    from unmask.decode import with_budget

    with pytest.raises(UnmaskError, match=r"has no step budget: --budget applies to "
                                          r"(exact_steps, )?(learned, )?margin, (mi_steps, )?random, top_prob$"):
        with_budget(parse_policy("topk"), 3)


def test_attach_refuses_a_misspelt_resource():
    # Bug caught: attach silently dropping an object under a name no policy declares.
    from unmask.decode import attach

    with pytest.raises(TypeError, match=r"no policy declares the resources \['mi_haed'\]; known: \[.*'mi_head'"):
        attach(parse_policy("topk"), mi_haed=object())


def test_a_policy_name_cannot_be_taken_twice():
    # Bug caught: a second class registered under an existing name silently replacing the first.
    from dataclasses import dataclass

    from unmask.decode.registry import POLICIES, Tier, register

    before = POLICIES["topk"]
    with pytest.raises(ValueError, match="'topk' is taken by unmask.decode.sequential.TopK"):
        @register("topk", Tier.RESEARCH)
        @dataclass(frozen=True)
        class Impostor:
            def select(self, state):
                return state.masked

    assert POLICIES["topk"] is before


def test_the_package_unmask_decode_calls_as_the_loop(oracle, masked_batch):
    # Bugs caught: unmask.decode (the subpackage, which the package exports as the loop) not callable, calling
    # something else than the loop, or unpicklable (a worker process given it as a callable).
    import pickle
    import sys

    import unmask
    import unmask.decode.loop as loop

    assert unmask.decode is sys.modules["unmask.decode"]
    policy, tokens = parse_policy("topk:k=2"), masked_batch(4, oracle.seq_len, oracle.vocab_size)
    a, b = unmask.decode(oracle, tokens, policy), loop.decode(oracle, tokens, policy)
    assert torch.equal(a.tokens, b.tokens) and torch.equal(a.nfe, b.nfe) and torch.equal(a.reveal_step, b.reveal_step)
    assert pickle.loads(pickle.dumps(unmask.decode)) is unmask.decode
