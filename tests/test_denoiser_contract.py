"""One contract every Denoiser meets: our transformer, the exact oracle, a Hugging Face masked LM.

Each test names the planted bug it is there to catch.
"""

from __future__ import annotations

import pytest
import torch

from unmask.decode import decode, parse_policy
from unmask.denoiser import Denoiser, DenoiserOutput

POLICIES = ["sequential", "topk:k=3", "threshold:tau=0.9", "top_prob:steps=3"]
HF_MASK_ID = 4  # inside the vocabulary, as in BERT-style tokenizers


def _hf_denoiser():
    transformers = pytest.importorskip("transformers")
    from unmask.adapters.hf import HFDenoiser

    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=12, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                  intermediate_size=32, max_position_embeddings=32)
    model = transformers.BertForMaskedLM(cfg)
    with torch.no_grad():  # make the mask token the model's favourite: decoding must still never pick it
        model.cls.predictions.decoder.bias[HF_MASK_ID] += 1e3
    return HFDenoiser(model, mask_id=HF_MASK_ID)


@pytest.fixture(params=["transformer", "oracle", "hf"])
def case(request, make_model, make_joint):
    """``(denoiser, sequence length)`` for each implementation."""
    if request.param == "transformer":
        return make_model(seq_len=10, vocab=4, seed=0), 10
    if request.param == "oracle":
        return make_joint(seq_len=4, vocab=3, seed=0), 4
    return _hf_denoiser(), 9


def _batch(d, n: int, b: int = 5, seed: int = 0) -> torch.Tensor:
    """Random ids below the mask (never the mask id itself), some masked, the last row fully masked."""
    g = torch.Generator().manual_seed(seed)
    choices = torch.tensor([v for v in range(d.vocab_size) if v != d.mask_id])
    tokens = choices[torch.randint(len(choices), (b, n), generator=g)]
    mask = torch.rand(b, n, generator=g) < torch.linspace(0.2, 1, b)[:, None]
    mask[-1] = True
    return torch.where(mask, torch.full_like(tokens, d.mask_id), tokens).to(d.device)


def test_meets_the_protocol(case):
    # Bug caught: an implementation losing vocab_size / mask_id / device (e.g. an adapter without device).
    d, _ = case
    assert isinstance(d, Denoiser)
    assert isinstance(d.device, torch.device)
    assert isinstance(d.vocab_size, int) and isinstance(d.mask_id, int)


def test_output_shapes_dtypes_and_device(case):
    # Bugs caught: logits over the input vocabulary (mask included) instead of V; hidden states of another
    # length; integer or half logits; outputs left on another device than d.device.
    d, n = case
    tokens = _batch(d, n)
    with torch.no_grad():
        out = d(tokens)
    assert isinstance(out, DenoiserOutput)
    b = len(tokens)
    assert out.logits.shape == (b, n, d.vocab_size)
    assert out.logits.is_floating_point() and out.hidden.is_floating_point()
    assert out.hidden.dim() == 3 and out.hidden.shape[:2] == (b, n) and out.hidden.shape[2] >= 1
    assert out.logits.device == d.device and out.hidden.device == d.device
    assert torch.isfinite(out.logits).all()


def test_each_row_depends_on_itself_only(case):
    # Bug caught: something mixing rows of a batch (an attention mask built across the batch, batch
    # statistics, padding), which would make results depend on how sequences are batched.
    d, n = case
    tokens = _batch(d, n, b=4, seed=1)
    with torch.no_grad():
        whole = d(tokens)
        for i in range(len(tokens)):
            alone = d(tokens[i : i + 1])
            torch.testing.assert_close(whole.logits[i : i + 1].float(), alone.logits.float(), atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(whole.hidden[i : i + 1].float(), alone.hidden.float(), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("spec", POLICIES)
def test_decoding_terminates_and_keeps_givens(case, spec):
    # Bugs caught: a loop that never ends on some implementation; a given token overwritten; the mask id
    # chosen as a value when it lies inside the vocabulary (the HF case, where the mask is made the
    # model's favourite token above).
    d, n = case
    tokens = _batch(d, n, seed=2)
    res = decode(d, tokens, parse_policy(spec))
    given = tokens != d.mask_id
    assert not (res.tokens == d.mask_id).any()
    assert torch.equal(res.tokens[given], tokens[given])
    assert ((res.tokens >= 0) & (res.tokens < d.vocab_size)).all()
    running = (~given).any(1)
    assert (res.nfe[running] >= 1).all() and (res.nfe[~running] == 0).all() and (res.nfe <= n).all()
    assert torch.equal(res.reveal_step == -1, given)


def test_hf_mask_id_inside_the_vocabulary_is_never_chosen():
    # Bug caught: the decode loop no longer excluding the mask logit when mask_id < vocab_size.
    d = _hf_denoiser()
    assert d.mask_id < d.vocab_size
    tokens = torch.full((3, 8), d.mask_id)
    with torch.no_grad():
        assert (d(tokens).logits.argmax(-1) == d.mask_id).all()  # the raw model would pick the mask
    for spec in POLICIES:
        res = decode(d, tokens, parse_policy(spec))
        assert not (res.tokens == d.mask_id).any(), spec
