"""The ELBO of learned orders, checked exactly on a toy problem small enough to enumerate every reveal
sequence (an oracle joint over L = 3 binary tokens, budget T = 2 or 3).

Planted bugs these catch: a KL formula off by a term or with P and Q swapped (closed form vs Monte
Carlo), a rollout that drops or double-counts a step's likelihood (rollout mean vs exact ELBO), a
bound above log p (ELBO ≤ log p), a wrong leave-one-out baseline or a missing score-function or KL
gradient (RLOO gradient vs the exact gradient), a step cost left out of the reward-to-go, of the
wrong sign or scale (RLOO gradient of ELBO − c·NFE vs its exact gradient; which steps it is charged
to from t on only changes the variance, so ``steps_after`` is pinned on its own), a baseline that
includes the rollout's own reward (at K = 4, by hand and against the exact gradient), a hard clamp
of P̃ that leaves P_ψ no gradient far below the best score, and a P̃ that makes the KL of two
certain, agreeing distributions non-zero.
"""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from unmask.decode.state import DecodeState
from unmask.errors import UnmaskError
from unmask.order.elbo import EPS, Rollout, bernoulli_kl, order_loss, rollout, smoothed
from unmask.order.net import OrderConfig, OrderNet, reveal_probs
from unmask.order.policy import bernoulli_log_prob


def nets(d_in: int, budget: int, seed: int = 0, tau: float = 1.0) -> tuple[OrderNet, OrderNet]:
    """P_ψ and Q_φ with random output layers (so their probabilities differ from each other and from 1)."""
    torch.manual_seed(seed)
    prior = OrderNet(OrderConfig(d_in, d_hidden=6, tau=tau, budget=budget))
    posterior = OrderNet(OrderConfig(d_in, d_hidden=6, tau=tau, budget=budget, posterior=True))
    with torch.no_grad():
        for net in (prior, posterior):
            net.out.weight.normal_(0, 1.5)
            net.direct.weight.normal_(0, 0.5)
    return prior, posterior


def state_of(denoiser, tokens: torch.Tensor, step: int) -> DecodeState:
    logits, hidden = denoiser(tokens)
    return DecodeState(tokens, tokens == denoiser.mask_id, logits, hidden, step, torch.zeros(len(tokens), dtype=torch.long),
                       torch.arange(len(tokens)))


def subsets(masked: torch.Tensor):
    """Every reveal set (bool (L,)) over the masked positions of one row."""
    idx = masked.nonzero().squeeze(1).tolist()
    for bits in itertools.product([False, True], repeat=len(idx)):
        r = torch.zeros_like(masked)
        r[idx] = torch.tensor(bits, dtype=torch.bool) if idx else r[idx]
        yield r


def exact(denoiser, tokens, clean, prior, posterior, budget: int, step: int = 0, step_cost: float = 0.0):
    """(exact ELBO − c·E_Q[NFE], exact log p(x_0) under P̃) from state ``tokens`` (1, L), by enumeration.

    ELBO = E_Q[Σ_t loglik_t + log P̃(r_t) − log Q(r_t)]; log p = log Σ_traj Π_t P̃(r_t) exp(loglik_t);
    c = ``step_cost`` per step taken. Differentiable in the networks' parameters."""
    st = state_of(denoiser, tokens, step)
    masked = st.masked[0]
    if not masked.any():
        return torch.zeros(()), torch.zeros(())
    q = posterior.probs(st, budget, clean)
    pt = smoothed(prior.probs(st, budget), q)
    true_lp = st.log_probs.gather(-1, clean[..., None]).squeeze(-1)[0].double()
    elbo, terms = torch.zeros((), dtype=torch.float64), []
    for r in subsets(masked):
        if not r.any():
            continue  # the loop never takes an empty step (Q's best position has q = 1)
        log_q = bernoulli_log_prob(q, r[None], st.masked)[0].double()
        log_pt = bernoulli_log_prob(pt, r[None], st.masked)[0].double()
        if log_q.exp() == 0:
            continue
        nxt = torch.where(r, clean[0], tokens[0])[None]
        e_next, lp_next = exact(denoiser, nxt, clean, prior, posterior, budget, step + 1, step_cost)
        ll = true_lp[r].sum()
        elbo = elbo + log_q.exp() * (ll + log_pt - log_q + e_next)
        terms.append(log_pt + ll + lp_next)
    return elbo - step_cost, torch.logsumexp(torch.stack(terms), 0)  # this step is taken whatever r is


