"""Pretrained protein LMs behind the protein task: ESM-2 (Hugging Face) on a tiny random config built here, the
AntiBERTy / Sapiens imports where their wheels are installed, and the commands that use them. ESM-C (an ``hf:``
folder or EvolutionaryScale's ``esmc:`` file) is in ``tests/adapters/test_esmc.py``."""

from __future__ import annotations

import importlib.util
import json
import stat

import pytest
import torch

pytest.importorskip("transformers")

from tests.fixtures.protein_models import ESM_VOCAB, HEAVY  # noqa: E402
from unmask.adapters import load_denoiser  # noqa: E402
from unmask.decode import TokenRule, parse_policy  # noqa: E402
from unmask.errors import UnmaskError  # noqa: E402
from unmask.eval import decode_all  # noqa: E402
from unmask.tasks import task_denoiser  # noqa: E402
from unmask.tasks.proteins.antibody import AntibodyTask, read_antibodies  # noqa: E402
from unmask.tasks.proteins.fasta import AMINO_ACIDS, read_fasta  # noqa: E402
from unmask.tasks.proteins.plm import protein_vocab  # noqa: E402
from unmask.tasks.proteins.task import EOS_ID, MASK_ID, decode_residues, encode_residues, length_prompts  # noqa: E402


def test_esm2_maps_residues_through_its_tokenizer(esm2_dir):
    loaded = load_denoiser(f"hf:{esm2_dir}")
    den = task_denoiser("proteins", loaded)
    assert den.vocab_size == 20 and den.mask_id == MASK_ID and den.cfg.seq_len == 158
    assert [ESM_VOCAB[i] for i in den.vocab.predict] == list(AMINO_ACIDS)
    assert (den.vocab.bos, den.vocab.eos, den.vocab.pad, den.vocab.mask) == (0, 2, 1, 32)
    # the mapped logits are the model's own, at the residue columns, one position after <cls>
    x = encode_residues(["ACDW", "KKLLMM"], 12)
    x[0, 1] = MASK_ID
    out = den(x)
    ids = torch.tensor([[0, 5, 32, 13, 22, 2, 1, 1], [0, 15, 15, 4, 4, 20, 20, 2]])
    with torch.no_grad():
        ref = loaded.denoiser.model(input_ids=ids, attention_mask=(ids != 1).long()).logits
    assert torch.allclose(out.logits[0, :4], ref[0, 1:5][:, list(den.vocab.predict)], atol=1e-5)
    assert torch.allclose(out.logits[1, :6], ref[1, 1:7][:, list(den.vocab.predict)], atol=1e-5)


def test_esm2_generates_residues_only_inside_the_length(esm2_dir):
    den = task_denoiser("proteins", load_denoiser(f"hf:{esm2_dir}"))
    prompts = length_prompts([5, 12, 3], 12)
    run = decode_all(den, prompts, parse_policy("topk:k=3"), TokenRule(1.0), batch_size=2, seed=3)
    assert [len(s) for s in decode_residues(run.result.tokens)] == [5, 12, 3]
    assert (((run.result.tokens < 20) == (prompts == MASK_ID)).all()
            and ((run.result.tokens == EOS_ID) == (prompts == EOS_ID)).all())
    assert run.result.nfe.tolist() == [2, 4, 1]
    again = decode_all(den, prompts, parse_policy("topk:k=3"), TokenRule(1.0), batch_size=3, seed=3)
    assert torch.equal(run.result.tokens, again.result.tokens)


def test_a_tokenizer_without_residue_letters_is_refused():
    class WordTokenizer:
        unk_token_id, mask_token_id, pad_token_id = 0, 1, 2

        def convert_tokens_to_ids(self, token):
            return 0  # everything unknown

    with pytest.raises(UnmaskError, match="no token for residue"):
        protein_vocab(WordTokenizer())



