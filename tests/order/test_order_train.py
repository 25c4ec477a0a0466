"""The order trainer: it learns, resumes exactly, refuses what it cannot continue, and exports a model
directory that ``--policy learned`` finds (planted bugs in comments)."""

from __future__ import annotations

import json

import pytest
import torch

from unmask.errors import UnmaskError
from unmask.model import save_model
from unmask.order.net import OrderConfig, OrderNet, load_order_net
from unmask.order.policy import Learned
from unmask.order.train import OrderTrainConfig, train_order
from unmask.policies import build_policy


@pytest.fixture
def setup(tmp_path, make_model):
    model = make_model(seq_len=8, vocab=3)
    save_model(model, tmp_path / "base")
    g = torch.Generator().manual_seed(0)
    clean = torch.randint(3, (32, 8), generator=g)
    start = torch.where(torch.rand(32, 8, generator=g) < 0.7, torch.full_like(clean, model.mask_id), clean)
    start[:, 0] = model.mask_id  # at least one masked position everywhere
    return model, tmp_path, start, clean


def cfg(**kw) -> OrderTrainConfig:
    base = dict(budget=3, steps=4, batch_size=4, samples=2, d_hidden=8, warmup=1, eval_every=2, ckpt_every=2, lr=1e-2)
    return OrderTrainConfig(**(base | kw))


def test_resume_continues_exactly(setup):
    model, tmp, start, clean = setup
    whole = train_order(model, tmp / "base", start, clean, cfg(), tmp / "a", progress=False)
    train_order(model, tmp / "base", start, clean, cfg(steps=2), tmp / "b", progress=False)
    resumed = train_order(model, tmp / "base", start, clean, cfg(), tmp / "b", resume=True, progress=False)
    # a resume that re-initialises, skips the generator state or the optimizer gives other weights
    for a, b in zip(whole.state_dict().values(), resumed.state_dict().values()):
        assert torch.equal(a, b)
    log = (tmp / "b" / "log.jsonl").read_text().splitlines()
    assert [line.split(",")[0] for line in log] == ['{"step": 2', '{"step": 4']
    # killed between two log lines (after the step-3 checkpoint): the resumed run's next line still averages
    # steps 1-4, as a whole run's does (the metric sums are in the checkpoint)
    def killed(policy):
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError, match="killed"):
        train_order(model, tmp / "base", start, clean, cfg(eval_every=4, ckpt_every=1), tmp / "c", validate=killed,
                    progress=False)
    train_order(model, tmp / "base", start, clean, cfg(eval_every=4, ckpt_every=1), tmp / "c", resume=True, progress=False)
    train_order(model, tmp / "base", start, clean, cfg(eval_every=4, ckpt_every=1), tmp / "d", progress=False)
    strip = lambda line: {k: v for k, v in json.loads(line).items() if k != "minutes"}  # noqa: E731
    assert [strip(x) for x in (tmp / "c" / "log.jsonl").read_text().splitlines()] == \
        [strip(x) for x in (tmp / "d" / "log.jsonl").read_text().splitlines()]


def test_training_moves_the_policy_and_exports_it(setup):
    model, tmp, start, clean = setup
    seen = []
    net = train_order(model, tmp / "base", start, clean, cfg(), tmp / "run", validate=lambda p: seen.append(p) or {"acc": 0.5},
                      progress=False, source={"model_sha256": "abc"})

    meta = json.loads((tmp / "run" / "order_policy.json").read_text())  # in the run folder itself: --order RUN
    assert meta["source"] == {"model_sha256": "abc"} and meta["base_model_sha256"] == "abc"
    assert not (tmp / "run" / "model").exists()  # never a copy of the base model
    assert len(seen) == 2 and all(p.budget() == 3 for p in seen)  # validated at steps 2 and 4
    assert net.out.weight.abs().sum() > 0  # the zero-initialised output layer learned something
    exported = load_order_net(tmp / "run")
    assert all(torch.equal(a, b) for a, b in zip(net.state_dict().values(), exported.state_dict().values()))
    with pytest.raises(UnmaskError, match="give base= too"):  # a folder named on its own is checked against a model
        build_policy("learned", model, order_dir=tmp / "run")
    assert not any(p.requires_grad for p in model.parameters())  # the denoiser stayed frozen