@pytest.fixture
def toy(make_joint):
    oracle = make_joint(seq_len=3, vocab=2, seed=4, alpha=1.0)
    clean = torch.tensor([[1, 0, 1]])
    start = torch.full((1, 3), oracle.mask_id)
    return oracle, start, clean


def test_closed_form_kl_equals_its_monte_carlo_estimate():
    g = torch.Generator().manual_seed(0)
    q = torch.rand(2, 6, generator=g)
    p = torch.rand(2, 6, generator=g)
    masked = torch.rand(2, 6, generator=g) < 0.8
    samples = torch.rand(200_000, 2, 6, generator=g) < q  # Bernoulli(q) reveal sets
    log_q = torch.stack([bernoulli_log_prob(q, s, masked) for s in samples[:50_000]])
    log_p = torch.stack([bernoulli_log_prob(smoothed(p, q), s, masked) for s in samples[:50_000]])
    mc = (log_q - log_p).mean(0)
    assert torch.allclose(bernoulli_kl(q, p, masked), mc, atol=0.02)


def test_kl_is_zero_for_equal_distributions_and_finite_when_p_is_certain():
    q = torch.tensor([[1.0, 0.3, 0.0]])
    masked = torch.tensor([[True, True, True]])
    assert float(bernoulli_kl(q, q.clone(), masked)) == pytest.approx(0.0, abs=1e-6)
    p = torch.tensor([[1.0, 1.0, 0.2]])  # P certain where Q is not: finite thanks to P̃
    kl = bernoulli_kl(q, p, masked)
    assert torch.isfinite(kl).all() and float(kl) > 1.0


@pytest.mark.parametrize("budget", [2, 3])
def test_elbo_is_below_log_likelihood_and_the_rollout_estimates_it(toy, budget):
    oracle, start, clean = toy
    prior, posterior = nets(oracle.vocab_size + 1, budget)
    with torch.no_grad():
        elbo, log_p = exact(oracle, start, clean, prior, posterior, budget)
        assert float(elbo) <= float(log_p) + 1e-9
        roll = rollout(oracle, start, clean, prior, posterior, budget, samples=20_000, seeds=torch.arange(20_000))
    assert (roll.nfe <= budget).all()  # T is never exceeded
    se = float(roll.elbo.std()) / math.sqrt(len(roll.elbo))
    assert abs(float(roll.elbo.mean()) - float(elbo)) < 4 * se + 1e-6


def test_elbo_is_tight_when_q_is_the_posterior(toy):
    """T = 2, L = 2 masked: with Q certain of P's best position, the posterior over the other one is a
    Bernoulli, so Q can equal it exactly and the bound must close."""
    oracle, _, clean = toy
    start = clean.clone()
    start[0, 1:] = oracle.mask_id  # positions 1 and 2 masked
    prior, _ = nets(oracle.vocab_size + 1, budget=2)
    with torch.no_grad():
        st = state_of(oracle, start, 0)
        p = prior.probs(st, 2)[0]
        best = int(p.argmax())
        other = 3 - best  # the other masked position (1 or 2)
        true_lp = st.log_probs.gather(-1, clean[..., None]).squeeze(-1)[0].double()
        # Finishing at step 1 reveals the rest: its likelihood given the first reveal.
        after = start.clone()
        after[0, best] = clean[0, best]
        lp_rest = state_of(oracle, after, 1).log_probs[0, other, clean[0, other]].double()
        p_other = float(p[other])
        both = p_other * math.exp(float(true_lp[best] + true_lp[other]))  # P̃({best, other}) · lik
        alone = (1 - p_other) * math.exp(float(true_lp[best] + lp_rest))  # P̃({best}) · lik · lik(next)
        q_other = both / (both + alone)

    class Fixed:  # Q as fixed probabilities: 1 on P's best, the exact posterior on the other
        def probs(self, state, budget, clean=None):
            q = torch.zeros_like(state.masked, dtype=torch.float32)
            if state.step >= budget - 1:
                return state.masked.float()
            q[:, best], q[:, other] = 1.0, q_other
            return q * state.masked

    with torch.no_grad():
        elbo, log_p = exact(oracle, start, clean, prior, Fixed(), budget=2)
    assert float(elbo) == pytest.approx(float(log_p), abs=1e-5)


