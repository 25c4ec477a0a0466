"""The protein task: sequences of 50–100 residues generated from nothing but their length.

Layout of a sequence: ``[r_1 … r_n EOS … EOS]`` over ``max_len`` positions — the n residues (ids
0–19, :data:`~unmask.tasks.proteins.fasta.AMINO_ACIDS` order) are generated; the EOS positions
past the length are always given, so the model knows the length and never writes a residue
outside it (nor an EOS inside it: EOS is an input-only token, not among the 20 predicted ones).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from unmask.denoiser import Denoiser
from unmask.errors import UnmaskError
from unmask.model import ModelConfig, TransformerDenoiser
from unmask.tasks.base import MODELS, Board
from unmask.tasks.proteins.fasta import AMINO_ACIDS, RESIDUE_INDEX, Record, read_fasta

NAME = "proteins"
VOCAB_SIZE = len(AMINO_ACIDS)  # the model predicts the 20 residues only
EOS_ID = VOCAB_SIZE  # input-only: the positions past a sequence's end
MASK_ID = VOCAB_SIZE + 1  # input-only: a residue still to generate
MAX_LEN = 100  # positions of the shipped model (the longest sequence it writes)
DEFAULT_MODEL = MODELS / "protein"  # the shipped protein MDM
DEFAULT_REFERENCE = DEFAULT_MODEL / "reference.fasta"  # shipped: 500 held-out UniProt proteins (lengths and frequencies)
VAL_MASK_RATES = (0.15, 0.5, 0.85)  # validation masks a fixed share of residues at each of these rates


def default_model_config(max_len: int = MAX_LEN) -> ModelConfig:
    """Shape of the protein MDM (~1.2M parameters, learned absolute positions)."""
    return ModelConfig(vocab_size=VOCAB_SIZE, mask_id=MASK_ID, seq_len=max_len, d_model=128, n_layers=6, n_heads=4,
                       d_ff=512, task=NAME)


def encode_residues(sequences: list[str], max_len: int) -> torch.Tensor:
    """``(N, max_len)`` ids: each sequence's residues, then EOS to the end."""
    out = torch.full((len(sequences), max_len), EOS_ID, dtype=torch.long)
    for k, seq in enumerate(sequences):
        if len(seq) > max_len:
            raise UnmaskError(f"sequence {k + 1} has {len(seq)} residues; the model holds {max_len}")
        out[k, : len(seq)] = torch.tensor([RESIDUE_INDEX[c] for c in seq], dtype=torch.long)
    return out


def decode_residues(tokens: torch.Tensor) -> list[str]:
    """The residue strings of ``(N, L)`` ids (up to the first EOS; a mask left in shows as ``X``)."""
    out = []
    for row in tokens.tolist():
        end = row.index(EOS_ID) if EOS_ID in row else len(row)
        out.append("".join(AMINO_ACIDS[i] if i < VOCAB_SIZE else "X" for i in row[:end]))
    return out


def length_prompts(lengths: list[int], max_len: int) -> torch.Tensor:
    """``(N, max_len)`` start states: ``lengths[k]`` masked residues, then EOS."""
    lengths_t = torch.tensor(lengths, dtype=torch.long)
    if len(lengths) and not ((lengths_t >= 1) & (lengths_t <= max_len)).all():
        raise UnmaskError(f"lengths must be in 1..{max_len}, got {min(lengths)}..{max(lengths)}")
    pos = torch.arange(max_len)
    return torch.where(pos[None, :] < lengths_t[:, None], MASK_ID, EOS_ID)


def draw_lengths(n: int, bounds: tuple[int, int], reference: list | None, seed: int) -> list[int]:
    """``n`` lengths in ``bounds``: drawn from the reference set's lengths there, else uniformly."""
    import random

    rng = random.Random(seed)
    if reference is None:
        return [rng.randint(*bounds) for _ in range(n)]
    pool = [len(r.sequence) for r in reference if bounds[0] <= len(r.sequence) <= bounds[1]]
    if not pool:
        raise UnmaskError(f"no reference sequence has a length in {bounds[0]}:{bounds[1]}")
    return [rng.choice(pool) for _ in range(n)]


def refuse_long(path, records: list, max_len: int) -> list:
    """``records`` (anything with ``name`` and ``sequence``), or one line naming the first longer than ``max_len``."""
    long = next((r for r in records if len(r.sequence) > max_len), None)
    if long is not None:
        raise UnmaskError(f"{path}: {long.name[:40]!r} has {len(long.sequence)} residues; the model holds {max_len}")
    return records


def parse_residue(text: str, tokens: torch.Tensor) -> int:
    """The 0-based position of the masked residue a user numbers ``text`` (1-based) in ``tokens`` ``(L,)``."""
    n = int((tokens != EOS_ID).sum())
    try:
        k = int(text)
    except ValueError:
        raise UnmaskError(f"position {text!r}: expected a residue number 1..{n}") from None
    if not 1 <= k <= n:
        raise UnmaskError(f"position {k}: the sequence has residues 1..{n}")
    if tokens[k - 1] != MASK_ID:
        raise UnmaskError(f"residue {k} is given; choose a masked one")
    return k - 1


