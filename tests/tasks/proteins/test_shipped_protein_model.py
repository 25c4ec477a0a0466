"""The shipped protein MDM on the shipped reference proteins (held out from its training clusters)."""

from __future__ import annotations

from unmask.model import load_model
from unmask.tasks.proteins.fasta import read_fasta
from unmask.tasks.proteins.metrics import residue_counts
from unmask.tasks.proteins.task import DEFAULT_MODEL, DEFAULT_REFERENCE, encode_residues, masked_nll


def test_the_model_beats_residue_frequencies_on_held_out_proteins():
    # Thresholds a broken or untrained model cannot pass: random weights give ≈ ln 20 = 3.00 nats, a
    # model that learned only residue frequencies gives the unigram entropy (2.90 in-sample).
    ref = read_fasta(DEFAULT_REFERENCE)
    model = load_model(DEFAULT_MODEL, task="proteins")
    nll = masked_nll(model, encode_residues([r.sequence for r in ref[:200]], model.cfg.seq_len))
    counts = residue_counts([r.sequence for r in ref])
    p = counts / counts.sum()
    unigram = float(-(p * p.log()).sum())
    assert nll["val_nll"] <= unigram - 0.04  # measured 2.827 vs 2.904 nats (perplexity 16.9 vs 18.3)
    assert nll["val_nll_15"] < nll["val_nll_85"]  # more context, better predictions: measured 2.806 < 2.846