def flat(grads, params) -> torch.Tensor:
    return torch.cat([torch.zeros_like(p).flatten() if g is None else g.flatten() for g, p in zip(grads, params)])


@pytest.mark.parametrize("step_cost", [0.0, 2.0])
def test_rloo_gradient_matches_the_exact_gradient(toy, step_cost):
    oracle, start, clean = toy
    budget = 3
    prior, posterior = nets(oracle.vocab_size + 1, budget, seed=1)
    params = [*prior.parameters(), *posterior.parameters()]
    objective, _ = exact(oracle, start, clean, prior, posterior, budget, step_cost=step_cost)
    # the loss is per generated position
    exact_grad = flat(torch.autograd.grad(-objective / 3, params, allow_unused=True), params)
    k = 40_000
    roll = rollout(oracle, start, clean, prior, posterior, budget, samples=k, seeds=torch.arange(k))
    mc_grad = flat(torch.autograd.grad(order_loss(roll, k, step_cost=step_cost), params, allow_unused=True), params)
    assert exact_grad.norm() > 1e-3  # a gradient worth comparing
    assert float((mc_grad - exact_grad).norm() / exact_grad.norm()) < 0.1
    # Both halves matter: ψ only through the KL, φ through the KL and the score function.
    n_prior = sum(p.numel() for p in prior.parameters())
    assert exact_grad[:n_prior].norm() > 0 and exact_grad[n_prior:].norm() > 0
    if step_cost:  # the cost moves φ's gradient by more than the tolerance, so dropping it fails above
        plain, _ = exact(oracle, start, clean, prior, posterior, budget)
        plain_grad = flat(torch.autograd.grad(-plain / 3, params, allow_unused=True), params)
        assert float((plain_grad - exact_grad).norm() / exact_grad.norm()) > 0.3
        assert torch.allclose(plain_grad[:n_prior], exact_grad[:n_prior])  # ψ sees the cost only through Q


def test_steps_after_counts_the_steps_left(toy):
    oracle, start, clean = toy
    prior, posterior = nets(oracle.vocab_size + 1, 3)
    with torch.no_grad():
        roll = rollout(oracle, start, clean, prior, posterior, 3, samples=50, seeds=torch.arange(50))
    after = roll.steps_after()  # (N, T): steps left after t, 0 once finished
    assert torch.equal(after[:, 0], (roll.nfe - 1).to(after.dtype)) and (after[:, -1] == 0).all()
    assert (roll.nfe > 1).any() and (roll.nfe < 3).any()  # both kinds of rollout were drawn


@pytest.mark.parametrize("step_cost", [0.0, 2.0])
def test_rloo_gradient_at_four_rollouts_matches_the_exact_gradient(toy, step_cost):
    """K = 4, the default: 20,000 copies of the sequence average the surrogate's gradient over as many
    independent batches. Catches a baseline that includes the rollout's own reward, which shrinks the
    score-function term by 1/K (25 % here; 2.5e-5 at the K = 40,000 of the test above): measured, the
    error is 1–2 % of the score-function term with RLOO and 23–27 % with the own-sample baseline."""
    oracle, start, clean = toy
    budget, k, copies = 3, 4, 20_000
    prior, posterior = nets(oracle.vocab_size + 1, budget, seed=1)
    params = [*prior.parameters(), *posterior.parameters()]
    objective, _ = exact(oracle, start, clean, prior, posterior, budget, step_cost=step_cost)
    exact_grad = flat(torch.autograd.grad(-objective / 3, params, allow_unused=True), params)
    roll = rollout(oracle, start.expand(copies, 3), clean.expand(copies, 3), prior, posterior, budget, samples=k,
                   seeds=torch.arange(copies * k))
    mc_grad = flat(torch.autograd.grad(order_loss(roll, k, step_cost=step_cost), params, retain_graph=True,
                                       allow_unused=True), params)
    pathwise = flat(torch.autograd.grad((roll.kl.sum(1) / roll.masked).mean(), params, allow_unused=True), params)
    score_function = mc_grad - pathwise  # the REINFORCE part, which the baseline scales
    assert score_function.norm() > 0.05 * exact_grad.norm()  # large enough to matter
    assert float((mc_grad - exact_grad).norm() / score_function.norm()) < 0.08


