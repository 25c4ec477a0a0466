"""MDM training: the loss drops, a resumed run equals an uninterrupted one, DDP runs under torchrun."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from dataclasses import dataclass

import pytest
import torch

from unmask.errors import UnmaskError
from unmask.model import ModelConfig, TransformerDenoiser, load_model
from unmask.train import CHECKPOINT, TrainConfig, lr_at, mask_batch, mdm_loss, train


@dataclass
class ConstantTask:
    """Sequences of one repeated random value: any visible token reveals all masked ones."""

    name: str = "constant"
    interrupt_at: int | None = None  # raise KeyboardInterrupt on this call of sample()
    calls: int = 0

    def model(self, cfg):
        cfg = cfg or ModelConfig(vocab_size=4, mask_id=4, seq_len=8, d_model=32, n_layers=2, n_heads=2, d_ff=64)
        return TransformerDenoiser(cfg)

    def sample(self, gen, n):
        self.calls += 1
        if self.interrupt_at == self.calls:
            raise KeyboardInterrupt
        v = torch.randint(4, (n, 1), generator=gen)
        return v.expand(n, 8).clone(), torch.ones(n, 8, dtype=torch.bool)

    def validate(self, model):
        return {"params": model.num_parameters()}


def held_out_loss(model, cfg: TrainConfig) -> float:
    gen = torch.Generator().manual_seed(123)
    x0, maskable = ConstantTask().sample(gen, 512)
    with torch.no_grad():
        return float(mdm_loss(model.eval(), x0, maskable, cfg, gen))


def test_loss_drops(tmp_path):
    cfg = TrainConfig(steps=80, batch_size=32, lr=3e-3, warmup=10, eval_every=80, ckpt_every=80, bf16=False)
    task = ConstantTask()
    before = held_out_loss(task.model(None), cfg)
    model = train(task, cfg, tmp_path / "run", progress=False)
    after = held_out_loss(model, cfg)
    assert before > 1.2  # ≈ ln 4 for an untrained model
    assert after < 0.5 * before
    assert (tmp_path / "run" / "model" / "model.safetensors").is_file()
    assert load_model(tmp_path / "run" / "model").num_parameters() == model.num_parameters()


def test_resume_equals_uninterrupted(tmp_path):
    cfg = TrainConfig(steps=12, batch_size=8, warmup=2, eval_every=6, ckpt_every=3, bf16=False)
    full = train(ConstantTask(), cfg, tmp_path / "a", progress=False)
    with pytest.raises(KeyboardInterrupt):
        train(ConstantTask(interrupt_at=8), cfg, tmp_path / "b", progress=False)  # dies in step 8
    assert torch.load(tmp_path / "b" / CHECKPOINT, weights_only=False)["step"] == 6
    resumed = train(ConstantTask(), cfg, tmp_path / "b", resume=True, progress=False)
    for (name, p), q in zip(full.state_dict().items(), resumed.state_dict().values()):
        assert torch.equal(p, q), name
    log_a = (tmp_path / "a" / "log.jsonl").read_text().splitlines()
    log_b = (tmp_path / "b" / "log.jsonl").read_text().splitlines()
    assert [len(log_a), len(log_b)] == [2, 2]


def test_refuses_to_overwrite_or_resume_wrongly(tmp_path):
    cfg = TrainConfig(steps=2, batch_size=4, warmup=1, bf16=False)
    train(ConstantTask(), cfg, tmp_path / "r", progress=False)
    with pytest.raises(UnmaskError, match="already holds a run"):
        train(ConstantTask(), cfg, tmp_path / "r", progress=False)
    with pytest.raises(UnmaskError, match="different training settings"):
        train(ConstantTask(), TrainConfig(steps=4, batch_size=4, warmup=1, lr=1.0, bf16=False), tmp_path / "r", resume=True,
              progress=False)
    with pytest.raises(UnmaskError, match="nothing to resume"):
        train(ConstantTask(), cfg, tmp_path / "none", resume=True, progress=False)


def test_init_starts_a_fresh_run_from_a_trained_model_and_resume_keeps_its_record(tmp_path):
    cfg = TrainConfig(steps=40, batch_size=16, lr=3e-3, warmup=5, eval_every=40, ckpt_every=40, bf16=False)
    trained = train(ConstantTask(), cfg, tmp_path / "a", progress=False)
    barely = TrainConfig(steps=1, batch_size=4, lr=1e-9, warmup=0, bf16=False)  # one step that moves nothing visible
    started = train(ConstantTask(), barely, tmp_path / "b", progress=False, source={"init_sha256": "x"}, init=trained)
    for (name, p), q in zip(trained.state_dict().items(), started.state_dict().values()):
        assert torch.allclose(p, q, atol=1e-6), name
    fresh = train(ConstantTask(), barely, tmp_path / "c", progress=False)  # the same run without init does not
    assert held_out_loss(started, cfg) < 0.5 * held_out_loss(fresh, cfg)
    # A resume (given no init) keeps what the first start recorded, and refuses another init.
    train(ConstantTask(), TrainConfig(steps=2, batch_size=4, lr=1e-9, warmup=0, bf16=False), tmp_path / "b", resume=True,
          progress=False, source={})
    assert torch.load(tmp_path / "b" / CHECKPOINT, weights_only=False)["source"] == {"init_sha256": "x"}
    with pytest.raises(UnmaskError, match="different inputs"):
        train(ConstantTask(), TrainConfig(steps=3, batch_size=4, lr=1e-9, warmup=0, bf16=False), tmp_path / "b",
              resume=True, progress=False, source={"init_sha256": "y"}, init=trained)


def test_resume_may_move_to_another_device_and_batch(tmp_path):
    cfg = TrainConfig(steps=3, batch_size=4, warmup=1, bf16=False, eval_every=3)
    train(ConstantTask(), cfg, tmp_path / "r", progress=False)
    more = TrainConfig(steps=5, batch_size=16, warmup=1, bf16=False, eval_every=3, device="cpu")
    train(ConstantTask(), more, tmp_path / "r", resume=True, progress=False)
    state = torch.load(tmp_path / "r" / CHECKPOINT, weights_only=False)
    assert state["step"] == 5 and state["train_config"]["batch_size"] == 16
    assert '"device": "cpu"' in (tmp_path / "r" / "log.jsonl").read_text()


def test_device_errors_are_one_line(tmp_path):
    with pytest.raises(UnmaskError, match="unknown device 'gpu0'"):
        train(ConstantTask(), TrainConfig(steps=1, warmup=0, device="gpu0"), tmp_path / "g", progress=False)
    if not torch.cuda.is_available():
        with pytest.raises(UnmaskError, match="no CUDA device"):
            train(ConstantTask(), TrainConfig(steps=1, warmup=0, device="cuda"), tmp_path / "c", progress=False)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_training_and_cpu_decoding(tmp_path):
    cfg = TrainConfig(steps=80, batch_size=32, lr=3e-3, warmup=10, eval_every=80, ckpt_every=40, device="cuda")
    model = train(ConstantTask(), cfg, tmp_path / "run", progress=False)
    assert model.tok.weight.is_cuda
    tokens = torch.zeros(2, 8, dtype=torch.long)
    logits, hidden = model(tokens)  # runs on the GPU, answers on the caller's device
    assert logits.device == hidden.device == tokens.device
    assert held_out_loss(model, cfg) < 0.7  # ≈ ln 4 = 1.39 untrained
    cpu = TrainConfig(steps=90, batch_size=32, lr=3e-3, warmup=10, eval_every=80, ckpt_every=40)
    assert not train(ConstantTask(), cpu, tmp_path / "run", resume=True, progress=False).tok.weight.is_cuda


def test_suffix_masking_hides_everything_after_a_cut():
    x0 = torch.zeros(4000, 30, dtype=torch.long)
    maskable = torch.ones_like(x0, dtype=torch.bool)
    maskable[:, :8] = False
    cfg = TrainConfig(suffix_prob=0.5, mask_min=0.0, mask_max=0.01)  # nearly no uniform masking
    masked = mask_batch(x0, maskable, 7, cfg, torch.Generator().manual_seed(1))[1]
    assert not masked[:, :8].any() and masked[:, -1].float().mean() == pytest.approx(0.5, abs=0.03)
    suffix_rows = masked[:, -1]
    m = masked[suffix_rows, 8:]  # (rows, 22)
    tail = m.flip(1).int().cumprod(1).sum(1)  # masked run at the end: 22 - cut
    assert tail.float().mean() == pytest.approx(11.5, abs=0.7)  # cut uniform over the 22 maskable positions
    assert (m.sum(1) - tail).float().mean() < 1.2  # before the cut: the one guaranteed mask (+ ~1 % uniform)
    with pytest.raises(UnmaskError, match="suffix_prob"):
        TrainConfig(suffix_prob=0.3, elbo_weight=True)


def test_masking_and_schedule():
    cfg = TrainConfig(steps=100, warmup=10, mask_min=0.2, mask_max=0.6)
    gen = torch.Generator().manual_seed(0)
    x0 = torch.zeros(2000, 50, dtype=torch.long)
    maskable = torch.ones_like(x0, dtype=torch.bool)
    maskable[:, :10] = False
    xt, masked, t = mask_batch(x0, maskable, 7, cfg, gen)
    assert not masked[:, :10].any() and masked.any(1).all()
    assert torch.equal(xt == 7, masked)
    assert 0.2 <= float(t.min()) and float(t.max()) <= 0.6
    rate = masked[:, 10:].float().mean(1)
    assert abs(float((rate - t).mean())) < 0.01
    plain = mask_batch(x0, maskable, 7, cfg, torch.Generator().manual_seed(0))[1]
    assert torch.equal(plain, masked)  # suffix_prob 0 draws nothing extra: old runs resume unchanged
    assert lr_at(0, cfg) == pytest.approx(cfg.lr / 10)
    assert lr_at(10, cfg) == pytest.approx(cfg.lr)
    assert lr_at(100, cfg) == pytest.approx(cfg.lr * cfg.min_lr_ratio)


@pytest.mark.parametrize("suffix_prob", [0.0, 0.3])
def test_masking_draws_only_from_its_generator(suffix_prob):
    # Bugs caught: a draw taken from the global RNG instead of ``gen`` (a resumed run would mask
    # differently), one uniform per position shared by every row, or the suffix draws made even at
    # suffix_prob = 0 (which would shift every later draw of an old run's stream).
    b, n = 6, 5
    cfg = TrainConfig(suffix_prob=suffix_prob)
    x0 = torch.zeros(b, n, dtype=torch.long)
    gen = torch.Generator().manual_seed(4)
    torch.manual_seed(0)
    first = mask_batch(x0, torch.ones_like(x0, dtype=torch.bool), 7, cfg, gen)[1]
    ref = torch.Generator().manual_seed(4)
    for shape in [(b,), (b, n)] + ([(b,), (b,)] if suffix_prob else []):  # t, u (+ cut, use)
        torch.rand(shape, generator=ref)
    assert torch.equal(gen.get_state(), ref.get_state())
    torch.manual_seed(1)  # another global seed changes nothing
    again = mask_batch(x0, torch.ones_like(x0, dtype=torch.bool), 7, cfg, torch.Generator().manual_seed(4))[1]
    assert torch.equal(first, again)


def test_masking_guarantees_one_maskable_position_and_keeps_uniform_masks_under_suffixes():
    # Bugs caught: the guaranteed mask picked among the unmaskable positions (or AND-ed away), so a
    # tiny t leaves rows with nothing to learn; suffix masking replacing the uniform mask (=) instead
    # of adding to it (|=).
    x0 = torch.zeros(3000, 20, dtype=torch.long)
    maskable = torch.ones_like(x0, dtype=torch.bool)
    maskable[:, :5] = False
    tiny = TrainConfig(mask_min=0.0, mask_max=1e-6)
    masked = mask_batch(x0, maskable, 7, tiny, torch.Generator().manual_seed(0))[1]
    assert (masked.sum(1) == 1).all() and not masked[:, :5].any()
    every = TrainConfig(mask_min=0.49, mask_max=0.5, suffix_prob=1.0)  # a suffix in every row
    masked = mask_batch(x0, maskable, 7, every, torch.Generator().manual_seed(0))[1]
    # Position 5 (the first maskable) is under the suffix only when the cut is 0 (1 in 15), else it
    # keeps its uniform mask (t ≈ 0.495): P ≈ 0.495 + 0.505 / 15.
    assert masked[:, 5].float().mean() == pytest.approx(0.495 + 0.505 / 15, abs=0.03)


class TableModel(torch.nn.Module):
    """Logits from a fixed (L, V) table whatever the input: a loss whose every term is known."""

    mask_id = 4

    def __init__(self):
        super().__init__()
        self.table = torch.nn.Parameter(torch.tensor([[2.0, 0.0, -1.0, 0.5], [0.0, 1.0, 0.0, 0.0], [-1.0, -1.0, 3.0, 0.0]]))
        self.proj = torch.nn.Linear(4, 4)  # a matmul, so that bf16 autocast changes the logits
        with torch.no_grad():
            self.proj.weight.copy_(torch.eye(4) + 0.01 * torch.arange(16.0).view(4, 4))

    def forward(self, xt):
        return self.proj(self.table).expand(xt.shape[0], -1, -1), None


@pytest.mark.parametrize("elbo", [False, True])
def test_mdm_loss_value_on_a_hand_made_case(elbo):
    # Bugs caught: the MDLM 1/t weight dropped from the NELBO (or applied without elbo_weight); the
    # per-sequence mean taken over all positions instead of the masked ones, or the NELBO divided
    # by L instead of the maskable count; the batch summed instead of averaged; a single-mask row
    # (row 2 here) weighed 1/(tL) instead of 1/(tL + 1 − t).
    x0 = torch.tensor([[0, 1, 2], [3, 1, 0], [2, 2, 2], [1, 0, 3]])
    maskable = torch.tensor([[True, True, True], [True, True, False], [False, True, True], [True, True, True]])
    cfg = TrainConfig(bf16=False, mask_min=0.2, mask_max=0.9, elbo_weight=elbo)
    model = TableModel()
    _, masked, t = mask_batch(x0, maskable, 4, cfg, torch.Generator().manual_seed(3))  # the draws mdm_loss will see
    got = mdm_loss(model, x0, maskable, cfg, torch.Generator().manual_seed(3)).item()
    with torch.no_grad():
        logp = torch.log_softmax(model.proj(model.table).double(), -1)  # float32, no autocast
    want = 0.0
    for b in range(4):
        nll = [-float(logp[j, x0[b, j]]) for j in range(3) if masked[b, j]]
        if elbo:  # NELBO: Σ_masked nll / (t · number of maskable positions), + 1 − t with a single mask
            want += sum(nll) / (float(t[b]) * int(maskable[b].sum()) + (1 - float(t[b])) * (len(nll) == 1)) / 4
        else:  # mean over masked positions
            want += sum(nll) / len(nll) / 4
    assert len({float(x) for x in t}) == 4 and not torch.equal(masked, maskable)  # t and the masks vary
    assert set(masked.sum(1).tolist()) >= {1, 2}  # single- and multi-mask rows
    assert got == pytest.approx(want, rel=1e-6)


class ZeroModel(torch.nn.Module):
    """Uniform logits over V = 2: every masked position costs ln 2."""

    mask_id = 2

    def __init__(self):
        super().__init__()
        self.bias = torch.nn.Parameter(torch.zeros(2))

    def forward(self, xt):
        return self.bias.expand(*xt.shape, 2), None


def mean_and_se(losses: list[float]) -> tuple[float, float]:
    x = torch.tensor(losses, dtype=torch.float64)
    return float(x.mean()), float(x.std() / len(x) ** 0.5)


@pytest.mark.parametrize("t", [0.05, 0.5])
def test_nelbo_is_unbiased_at_a_fixed_mask_rate(t):
    # Bug caught: the guaranteed mask left in the 1/t-weighted NELBO. At mask rate t (drawn from
    # (t − 1e-4, t]) the forward process gives E[Σ_masked nll_n / (tL)] = mean_n nll_n exactly (an
    # empty mask scores 0); weighing the forced masks 1/(tL) adds (1 − t)^L / (tL) · nll: 6.7 times
    # the NELBO at t = 0.05 and L = 3, 9 % at t = 0.5.
    cfg = TrainConfig(bf16=False, mask_min=t - 1e-4, mask_max=t, elbo_weight=True)
    model, gen = TableModel(), torch.Generator().manual_seed(0)
    x0 = torch.tensor([[0, 1, 2]]).expand(20_000, 3)
    maskable = torch.ones_like(x0, dtype=torch.bool)
    with torch.no_grad():
        losses = [float(mdm_loss(model, x0, maskable, cfg, gen)) for _ in range(20)]
        nll = -torch.log_softmax(model.proj(model.table).double(), -1)[torch.arange(3), x0[0]]  # (3,)
    mean, se = mean_and_se(losses)
    assert abs(mean - float(nll.mean())) < 4 * se + 1e-4, (mean, float(nll.mean()), se)


def test_nelbo_weight_is_unbiased_over_the_default_mask_rates():
    # Bug caught: as above, at the Sudoku length L = 81 with t ~ U(0, 1] (the default): the expected
    # weight of a masked position must be 1 (the loss ln 2), not about 1.15 with a heavy tail.
    cfg = TrainConfig(bf16=False, elbo_weight=True)
    gen = torch.Generator().manual_seed(0)
    x0 = torch.zeros(20_000, 81, dtype=torch.long)
    maskable = torch.ones_like(x0, dtype=torch.bool)
    with torch.no_grad():
        losses = [float(mdm_loss(ZeroModel(), x0, maskable, cfg, gen)) / math.log(2) for _ in range(20)]
    mean, se = mean_and_se(losses)
    assert se < 0.005 and abs(mean - 1) < 4 * se, (mean, se)


def test_bf16_flag_switches_autocast():
    # Bug caught: autocast enabled whatever ``bf16`` says (or never): the float32 loss must be exact,
    # the bf16 one only close.
    x0, maskable = torch.tensor([[0, 1, 2], [3, 1, 0]]), torch.ones(2, 3, dtype=torch.bool)
    model = TableModel()
    loss = {bf16: mdm_loss(model, x0, maskable, TrainConfig(bf16=bf16), torch.Generator().manual_seed(0)).item()
            for bf16 in (False, True)}
    xt, masked, t = mask_batch(x0, maskable, 4, TrainConfig(), torch.Generator().manual_seed(0))
    with torch.no_grad():
        nll = torch.nn.functional.cross_entropy(model.proj(model.table).expand(2, -1, -1).transpose(1, 2), x0, reduction="none")
    want = float(((nll * masked).sum(1) / masked.sum(1)).mean())
    assert loss[False] == pytest.approx(want, rel=1e-6)
    assert loss[True] != loss[False] and loss[True] == pytest.approx(want, rel=0.05)


def test_ddp_two_processes(tmp_path):
    """``torchrun --nproc_per_node 2`` (gloo on CPU) trains and checkpoints both ranks' streams."""
    from unmask.tasks.sudoku.data import write_puzzles
    from unmask.tasks.sudoku.generate import generate

    write_puzzles(tmp_path / "p.csv", generate("kaggle", 8, 0, progress=False))
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
           "-m", "unmask.cli", "sudoku", "train", "--data", str(tmp_path / "p.csv"), "--val", str(tmp_path / "p.csv"),
           "--val-n", "2", "--out", str(out), "--steps", "4", "--batch-size", "4", "--warmup", "1",
           "--eval-every", "4", "--ckpt-every", "2", "--d-model", "16", "--n-layers", "1", "--n-heads", "2",
           "--d-ff", "32", "--no-bf16"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    state = torch.load(out / CHECKPOINT, weights_only=False)
    assert state["step"] == 4 and len(state["generators"]) == 2
    assert not torch.equal(state["generators"][0], state["generators"][1])
    assert (out / "model" / "model.safetensors").is_file()
    # Validation ran with the set sharded across both ranks (every rank must join the evaluator).
    log = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log] == [4] and 0 <= log[0]["p_acc"] <= 1
