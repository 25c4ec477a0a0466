"""ESM-2 and ESM-C through transformers' own classes (``EsmForMaskedLM``, ``EsmcForMaskedLM``) behind the protein
task, on tiny random configs built here (no downloads), and EvolutionaryScale's ESM-C weights file (``esmc:FILE``)
read into ``EsmcForMaskedLM`` without the ``esm`` package."""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")
if not hasattr(transformers, "EsmcForMaskedLM"):
    pytest.skip("ESM-C needs transformers>=5.16", allow_module_level=True)

from unmask.adapters import load_denoiser  # noqa: E402
from unmask.adapters.esmc import convert_esmc_state, esmc_shape  # noqa: E402
from unmask.decode import TokenRule, parse_policy  # noqa: E402
from unmask.errors import UnmaskError  # noqa: E402
from unmask.eval import decode_all  # noqa: E402
from unmask.tasks import task_denoiser  # noqa: E402
from unmask.tasks.proteins.fasta import AMINO_ACIDS  # noqa: E402
from unmask.tasks.proteins.task import EOS_ID, MASK_ID, decode_residues, encode_residues, length_prompts  # noqa: E402

# The two vocabularies written out by hand (not read from the tokenizers under test): index = model token id.
ESM2_VOCAB = ["<cls>", "<pad>", "<eos>", "<unk>", *"LAGVSERTIDPKQNFYMHWCXBUZO.-", "<null_1>", "<mask>"]  # 33
ESMC_VOCAB = ["<cls>", "<pad>", "<eos>", "<unk>", *"LAGVSERTIDPKQNFYMHWCXBUZO.-|", "<mask>"]  # 33 of 64 rows
SPECIALS = (0, 2, 1, 32)  # (bos = <cls>, eos, pad, mask), the same in both


def ids(vocab: list[str], seqs: list[str]) -> torch.Tensor:
    """``<cls> residues <eos> <pad>…`` in a model's ids, from the hand-written vocabulary."""
    width = max(map(len, seqs)) + 2
    rows = [[0, *(vocab.index(c) if c != "?" else 32 for c in s), 2] for s in seqs]
    return torch.tensor([r + [1] * (width - len(r)) for r in rows])


@pytest.fixture(params=["esm2", "esmc"])
def plm(request):
    """``(family, folder, vocabulary)``: a tiny random ESM-2 or ESM-C with its tokenizer (``tests/fixtures``)."""
    folder = request.getfixturevalue(f"{request.param}_dir")
    return request.param, folder, ESM2_VOCAB if request.param == "esm2" else ESMC_VOCAB


def test_each_residue_maps_to_its_own_model_token(plm):
    family, d, vocab = plm
    loaded = load_denoiser(f"hf:{d}", task="proteins")
    assert loaded.kind == "hf" and type(loaded.denoiser.model).__name__ == {"esm2": "EsmForMaskedLM",
                                                                            "esmc": "EsmcForMaskedLM"}[family]
    den = task_denoiser("proteins", loaded)
    assert den.vocab_size == 20 and den.mask_id == MASK_ID and den.cfg.seq_len == 158  # 160 positions less <cls>, <eos>
    assert [vocab[i] for i in den.vocab.predict] == list(AMINO_ACIDS)
    assert (den.vocab.bos, den.vocab.eos, den.vocab.pad, den.vocab.mask) == SPECIALS
    # the mapped logits are the model's own, at the residue columns, one position after <cls>
    x = encode_residues(["MKV", "ACDEFG"], 8)
    x[1, 1] = MASK_ID
    ref_ids = ids(vocab, ["MKV", "A?DEFG"])
    with torch.no_grad():
        ref = loaded.denoiser.model(input_ids=ref_ids, attention_mask=(ref_ids != 1).long()).logits  # (2, 8, V_model)
    residues = [vocab.index(a) for a in AMINO_ACIDS]
    out = den(x)
    assert torch.allclose(out.logits[0, :3], ref[0, 1:4][:, residues], atol=1e-5)
    assert torch.allclose(out.logits[1, :6], ref[1, 1:7][:, residues], atol=1e-5)
    assert (out.logits[0, 3:] == 0).all()  # past the row's end