def test_order_loss_gradients_by_hand():
    """The surrogate's gradient in each per-step term, against a loop written from the definitions
    (K = 4, tolerance 1e-6). Catches a baseline that includes the rollout's own reward (every
    advantage × 3/4), one averaged over the wrong rows (another sequence's rollouts), a reward-to-go
    that counts the step's own KL or drops its likelihood, a step cost charged to the wrong steps,
    per-row weights other than 1/(masked · N), and finetune's likelihood term missing or always on."""
    g = torch.Generator().manual_seed(0)
    b, k, t_max, c = 3, 4, 3, 0.7
    n = b * k
    nfe = torch.randint(1, t_max + 1, (n,), generator=g)
    alive = torch.arange(t_max)[None] < nfe[:, None]  # (N, T) steps taken
    loglik = (-torch.rand(n, t_max, generator=g, dtype=torch.float64) * 3 * alive).requires_grad_()
    kl = (torch.rand(n, t_max, generator=g, dtype=torch.float64) * alive).requires_grad_()
    log_q = (-torch.rand(n, t_max, generator=g, dtype=torch.float64) * alive).requires_grad_()
    masked = torch.randint(1, 6, (n,), generator=g)
    roll = Rollout(loglik, kl, log_q, nfe, masked)
    for finetune in (False, True):
        grads = torch.autograd.grad(order_loss(roll, k, finetune=finetune, step_cost=c), [loglik, kl, log_q],
                                    allow_unused=True)
        ll, d = loglik.detach(), kl.detach()
        to_go = [[float(ll[i, t:].sum() - d[i, t + 1:].sum()) - c * max(int(nfe[i]) - t - 1, 0)
                  for t in range(t_max)] for i in range(n)]
        want_q = torch.zeros(n, t_max, dtype=torch.float64)
        for i in range(n):
            others = [j for j in range(i - i % k, i - i % k + k) if j != i]
            for t in range(t_max):
                baseline = sum(to_go[j][t] for j in others) / (k - 1)
                want_q[i, t] = -(to_go[i][t] - baseline) / float(masked[i]) / n
        weight = (1 / (masked.double() * n))[:, None].expand(n, t_max)
        assert torch.allclose(grads[2], want_q, rtol=1e-6, atol=1e-12)
        assert torch.allclose(grads[1], weight, rtol=1e-6, atol=0)  # ψ's and φ's pathwise KL
        if finetune:
            assert torch.allclose(grads[0], -weight, rtol=1e-6, atol=0)
        else:
            assert grads[0] is None or not grads[0].any()


@pytest.mark.parametrize("tau", [0.05, 0.1])
def test_kl_gradient_has_no_dead_zone(tau):
    """dKL/ds at a position scoring g below the best, for g from 0 to 50τ, where Q reveals it with
    probability ½: non-zero everywhere, negative once P̃ reveals it less often than Q (P_ψ learns to
    reveal what Q_φ reveals), and equal to the closed form of the smooth floor p̃ = ε + (1 − 2ε)·p.
    Catches a hard clamp of p to [ε, 1 − ε], whose gradient is exactly 0 beyond τ·ln(1/ε) ≈ 9.2τ."""
    gaps = torch.tensor([1e-3, 0.1, 0.5, 1, 2, 5, 9, 9.5, 10, 15, 20, 30, 40, 50], dtype=torch.float64) * tau
    masked = torch.ones(len(gaps), 2, dtype=torch.bool)
    q = torch.tensor([1.0, 0.5]).expand(len(gaps), 2)
    scores = torch.stack([torch.zeros_like(gaps), -gaps], 1).float().requires_grad_()  # (G, 2): position 0 is best
    p = reveal_probs(scores, masked, tau)
    (grad,) = torch.autograd.grad(bernoulli_kl(q, p, masked).sum(), scores)
    got = grad[:, 1].double()
    p1 = torch.exp(-gaps / tau)  # reveal probability of the position below the best
    pt = EPS + (1 - 2 * EPS) * p1
    want = (-0.5 / pt + 0.5 / (1 - pt)) * (1 - 2 * EPS) * p1 / tau
    assert (got != 0).all(), got
    assert (got[gaps > tau * math.log(2)] < 0).all()  # p̃ < q: raise the score
    assert torch.allclose(got, want, rtol=1e-3, atol=0), (got, want)