def test_refusals(setup):
    model, tmp, start, clean = setup
    train_order(model, tmp / "base", start, clean, cfg(steps=2), tmp / "run", progress=False)
    with pytest.raises(UnmaskError, match="already holds a run"):
        train_order(model, tmp / "base", start, clean, cfg(), tmp / "run", progress=False)
    with pytest.raises(UnmaskError, match="different training settings"):
        train_order(model, tmp / "base", start, clean, cfg(tau=2.0), tmp / "run", resume=True, progress=False)
    with pytest.raises(UnmaskError, match="past --steps"):
        train_order(model, tmp / "base", start, clean, cfg(steps=1), tmp / "run", resume=True, progress=False)
    (tmp / "run" / "checkpoint.pt").write_bytes(b"garbage")
    with pytest.raises(UnmaskError, match="unreadable checkpoint"):
        train_order(model, tmp / "base", start, clean, cfg(), tmp / "run", resume=True, progress=False)
    with pytest.raises(UnmaskError, match="samples must be >= 2"):
        cfg(samples=1)
    with pytest.raises(UnmaskError, match="step_cost must be >= 0"):
        cfg(step_cost=-0.1)


def test_step_cost_is_a_training_setting_and_old_runs_resume(setup):
    model, tmp, start, clean = setup
    train_order(model, tmp / "base", start, clean, cfg(steps=2), tmp / "run", progress=False)
    with pytest.raises(UnmaskError, match=r"different training settings \['step_cost'\]"):
        train_order(model, tmp / "base", start, clean, cfg(step_cost=0.5), tmp / "run", resume=True, progress=False)
    # a checkpoint written before step_cost existed resumes as the plain ELBO (its default) ...
    state = torch.load(tmp / "run" / "checkpoint.pt", weights_only=False)
    del state["train_config"]["step_cost"]
    torch.save(state, tmp / "run" / "checkpoint.pt")
    train_order(model, tmp / "base", start, clean, cfg(steps=3), tmp / "run", resume=True, progress=False)
    # ... and refuses another cost
    state = torch.load(tmp / "run" / "checkpoint.pt", weights_only=False)
    del state["train_config"]["step_cost"]
    torch.save(state, tmp / "run" / "checkpoint.pt")
    with pytest.raises(UnmaskError, match="different training settings"):
        train_order(model, tmp / "base", start, clean, cfg(steps=4, step_cost=0.5), tmp / "run", resume=True, progress=False)


def test_each_rollout_of_a_sequence_gets_its_own_seed(setup, monkeypatch):
    """The trainer's K seeds for one sequence differ, and so do the rollouts they draw. Catches one seed
    per sequence repeated K times (the rollouts coincide, every RLOO advantage is 0 and Q_φ gets no
    REINFORCE signal)."""
    import unmask.order.train as trainer

    model, tmp, start, clean = setup
    seen, real = [], trainer.rollout

    def spy(*args, **kw):
        roll = real(*args, **kw)
        seen.append((args[-1].clone(), roll.log_q.detach()))  # (seeds, log Q of each step)
        return roll

    monkeypatch.setattr(trainer, "rollout", spy)
    train_order(model, tmp / "base", start, clean, cfg(steps=2, samples=3), tmp / "run", progress=False)
    assert len(seen) == 2
    for seeds, log_q in seen:
        assert all(len(set(row.tolist())) == 3 for row in seeds.view(-1, 3))  # (B, K): distinct in each row
        per_seq = log_q.view(-1, 3, log_q.shape[1])  # (B, K, T)
        assert (per_seq != per_seq[:, :1]).any()  # some sequence's rollouts drew different reveal sets


