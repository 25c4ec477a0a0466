"""The Hugging Face adapter end to end on a tiny randomly initialised model built here (no downloads)."""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")

from unmask.adapters import load_denoiser  # noqa: E402
from unmask.adapters.hf import HFDenoiser  # noqa: E402
from unmask.decode import decode, parse_policy  # noqa: E402
from unmask.decode.semi_ar import SemiAR  # noqa: E402
from unmask.errors import UnmaskError  # noqa: E402
from unmask.tasks.maths.gsm8k import gsm8k_prompt_ids  # noqa: E402
from unmask.tasks.seq.buckets import buckets  # noqa: E402
from unmask.tasks.seq.layout import prompt_row  # noqa: E402


def test_adapter_meets_the_interface(hf_model_dir):
    den, tok = HFDenoiser.from_pretrained(hf_model_dir)
    assert den.mask_id == tok.mask_token_id and den.vocab_size == len(tok)
    assert den.device == torch.device("cpu")  # a torch.device, where the decode loop keeps its tensors
    ids = gsm8k_prompt_ids(["Ann has 3 apples. How many?", "2+2?", "Bob has 4 apples. How many?"], tok, chat=False)
    groups = buckets([prompt_row(x, den.mask_id, 16) for x in ids])
    assert sorted(k for g in groups for k in g.index.tolist()) == [0, 1, 2]  # every prompt, once
    for g in groups:  # one length per group: nothing is padded
        assert all(len(ids[k]) == g.start for k in g.index.tolist())
        assert g.tokens.shape == (len(g.index), g.start + 16)
        assert (g.tokens[:, g.start :] == den.mask_id).all() and (g.tokens[:, : g.start] != den.mask_id).all()
    g = max(groups, key=lambda g: len(g.index))
    out = den(g.tokens)
    assert out.logits.shape == (*g.tokens.shape, len(tok)) and out.hidden.shape[-1] == 16
    res = decode(den, g.tokens, SemiAR(parse_policy("top_prob:steps=2"), block=8, start=g.start))
    assert (res.nfe == 4).all() and not (res.tokens == den.mask_id).any()
    assert torch.equal(res.tokens[:, : g.start], g.tokens[:, : g.start])


def test_unloadable_directory_is_one_error(tmp_path):
    with pytest.raises(UnmaskError, match="cannot load"):
        HFDenoiser.from_pretrained(tmp_path)


def test_shifted_logits(hf_model_dir):
    plain, _ = HFDenoiser.from_pretrained(hf_model_dir)
    shifted, _ = HFDenoiser.from_pretrained(hf_model_dir, shift_logits=True)
    x = torch.randint(5, 20, (1, 10))
    assert torch.equal(shifted(x).logits[:, 1:], plain(x).logits[:, :-1])


def test_refuses_non_local_paths():
    with pytest.raises(UnmaskError, match="never downloads"):
        HFDenoiser.from_pretrained("GSAI-ML/LLaDA-8B-Instruct")


def test_load_denoiser_reads_an_hf_directory(hf_model_dir):
    loaded = load_denoiser(f"hf:{hf_model_dir}")
    assert isinstance(loaded.denoiser, HFDenoiser) and loaded.is_hf and loaded.directory == hf_model_dir
    x = torch.randint(5, 20, (1, 10))
    plain, _ = HFDenoiser.from_pretrained(hf_model_dir)
    assert torch.equal(loaded.denoiser(x).logits, plain(x).logits)
