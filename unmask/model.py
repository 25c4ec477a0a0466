"""A small bidirectional transformer denoiser, with safetensors + JSON save/load.

Pre-norm encoder blocks (no causal mask) as in MDLM (Sahoo et al. 2024) and LLaDA; learned absolute
positions plus optional task position features (e.g. Sudoku row/column/box ids) added to the token
embedding, and optional rotary position embeddings in attention (RoPE, Su et al. 2021), which let text
models act on relative offsets ("the digit three places before '='").
"""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

from unmask import artifacts, checks
from unmask.denoiser import DenoiserOutput
from unmask.errors import UnmaskError

WEIGHTS_FILE = artifacts.MODEL.weights
CONFIG_FILE = artifacts.MODEL.meta


@dataclass
class ModelConfig:
    """Shape of a :class:`TransformerDenoiser`."""

    vocab_size: int  # V: tokens the model predicts (logits' last dim)
    mask_id: int  # input id of a masked position (may equal vocab_size: an extra input-only token)
    seq_len: int  # L: sequence length (learned absolute positions)
    d_model: int = 128  # D: width of the residual stream
    n_layers: int = 6  # number of transformer blocks
    n_heads: int = 4  # attention heads per block
    d_ff: int = 512  # hidden width of each MLP
    dropout: float = 0.0  # dropout on attention and MLP outputs (0 for small data-rich tasks)
    position_features: list[int] = field(default_factory=list)  # cardinality of each extra per-position id
    rope: bool = False  # rotary position embeddings on queries and keys (relative offsets), as LLaDA/Dream
    prompt_len: int = 0  # leading positions that are always given (e.g. a question); the rest is generated
    task: str = ""  # name of the task the model was trained for (informative, checked by CLIs)

    def __post_init__(self) -> None:
        for name in ("vocab_size", "seq_len", "d_model", "n_layers", "n_heads", "d_ff"):
            checks.integer(name, getattr(self, name), 1)
        if not 0.0 <= self.dropout < 1.0:  # also refuses NaN
            raise UnmaskError(f"dropout must be in [0, 1), got {self.dropout}")
        if not 0 <= self.prompt_len < self.seq_len:
            raise UnmaskError(f"prompt_len must be in [0, seq_len), got {self.prompt_len}")
        if self.d_model % self.n_heads:
            raise UnmaskError(f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}")
        if self.rope and (self.d_model // self.n_heads) % 2:
            raise UnmaskError(f"rope needs an even head width, got d_model/n_heads = {self.d_model // self.n_heads}")


def rope_tables(seq_len: int, head_dim: int, base: float = 10_000.0) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin ``(L, head_dim/2)`` of the rotary angles pos · base^(−2i/head_dim) (Su et al. 2021)."""
    inv_freq = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)  # (Dh/2,)
    angles = torch.arange(seq_len, dtype=torch.float64)[:, None] * inv_freq  # (L, Dh/2)
    return angles.cos().float(), angles.sin().float()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate the two halves of each head ``(B, H, L, Dh)`` by the position's angles."""
    x1, x2 = x.chunk(2, dim=-1)  # (B, H, L, Dh/2) each
    cos, sin = cos.to(x.dtype), sin.to(x.dtype)
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, dropout_p: float = 0.0) -> torch.Tensor:
    """Softmax attention over ``(B, H, L, Dh)`` queries, keys and values, no mask (Vaswani et al. 2017).

    In bfloat16 on a CPU (training under autocast) it is written out as two matmuls around an fp32
    softmax: PyTorch's fused CPU kernel is slow in bfloat16 (its backward took 7× the fp32 one on this
    repository's AMX machine, `benchmarks/sudoku/train_speed.py`), while the matmuls run on the bfloat16 units.
    Every other case, fp32 inference included, is ``F.scaled_dot_product_attention`` unchanged.
    """
    if q.dtype != torch.bfloat16 or q.device.type != "cpu":
        return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p)
    scores = (q @ k.transpose(-1, -2)) * q.shape[-1] ** -0.5  # (B, H, L, L)
    weights = torch.softmax(scores.float(), dim=-1)  # (B, H, L, L) in fp32
    if dropout_p:
        weights = F.dropout(weights, dropout_p)
    return weights.to(v.dtype) @ v  # (B, H, L, Dh)