def test_decodes_residues_only_inside_the_length(plm):
    den = task_denoiser("proteins", load_denoiser(f"hf:{plm[1]}"))
    prompts = length_prompts([5, 12, 3], 12)
    run = decode_all(den, prompts, parse_policy("topk:k=3"), TokenRule(1.0), batch_size=2, seed=3)
    assert [len(s) for s in decode_residues(run.result.tokens)] == [5, 12, 3]
    assert ((run.result.tokens < 20) == (prompts == MASK_ID)).all()
    assert ((run.result.tokens == EOS_ID) == (prompts == EOS_ID)).all()
    assert run.result.nfe.tolist() == [2, 4, 1]


def evolutionaryscale_state(d_model: int = 128, n_layers: int = 2, ffn: int = 512, seed: int = 0) -> dict[str, torch.Tensor]:
    """A random ESM-C state dict in EvolutionaryScale's key layout (their ``esm`` package's ``ESMC.state_dict()``).

    ``ffn`` is their SwiGLU width, ``(8/3 · d_model + 255) // 256 · 256`` (512 for 128). Every tensor is random,
    LayerNorm gains around 1, so that swapping two same-shaped tensors changes the output.
    """
    d, f = d_model, ffn
    shapes = {"embed.weight": (64, d), "transformer.norm.weight": (d,), "sequence_head.0.weight": (d, d),
              "sequence_head.0.bias": (d,), "sequence_head.2.weight": (d,), "sequence_head.2.bias": (d,),
              "sequence_head.3.weight": (64, d), "sequence_head.3.bias": (64,)}
    for i in range(n_layers):
        b = f"transformer.blocks.{i}."
        shapes |= {b + "attn.layernorm_qkv.0.weight": (d,), b + "attn.layernorm_qkv.0.bias": (d,),
                   b + "attn.layernorm_qkv.1.weight": (3 * d, d), b + "attn.out_proj.weight": (d, d),
                   b + "attn.q_ln.weight": (d,), b + "attn.k_ln.weight": (d,), b + "ffn.0.weight": (d,),
                   b + "ffn.0.bias": (d,), b + "ffn.1.weight": (2 * f, d), b + "ffn.3.weight": (d, f)}
    g = torch.Generator().manual_seed(seed)
    gain = ("norm.weight", "layernorm_qkv.0.weight", "_ln.weight", "ffn.0.weight", "sequence_head.2.weight")
    return {k: torch.randn(s, generator=g) * 0.2 + (1.0 if k.endswith(gain) else 0.0) for k, s in shapes.items()}


# logits[row, position, residue] of the protein denoiser on ESMC_INPUT, for residues "ACDEF", with the weights of
# evolutionaryscale_state(): computed once with EvolutionaryScale's own model (esm 3.2.1.post1,
# ESMC(d_model=128, n_heads=2, n_layers=2).load_state_dict(...), forward(sequence_tokens, sequence_id=ids != pad)).
ESMC_INPUT = ["MKV", "A?DEFG"]  # "?": masked
ESMC_REFERENCE = torch.tensor([  # (2, 3, 5)
    [[-0.4883, 0.8047, 2.7888, -0.8477, 3.3931],
     [-0.8792, 1.4261, 0.5375, 2.7699, -2.4199],
     [-1.9041, 1.8022, 1.2775, -4.9789, 0.6253]],
    [[0.1308, 1.7782, 1.9549, -3.7256, 2.6311],
     [0.6752, -3.8440, 3.2841, -2.4049, -0.4388],
     [2.9751, 2.2190, -0.0249, -0.8498, -0.8311]],
])