def check_protein_model(denoiser: Denoiser) -> None:
    """Refuse a model that does not predict the 20 residues with the protein mask id."""
    if denoiser.vocab_size != VOCAB_SIZE or denoiser.mask_id != MASK_ID:
        raise UnmaskError(f"a protein model predicts the {VOCAB_SIZE} residues with mask id {MASK_ID}; this one has "
                          f"{denoiser.vocab_size} tokens and mask id {denoiser.mask_id} (a pretrained one loads as hf:DIR)")


@dataclass(frozen=True)
class ProteinTask:
    """Proteins as a :class:`~unmask.tasks.base.Task`: examples are FASTA records; a decode starts
    from the record's length alone (everything masked) and is "right" if it recovers the sequence."""

    max_len: int = MAX_LEN  # positions of the model
    name: str = NAME
    unit: str = "protein"
    default_model = DEFAULT_MODEL
    outcome_reward = False  # `score` asks for a whole protein recovered from its length alone: never

    @classmethod
    def for_model(cls, cfg: ModelConfig) -> ProteinTask:
        return cls(cfg.seq_len)

    def read(self, path) -> list[Record]:
        return refuse_long(path, read_fasta(path), self.max_len)

    def check_model(self, denoiser: Denoiser) -> None:
        check_protein_model(denoiser)

    def encode(self, records: list[Record]) -> torch.Tensor:
        return length_prompts([len(r.sequence) for r in records], self.max_len)

    def targets(self, records: list[Record]) -> torch.Tensor:
        return encode_residues([r.sequence for r in records], self.max_len)

    def score(self, tokens: torch.Tensor, records: list[Record]) -> torch.Tensor:
        return torch.tensor([s == r.sequence for s, r in zip(decode_residues(tokens), records)])

    def show(self, tokens: torch.Tensor, records: list[Record], k: int) -> list[dict]:
        return [{"name": r.name, "output": s} for r, s in zip(records[:k], decode_residues(tokens[:k]))]

    def related_pairs(self) -> None:
        return None  # contacts are not known from sequence; MI against separation shows what the model found

    def board(self, tokens: torch.Tensor) -> Board:
        cols = 10
        rows = -(-self.max_len // cols)
        labels = [AMINO_ACIDS[i] if i < VOCAB_SIZE else "" for i in tokens.tolist()]
        pos = torch.where(tokens == EOS_ID, -1, torch.arange(self.max_len))
        return Board((rows, cols), torch.cat([pos, torch.full((rows * cols - self.max_len,), -1)]),
                     labels + [""] * (rows * cols - self.max_len))

    def parse_position(self, text: str, tokens: torch.Tensor) -> int:
        return parse_residue(text, tokens)


@dataclass
class ProteinTraining:
    """Training: the residues of each sequence under random masks; EOS positions never masked."""

    records: list[Record]  # training sequences
    cfg: ModelConfig  # model shape (fixes max_len)
    val: list[Record] = field(default_factory=list)  # scored by masked-residue perplexity at each validation
    name: str = NAME

    def __post_init__(self) -> None:
        self._tokens = encode_residues([r.sequence for r in self.records], self.cfg.seq_len)  # (N, L)
        self._val = encode_residues([r.sequence for r in self.val], self.cfg.seq_len)  # (M, L)

    def model(self, cfg: ModelConfig | None) -> TransformerDenoiser:
        return TransformerDenoiser(cfg or self.cfg)

    def sample(self, gen: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        idx = torch.randint(len(self._tokens), (n,), generator=gen)
        x0 = self._tokens[idx]
        return x0, x0 != EOS_ID

    def validate(self, model: TransformerDenoiser) -> dict[str, float]:
        """Mean NLL (nats) and perplexity of masked residues at fixed masks (:data:`VAL_MASK_RATES`)."""
        if not len(self._val):
            return {}
        return {k: round(v, 4) for k, v in masked_nll(model, self._val).items()}


@torch.no_grad()
def masked_nll(model: Denoiser, x0: torch.Tensor, rates=VAL_MASK_RATES, seed: int = 0, batch: int = 256) -> dict[str, float]:
    """Mean NLL per masked residue of ``x0`` ``(N, L)`` at each mask rate (fixed seeded masks), their
    mean and its perplexity: ``{"val_nll_15": …, "val_nll": …, "val_ppl": …}``."""
    gen = torch.Generator().manual_seed(seed)
    out = {}
    for rate in rates:
        total, count = 0.0, 0
        for lo in range(0, len(x0), batch):
            x = x0[lo : lo + batch]
            mask = (torch.rand(x.shape, generator=gen) < rate) & (x != EOS_ID)  # (b, L)
            logits = model(torch.where(mask, MASK_ID, x)).logits.float()  # (b, L, V)
            nll = F.cross_entropy(logits[mask], x[mask], reduction="sum")
            total, count = total + float(nll), count + int(mask.sum())
        out[f"val_nll_{round(100 * rate)}"] = total / max(count, 1)
    out["val_nll"] = sum(out.values()) / len(rates)
    out["val_ppl"] = float(torch.tensor(out["val_nll"]).exp())
    return out