def test_kl_is_exactly_zero_where_p_and_q_are_both_certain():
    """The last step (p = q = 1 on every masked position), a shared best position (p = q = 1) and a
    position both rule out (p = q = 0) contribute exactly 0, with finite gradients. Catches a P̃
    smoothed everywhere: its KL at the last step would be L·ln(1/(1 − ε)) ≈ L·1e-4."""
    masked = torch.tensor([[True, True, True, False], [True, True, True, True]])
    last = masked.float()
    assert torch.equal(bernoulli_kl(last, last.clone(), masked), torch.zeros(2))
    p = torch.tensor([[1.0, 0.3, 0.0, 0.0], [1.0, 0.6, 0.0, 0.2]], requires_grad=True)
    q = torch.tensor([[1.0, 0.7, 0.0, 0.0], [1.0, 0.1, 0.0, 0.9]])
    kl = bernoulli_kl(q, p, masked)
    with torch.no_grad():  # without the shared best position (both rows) and the ruled-out one (first row)
        assert torch.equal(kl, bernoulli_kl(q[:, 1:], p[:, 1:], masked[:, 1:]))
        assert torch.equal(kl[:1], bernoulli_kl(q[:1, 1:2], p[:1, 1:2], masked[:1, 1:2]))
    (grad,) = torch.autograd.grad(kl.sum(), p)
    assert torch.isfinite(grad).all()


def test_smoothed_is_a_smooth_floor_and_symmetric():
    """p̃ = ε + (1 − 2ε)·p where P and Q disagree and 1 − p̃ = smoothed(1 − p, 1 − q) (which the KL uses
    for 1 − p̃). Catches a clamp (p̃ = ε for every p < ε) and a complement computed from another floor."""
    p = torch.tensor([0.0, 1e-9, 1e-5, 0.3, 1 - 1e-5, 1.0], dtype=torch.float64)
    q = torch.full_like(p, 0.5)
    assert torch.allclose(smoothed(p, q), EPS + (1 - 2 * EPS) * p, rtol=1e-12, atol=0)
    assert torch.allclose(smoothed(1 - p, 1 - q), 1 - smoothed(p, q), rtol=0, atol=1e-15)
    assert len(set(smoothed(p, q)[:3].tolist())) == 3  # below ε, p̃ still moves with p


def test_rollout_refuses_rollouts_of_a_sequence_sharing_a_seed(toy):
    """Rollouts of one sequence on one seed draw the same reveal sets, so every RLOO advantage is 0 and
    Q_φ learns nothing; rollout refuses them (and a seed count that is not B·K). Catches the check removed."""
    oracle, start, clean = toy
    prior, posterior = nets(oracle.vocab_size + 1, 3)
    two = start.expand(2, 3)
    with torch.no_grad():
        rollout(oracle, two, clean.expand(2, 3), prior, posterior, 3, samples=3, seeds=torch.tensor([5, 6, 7, 5, 6, 7]))
        with pytest.raises(UnmaskError, match="share a seed"):
            rollout(oracle, two, clean.expand(2, 3), prior, posterior, 3, samples=3, seeds=torch.tensor([5, 6, 5, 1, 2, 3]))
        with pytest.raises(UnmaskError, match="one seed per rollout"):
            rollout(oracle, two, clean.expand(2, 3), prior, posterior, 3, samples=3, seeds=torch.arange(5))