class Block(nn.Module):
    """Pre-norm bidirectional self-attention + MLP."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.n_heads = cfg.n_heads
        self.dropout = cfg.dropout
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.mlp = nn.Sequential(nn.Linear(cfg.d_model, cfg.d_ff), nn.GELU(), nn.Linear(cfg.d_ff, cfg.d_model))
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor] | None = None) -> torch.Tensor:
        """``x`` (B, L, D); ``rope``: cos and sin tables (L, Dh/2), or None for no rotation."""
        b, n, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, n, 3, self.n_heads, d // self.n_heads).transpose(1, 3).unbind(2)  # (B, H, L, Dh)
        if rope is not None:
            q, k = apply_rope(q, *rope), apply_rope(k, *rope)
        y = attention(q, k, v, dropout_p=self.dropout if self.training else 0.0)  # (B, H, L, Dh)
        x = x + self.drop(self.proj(y.transpose(1, 2).reshape(b, n, d)))
        return x + self.drop(self.mlp(self.ln2(x)))


class TransformerDenoiser(nn.Module):
    """Bidirectional transformer meeting the :class:`~unmask.denoiser.Denoiser` interface."""

    def __init__(self, cfg: ModelConfig, position_ids: torch.Tensor | None = None) -> None:
        """``position_ids``: ``(L, F)`` feature ids per position, one column per ``cfg.position_features``."""
        super().__init__()
        self.cfg = cfg
        self.vocab_size = cfg.vocab_size
        self.mask_id = cfg.mask_id
        n_in = max(cfg.vocab_size, cfg.mask_id + 1)
        self.tok = nn.Embedding(n_in, cfg.d_model)
        self.pos = nn.Parameter(torch.zeros(cfg.seq_len, cfg.d_model))
        self.feats = nn.ModuleList(nn.Embedding(k, cfg.d_model) for k in cfg.position_features)
        if position_ids is None:
            position_ids = torch.zeros(cfg.seq_len, len(cfg.position_features), dtype=torch.long)
        if tuple(position_ids.shape) != (cfg.seq_len, len(cfg.position_features)):
            raise UnmaskError(f"position_ids must be ({cfg.seq_len}, {len(cfg.position_features)}), "
                              f"got {tuple(position_ids.shape)}")
        self.register_buffer("position_ids", position_ids.long().clone())
        cos, sin = rope_tables(cfg.seq_len, cfg.d_model // cfg.n_heads) if cfg.rope else (torch.empty(0), torch.empty(0))
        self.register_buffer("rope_cos", cos, persistent=False)  # (L, Dh/2), recomputed, never saved
        self.register_buffer("rope_sin", sin, persistent=False)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size)
        self.apply(self._init)
        nn.init.normal_(self.pos, std=0.02)

    @staticmethod
    def _init(m: nn.Module) -> None:
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)
            if getattr(m, "bias", None) is not None:
                nn.init.zeros_(m.bias)

    def forward(self, tokens: torch.Tensor) -> DenoiserOutput:
        """Token ids ``(B, L)`` → logits ``(B, L, V)`` and hidden states ``(B, L, D)``.

        Runs on the model's device and answers on the caller's (no copy when they are the same, as in
        the decode loop, which keeps its tensors on :attr:`device`).
        """
        if tokens.shape[1] != self.cfg.seq_len:
            raise UnmaskError(f"model expects sequences of length {self.cfg.seq_len}, got {tokens.shape[1]}")
        caller = tokens.device
        x = self.tok(tokens.to(self.pos.device)) + self.pos  # (B, L, D)
        for k, emb in enumerate(self.feats):
            x = x + emb(self.position_ids[:, k])
        rope = (self.rope_cos, self.rope_sin) if self.cfg.rope else None
        for block in self.blocks:
            x = block(x, rope)
        h = self.ln_f(x)  # (B, L, D)
        return DenoiserOutput(self.head(h).to(caller), h.to(caller))

    @property
    def device(self) -> torch.device:
        """Where the weights are (and where the decode loop should keep its tensors)."""
        return self.pos.device

    def num_parameters(self) -> int:
        """Trainable parameter count."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)