def test_training_stops_when_rollouts_share_a_seed(setup, monkeypatch):
    """Planted bug: the K seeds of a sequence repeated (as if drawn once per sequence). The check in the
    training step must stop the run before any update. Catches the check removed."""
    import unmask.order.train as trainer

    model, tmp, start, clean = setup
    real = trainer.rollout

    def repeated(*args, **kw):
        *head, samples, seeds = args
        return real(*head, samples, seeds.view(-1, samples)[:, :1].expand(-1, samples).reshape(-1), **kw)

    monkeypatch.setattr(trainer, "rollout", repeated)
    with pytest.raises(UnmaskError, match="share a seed"):
        train_order(model, tmp / "base", start, clean, cfg(steps=2), tmp / "run", progress=False)


def test_finetune_trains_the_denoiser(setup):
    model, tmp, start, clean = setup
    before = {k: v.clone() for k, v in model.state_dict().items()}
    train_order(model, tmp / "base", start, clean, cfg(steps=2, finetune=True, finetune_lr=1e-2), tmp / "ft", progress=False)
    assert any(not torch.equal(before[k], v) for k, v in model.state_dict().items())
    from unmask.model import load_model

    assert load_model(tmp / "ft" / "model") is not None  # the finetuned denoiser is exported beside the policy
    from unmask import artifacts

    # the policy names the fine-tuned model as its base: usable with it, refused with the model it started from
    assert build_policy("learned", model, order_dir=tmp / "ft", base=tmp / "ft" / "model").net is not None
    meta = artifacts.read_meta(tmp / "ft", artifacts.ORDER_POLICY)
    assert meta["base_model_sha256"] == artifacts.model_digest(tmp / "ft" / "model")


DDP_SCRIPT = """
import sys, torch
from unmask.dist import rank_world
from unmask.model import load_model
from unmask.order.train import OrderTrainConfig, train_order
model_dir, data, out = sys.argv[1:4]
d = torch.load(data)
cfg = OrderTrainConfig(budget=3, steps=4, batch_size=4, samples=2, d_hidden=8, warmup=1, eval_every=2, ckpt_every=2,
                       lr=1e-2, step_cost=0.1)
seen = []
net = train_order(load_model(model_dir), model_dir, d["start"], d["clean"], cfg, out,
                  validate=lambda p: seen.append(p.budget()) or {"acc": 0.5}, progress=False)
rank, world = rank_world()
torch.save({"world": world, "validated": seen, "state": net.state_dict()}, f"{out}/rank{rank}.pt")
"""


