"""The order trainer: it learns, resumes exactly, refuses what it cannot continue, and exports a model
directory that ``--policy learned`` finds (planted bugs in comments)."""

from __future__ import annotations

import pytest
import torch

from unmask.errors import UnmaskError
from unmask.model import save_model
from unmask.order.net import load_order_net
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


def test_training_moves_the_policy_and_exports_it(setup):
    model, tmp, start, clean = setup
    seen = []
    net = train_order(model, tmp / "base", start, clean, cfg(), tmp / "run", validate=lambda p: seen.append(p) or {"acc": 0.5},
                      progress=False, source={"model_sha256": "abc"})
    import json

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
