"""Pseudo-log-likelihood of filled positions: how likely a model finds each fill, given all the rest.

For a sequence x with filled positions F, PLL = (1/|F|) Σ_{i∈F} log p(x_i | x with position i masked),
the masked-LM score of Salazar et al. (2020, "Masked Language Model Scoring", arXiv:1910.14659)
restricted to the positions a decode wrote, under the model's whole vocabulary (the mask token
aside). It needs no target: a writer's own PLL says how sure it stays of what it wrote; a second
model's (a judge) says whether an independent model agrees. Every (sequence, position) query is one
row of a batch; a batch holds rows of one length.
"""

from __future__ import annotations

import torch

from unmask.denoiser import never_mask
from unmask.errors import UnmaskError
from unmask.tasks.seq.codec import Codec
from unmask.tasks.seq.layout import Row


@torch.no_grad()
def pseudo_log_likelihood(denoiser, tokens: list[torch.Tensor], fills: list[torch.Tensor], batch_size: int = 64) -> torch.Tensor:
    """``(N,)`` float64: the mean log-probability of each sequence ``tokens[k]`` ``(L_k,)`` at its positions
    ``fills[k]`` ``(L_k,)`` bool, each masked in turn (NaN for a sequence with none)."""
    out = torch.full((len(tokens),), float("nan"), dtype=torch.float64)
    for length in sorted({len(t) for t in tokens}):
        index = torch.tensor([k for k, t in enumerate(tokens) if len(t) == length])  # (B,)
        seqs = torch.stack([tokens[k] for k in index.tolist()]).cpu()  # (B, L)
        fill = torch.stack([fills[k] for k in index.tolist()]).cpu()  # (B, L)
        queries = fill.nonzero()  # (Q, 2) (row, position) pairs
        total = torch.zeros(len(index), dtype=torch.float64)  # (B,)
        for lo in range(0, len(queries), batch_size):
            row, pos = queries[lo : lo + batch_size].unbind(1)  # (b,), (b,)
            masked = seqs[row].clone()  # (b, L)
            masked[torch.arange(len(row)), pos] = denoiser.mask_id
            logits = denoiser(masked.to(denoiser.device)).logits  # (b, L, V)
            at = torch.arange(len(row), device=logits.device)
            logp = never_mask(logits[at, pos.to(logits.device)], denoiser.mask_id).double().log_softmax(-1)  # (b, V)
            total.index_add_(0, row, logp[at, seqs[row, pos].to(logits.device)].cpu())
        out[index] = total / fill.sum(1).clamp_min(1)
        out[index[fill.sum(1) == 0]] = float("nan")
    return out


def transcode(rows: list[Row], tokens: list[torch.Tensor], writer: Codec, judge: Codec) -> tuple[list, list]:
    """The decoded sequences ``tokens`` of the writer (laid out as ``rows``) in the judge's ids, with the
    judge's special tokens around them: ``(tokens, fills)``, one ``(L'_k,)`` pair per sequence. Tokens
    cross by their text (an alphabet's characters, or the tokenizer's token strings)."""
    out_tokens, out_fills = [], []
    for row, t in zip(rows, tokens):
        body = t[row.offset : len(t) - len(writer.suffix)].tolist()
        ids = judge.from_symbols(writer.symbols(body), "--judge")
        if len(ids) != len(body):
            raise UnmaskError("--judge: the judge reads the sequence as another number of tokens")
        new = torch.tensor([*judge.prefix, *ids, *judge.suffix], dtype=torch.long)
        fill = torch.zeros(len(new), dtype=torch.bool)
        fill[len(judge.prefix) + row.fill.nonzero().squeeze(1) - row.offset] = True
        out_tokens.append(new)
        out_fills.append(fill)
    return out_tokens, out_fills