@pytest.mark.skipif(not torch.distributed.is_available(), reason="torch.distributed is not available in this torch build")
def test_two_processes_average_gradients(setup):
    """``torchrun --nproc_per_node 2``: each rank draws its own batches, gradients are averaged, so both
    ranks end with the same weights (a missing average leaves them apart; shared generators would
    draw the same batches), every rank validates, and rank 0 checkpoints both streams."""
    import os
    import socket
    import subprocess
    import sys
    from pathlib import Path

    from unmask.runs import CHECKPOINT

    model, tmp, start, clean = setup
    torch.save({"start": start, "clean": clean}, tmp / "data.pt")
    (tmp / "ddp.py").write_text(DDP_SCRIPT)
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
    for k in ("WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(k, None)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_addr", "127.0.0.1",
           "--master_port", str(port), str(tmp / "ddp.py"), str(tmp / "base"), str(tmp / "data.pt"), str(tmp / "run")]
    r = subprocess.run(cmd, env=env, cwd=tmp, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    ranks = [torch.load(tmp / "run" / f"rank{k}.pt") for k in range(2)]
    assert [g["world"] for g in ranks] == [2, 2] and [g["validated"] for g in ranks] == [[3, 3], [3, 3]]
    for a, b in zip(ranks[0]["state"].values(), ranks[1]["state"].values()):
        assert torch.equal(a, b)
    assert ranks[0]["state"]["out.weight"].abs().sum() > 0  # it trained
    state = torch.load(tmp / "run" / CHECKPOINT, weights_only=False)
    assert state["step"] == 4 and len(state["generators"]) == 2
    assert not torch.equal(state["generators"][0], state["generators"][1])
    # one process on the same seed draws rank 0's batches only, so it ends elsewhere
    alone = train_order(model, tmp / "base", start, clean, cfg(step_cost=0.1), tmp / "alone", progress=False)
    assert any(not torch.equal(a, b) for a, b in zip(alone.state_dict().values(), ranks[0]["state"].values()))


def test_outcome_rl_learns_what_the_reward_pays_for(setup):
    """With success always 0 and a step cost, the reward is −c·NFE: RL must cut the passes. Catches an
    advantage of the wrong sign, log-probabilities cut from P_ψ, or a step cost that never reaches the reward."""
    model, tmp, start, clean = setup
    calls = []

    def nothing_right(tokens, index):
        calls.append(index)
        return torch.zeros(len(tokens))

    width = model(start[:1]).hidden.shape[-1]
    before = _mean_steps(model, OrderNet(OrderConfig(width, 8, 0.3, 4)), start)  # the untrained start
    net = train_order(model, tmp / "base", start, clean, cfg(objective="rl", step_cost=1.0, budget=4, tau=0.3, steps=25,
                                                             samples=4, batch_size=8, lr=5e-2),
                      tmp / "rl", progress=False, success=nothing_right)
    after = _mean_steps(model, net, start)
    assert after < before - 0.5, (before, after)
    assert all(len(i) == 8 * 4 and (i.view(8, 4) == i.view(8, 4)[:, :1]).all() for i in calls)  # K copies of each example
    log = [json.loads(line) for line in (tmp / "rl" / "log.jsonl").read_text().splitlines()]
    assert {"train_success", "train_reward", "train_mean_steps", "train_kl_start"} <= set(log[-1])


def _mean_steps(model, net, start) -> float:
    from unmask.decode import decode

    res = decode(model, start, Learned(steps=net.cfg.budget, net=net.eval()), seeds=torch.arange(len(start)))
    return float(res.nfe.double().mean())


@pytest.mark.parametrize("kw, message", [
    (dict(objective="ppo"), "choose one of elbo, rl"),
    (dict(kl_start=0.1), "give --objective rl"),
    (dict(objective="rl", finetune=True), "stays frozen"),
    (dict(objective="rl", kl_start=-1.0), "kl_start must be >= 0"),
])
def test_objective_settings_are_checked(kw, message):
    """Bugs caught: an unknown objective silently trained as the ELBO; a KL weight or finetune ignored."""
    with pytest.raises(UnmaskError, match=message):
        cfg(**kw)


def test_rl_without_a_check_of_the_outcome_is_refused(setup):
    """Bug caught: RL run with no reward (every advantage 0), training nothing for hours."""
    model, tmp, start, clean = setup
    with pytest.raises(UnmaskError, match="needs the task's check"):
        train_order(model, tmp / "base", start, clean, cfg(objective="rl"), tmp / "run", progress=False)
    assert not (tmp / "run").exists()


def test_kl_to_the_start_resumes_exactly(setup):
    """The reference network is the seeded initialisation, also after a resume. Catches a reference built
    from the resumed (trained) weights, which would make the KL 0 after every resume."""
    model, tmp, start, clean = setup
    ok = lambda tokens, index: (tokens[:, 0] == 0).float()  # noqa: E731
    kw = dict(objective="rl", kl_start=0.5, step_cost=0.1)
    whole = train_order(model, tmp / "base", start, clean, cfg(**kw), tmp / "a", progress=False, success=ok)
    train_order(model, tmp / "base", start, clean, cfg(**kw, steps=2), tmp / "b", progress=False, success=ok)
    resumed = train_order(model, tmp / "base", start, clean, cfg(**kw), tmp / "b", resume=True, progress=False, success=ok)
    for a, b in zip(whole.state_dict().values(), resumed.state_dict().values()):
        assert torch.equal(a, b)