def test_generate_infill_and_mi_map_take_an_hf_protein_model(esm2_dir, tmp_path, cli):
    code, out, _ = cli(["proteins", "generate", "--model", f"hf:{esm2_dir}", "--n", "4", "--length", "6:9", "--reference", "",
                        "--policy", "topk:k=4", "--out", tmp_path / "g.fasta", "--json"])
    assert code == 0, out
    assert json.loads(out)["n"] == 4 and all(6 <= len(r.sequence) <= 9 for r in read_fasta(tmp_path / "g.fasta"))
    code, out, err = cli(["proteins", "infill", "--model", f"hf:{esm2_dir}", "--antibodies", HEAVY, "--samples", "2",
                          "--judge", f"hf:{esm2_dir}", "--policy", "eb:gamma=3", "--out", tmp_path / "i.fasta", "--json"])
    assert code == 0, err
    m = json.loads(out)
    assert m["antibodies"] == 29 and m["samples"] == 2 and m["cdrs"] == ["H3"] and m[f"pll_{esm2_dir.name}"] < 0
    written = read_fasta(tmp_path / "i.fasta")
    truth = read_antibodies(HEAVY)
    assert len(written) == 58 and written[0].name.startswith(f"{truth[0].name}_s0")
    lo, hi = truth[0].cdrs["H3"]
    assert written[0].sequence[:lo] == truth[0].sequence[:lo] and written[0].sequence[hi:] == truth[0].sequence[hi:]
    code, out, err = cli(["mi", "map", "--task", "antibodies", "--model", f"hf:{esm2_dir}", "--examples", HEAVY,
                          "--index", "2", "--exact", "--out", tmp_path / "m.png"])
    assert code == 0, err
    assert (tmp_path / "m.png").stat().st_size > 0


def test_commands_refuse_what_cannot_work(esm2_dir, tmp_path, cli):
    code, _, err = cli(["proteins", "infill", "--model", f"hf:{esm2_dir}", "--antibodies", HEAVY, "--cdrs", "H4"])
    assert code == 2 and "CDRs must be" in err
    code, _, err = cli(["mi", "data", "--task", "antibodies", "--examples", HEAVY, "--out", tmp_path / "d"])
    assert code == 2 and "no shipped model" in err
    code, _, err = cli(["proteins", "import", "nothing"])
    assert code == 2
    for task in ("sudoku", "maths"):  # only tasks that map a pretrained model onto their ids take one
        code, _, err = cli(["mi", "map", "--task", task, "--model", f"hf:{esm2_dir}", "--examples", HEAVY])
        assert code == 2 and "reads its own token ids" in err and "proteins, antibodies" in err
    for verb in (["mi", "data", "--out", tmp_path / "d", "--examples", HEAVY], ["mi", "train", "--data", tmp_path / "d"],
                 ["sudoku", "train-order", "--data", HEAVY, "--out", tmp_path / "o"]):
        code, _, err = cli([*verb, *(["--task", "sudoku"] if verb[0] == "mi" else []), "--model", f"hf:{esm2_dir}"])
        assert code == 2 and "reads its own token ids" in err, verb
    code, _, err = cli(["mi", "train", "--task", "sudoku", "--data", tmp_path / "d", "--link", "sigmoid"])
    assert code == 2 and "link must be one of" in err


needs = {name: importlib.util.find_spec(name) is not None for name in ("antiberty", "sapiens")}


@pytest.mark.parametrize("name, package, floor", [("sapiens-heavy", "sapiens", 0.6), ("antiberty", "antiberty", 0.8)])
def test_imported_models_know_antibodies(name, package, floor, tmp_path, cli):
    """The real models, written from their wheels: they recover most of 15 % randomly masked residues of
    real heavy chains (measured: Sapiens 0.70, AntiBERTy 0.89; chance 0.05), which a wrong position
    offset or a mis-mapped tensor would not."""
    if not needs[package]:
        pytest.skip(f"{package} is not installed (pip install --no-deps {package})")
    code, out, err = cli(["proteins", "import", name, "--out", tmp_path / name])
    assert code == 0, err
    # Bug caught: the weights written 0600 (as transformers 5 writes them), unreadable by the others who share the model.
    assert stat.S_IMODE((tmp_path / name / "model.safetensors").stat().st_mode) == 0o644
    den = task_denoiser("antibodies", load_denoiser(f"hf:{tmp_path / name}"))
    antibodies = AntibodyTask(den.cfg.seq_len).read(HEAVY)
    x0 = encode_residues([a.sequence for a in antibodies], 130)
    mask = (torch.rand(x0.shape, generator=torch.Generator().manual_seed(0)) < 0.15) & (x0 != EOS_ID)
    logits = den(torch.where(mask, MASK_ID, x0)).logits
    assert (logits.argmax(-1) == x0)[mask].float().mean() > floor


def test_infill_needs_a_model(cli):
    code, _, err = cli(["proteins", "infill", "--antibodies", HEAVY])
    assert code == 2 and "needs --model" in err and len(err.strip().splitlines()) == 1