def resolve_device(name: str | torch.device) -> torch.device:
    """The torch device called ``name``: "cpu", "cuda" or "cuda:N".

    Anything else (mps, xla, meta, ...) and a CUDA device this machine lacks are refused in one line
    naming the value (UnmaskError), before a trainer makes its run directory or a model loads. Under
    ``torchrun`` a bare "cuda" means this process's GPU, ``cuda:$LOCAL_RANK``, so N processes on one
    machine use N GPUs rather than all sharing the first.
    """
    name = str(name)
    known = re.fullmatch(r"cpu|cuda(?::(\d+))?", name)
    if known is None:
        try:
            torch.device(name)
        except RuntimeError:
            raise UnmaskError(f"unknown device {name!r}: unmask runs on cpu, cuda or cuda:N") from None
        raise UnmaskError(f"device {name!r} is not supported: unmask runs on cpu, cuda or cuda:N")
    if name == "cpu":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise UnmaskError(f"device {name!r}: no CUDA device is available here")
    count = torch.cuda.device_count()
    if known.group(1) is not None and int(known.group(1)) >= count:
        raise UnmaskError(f"device {name!r}: this machine has {count} CUDA device{'s' * (count != 1)} (cuda:0..cuda:{count - 1})")
    device = torch.device(name)
    if device.index is None and "LOCAL_RANK" in os.environ:
        device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
        torch.cuda.set_device(device)
    return device


def check_warm_start(cfg: ModelConfig, source: ModelConfig) -> None:
    """Refuse (UnmaskError) a model of shape ``cfg`` that :func:`warm_start` cannot start from ``source``."""
    mine, theirs = asdict(cfg), asdict(source)
    n_new, n_old = mine.pop("n_layers"), theirs.pop("n_layers")
    differ = sorted(k for k in mine if k not in ("dropout", "task") and mine[k] != theirs[k])
    if differ:
        raise UnmaskError(f"cannot start from a model of another shape ({', '.join(differ)} differ)")
    if n_new % n_old:
        raise UnmaskError(f"cannot stack {n_old} layers into {n_new}: n_layers must be a multiple of the source's")


def warm_start(model: TransformerDenoiser, source: TransformerDenoiser) -> None:
    """Start ``model`` from ``source``'s weights, in place.

    The shapes must match, except that ``model`` may be deeper by a whole factor: its block k then
    starts as ``source``'s block k mod n, the progressive stacking of Gong et al. (2019, "Efficient
    training of BERT by progressively stacking"). Dropout and the task name may differ; the layout of
    position features (``position_ids``) may not.
    """
    check_warm_start(model.cfg, source.cfg)
    theirs = source.state_dict()
    if "position_ids" in theirs and not torch.equal(theirs["position_ids"], model.state_dict()["position_ids"]):
        raise UnmaskError("cannot start from a model whose position features are laid out differently")
    n_new, n_old = model.cfg.n_layers, source.cfg.n_layers
    state = {}
    for key, value in theirs.items():
        if not key.startswith("blocks."):
            state[key] = value
            continue
        _, k, rest = key.split(".", 2)
        for copy in range(int(k), n_new, n_old):
            state[f"blocks.{copy}.{rest}"] = value
    model.load_state_dict(state)  # strict: every tensor of ``model`` is set


def save_model(model: TransformerDenoiser, directory: str | os.PathLike, extra: dict | None = None) -> None:
    """Write ``model.safetensors`` and ``config.json`` (with ``extra`` metadata) atomically."""
    artifacts.save(directory, artifacts.MODEL, model.state_dict(), model.cfg, extra)


def read_config(directory: str | os.PathLike) -> dict:
    """The metadata in ``config.json``; UnmaskError if missing or unreadable."""
    return artifacts.read_meta(directory, artifacts.MODEL)


def load_model(directory: str | os.PathLike, task: str | None = None) -> TransformerDenoiser:
    """Load a saved model, refusing a config/weights mismatch, a wrong task or a corrupt file."""
    meta = read_config(directory)
    cfg = artifacts.build_config(ModelConfig, meta["config"], directory)
    if task is not None and cfg.task != task:
        raise UnmaskError(f"{directory}: model was trained for task {cfg.task!r}, not {task!r}")
    state = artifacts.load_tensors(directory, artifacts.MODEL)
    try:
        model = TransformerDenoiser(cfg, state.get("position_ids"))
    except UnmaskError as e:
        raise UnmaskError(f"{Path(directory) / WEIGHTS_FILE}: weights do not match the config ({e})") from None
    artifacts.load_state(model, state, Path(directory) / WEIGHTS_FILE)
    return model.eval()