def test_an_evolutionaryscale_file_gives_their_models_logits(tmp_path):
    state = evolutionaryscale_state()
    assert esmc_shape(state) == {"vocab_size": 64, "hidden_size": 128, "num_attention_heads": 2, "num_hidden_layers": 2,
                                 "intermediate_size": 512}
    torch.save(state, tmp_path / "esmc_tiny.pth")
    loaded = load_denoiser(f"esmc:{tmp_path / 'esmc_tiny.pth'}", task="proteins")
    assert loaded.kind == "esmc" and loaded.directory == tmp_path
    assert type(loaded.denoiser.model).__name__ == "EsmcForMaskedLM" and loaded.denoiser.mask_id == 32
    den = task_denoiser("proteins", loaded)
    assert [ESMC_VOCAB[i] for i in den.vocab.predict] == list(AMINO_ACIDS) and den.cfg.seq_len == 2046
    assert (den.vocab.bos, den.vocab.eos, den.vocab.pad, den.vocab.mask) == SPECIALS
    x = encode_residues([s.replace("?", "A") for s in ESMC_INPUT], 8)
    x[1, 1] = MASK_ID
    out = den(x).logits[:, :3, :5]  # (2, 3, 5)
    assert torch.allclose(out, ESMC_REFERENCE, atol=1e-3), (out - ESMC_REFERENCE).abs().max()
    run = decode_all(den, length_prompts([4, 7], 8), parse_policy("topk:k=2"), TokenRule(1.0), seed=1)
    assert [len(s) for s in decode_residues(run.result.tokens)] == [4, 7]


def test_the_packed_projections_split_in_order():
    state = evolutionaryscale_state(n_layers=1)
    new = convert_esmc_state(state)
    qkv, gate_up = state["transformer.blocks.0.attn.layernorm_qkv.1.weight"], state["transformer.blocks.0.ffn.1.weight"]
    attn, mlp = "esmc.layers.0.self_attn.", "esmc.layers.0.mlp."
    assert torch.equal(new[attn + "q_proj.weight"], qkv[:128]) and torch.equal(new[attn + "k_proj.weight"], qkv[128:256])
    assert torch.equal(new[attn + "v_proj.weight"], qkv[256:])
    assert torch.equal(new[mlp + "gate_proj.weight"], gate_up[:512]) and torch.equal(new[mlp + "up_proj.weight"], gate_up[512:])
    assert torch.equal(new["esmc.layers.0.input_layernorm.bias"], state["transformer.blocks.0.attn.layernorm_qkv.0.bias"])
    assert torch.equal(new["esmc.layers.0.post_attention_layernorm.bias"], state["transformer.blocks.0.ffn.0.bias"])
    assert len(new) == len(state) + 3  # q/k/v from one, gate/up from one


def test_bad_files_are_one_error(tmp_path):
    with pytest.raises(UnmaskError, match="no ESM-C weights file"):
        load_denoiser(f"esmc:{tmp_path / 'missing.pth'}")
    (tmp_path / "text.pth").write_text("not a tensor file")
    with pytest.raises(UnmaskError, match="not a torch state dict"):
        load_denoiser(f"esmc:{tmp_path / 'text.pth'}")
    torch.save({"something": torch.zeros(2)}, tmp_path / "other.pth")
    with pytest.raises(UnmaskError, match="not an ESM-C state dict"):
        load_denoiser(f"esmc:{tmp_path / 'other.pth'}")
    state = evolutionaryscale_state(n_layers=1) | {"transformer.blocks.0.attn.rotary.extra": torch.zeros(2)}
    torch.save(state, tmp_path / "extra.pth")
    with pytest.raises(UnmaskError, match="unexpected tensor transformer.blocks.0.attn.rotary.extra"):
        load_denoiser(f"esmc:{tmp_path / 'extra.pth'}")
    state = evolutionaryscale_state(n_layers=1)
    state["sequence_head.3.weight"] = state["sequence_head.3.weight"][:, :64]  # a head of another width
    torch.save(state, tmp_path / "shape.pth")
    with pytest.raises(UnmaskError, match="does not fit ESM-C"):
        load_denoiser(f"esmc:{tmp_path / 'shape.pth'}")
