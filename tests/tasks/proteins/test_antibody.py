"""Antibody CDRs, the infill task, the pseudo-log-likelihood judge and the infill figures."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from unmask.decode import TokenRule, parse_policy
from unmask.errors import UnmaskError
from unmask.model import ModelConfig, TransformerDenoiser
from unmask.tasks.proteins.antibody import AntibodyTask, find_cdrs, heavy_chains, pseudo_log_likelihood, read_antibodies
from unmask.tasks.proteins.fasta import Record, write_fasta
from unmask.tasks.proteins.infill import diversity, infill
from unmask.tasks.proteins.task import EOS_ID, MASK_ID, VOCAB_SIZE, encode_residues

SHIPPED = Path(__file__).resolve().parents[3] / "benchmarks" / "proteins" / "data" / "heavy_chains.fasta"
# UniProt P01756 (mouse Ig heavy chain V region) and its CDRs by the module's anchors
P01756 = "EVQLQQSGPELVKPGASVKMSCKASGYTFTDYYMKWVKQSHGKSLEWIGDINPNNGGTSYNQKFKGKATLTVDKSSSTAYMQLNSLTSEDSAVYYCARDYDWYFDVWGAGTTVTVSS"


def test_cdrs_of_a_known_heavy_chain():
    cdrs = find_cdrs(P01756)
    got = {k: P01756[slice(*v)] for k, v in cdrs.items()}
    assert got == {"H1": "GYTFTDYYMK", "H2": "DINPNNGGTSYNQKFKG", "H3": "ARDYDWYFDV"}


def test_sequences_without_the_anchors_have_no_cdrs():
    assert find_cdrs("M" * 120) is None
    assert find_cdrs(P01756.replace("YYC", "YFC")) is None  # no CDR3 start
    assert find_cdrs(P01756.replace("WGAG", "FGAG")) is None  # a light-chain J motif, not WGxG
    assert find_cdrs(P01756.replace("WVKQ", "AVKQ")) is None  # no Trp36


def test_heavy_chain_selection():
    records = [Record("P01756", P01756), Record("P01757", P01756),  # the same sequence twice: kept once
               Record("Q01756", P01756[:-1]), Record("P01999", "M" + P01756), Record("P01998", P01756.replace("A", "X", 1)),
               Record("P01700", P01756[:-2] + "AA")]
    assert [r.name for r in heavy_chains(records)] == ["P01700", "P01756"]


def test_shipped_heavy_chains_all_have_cdrs():
    antibodies = read_antibodies(SHIPPED)
    assert len(antibodies) == 29 and len({a.sequence for a in antibodies}) == 29
    for a in antibodies:
        h1, h2, h3 = (a.cdrs[k] for k in ("H1", "H2", "H3"))
        assert 0 < h1[0] < h1[1] <= h2[0] < h2[1] <= h3[0] < h3[1] < len(a.sequence)
        assert a.sequence[h3[0] - 3 : h3[0]] == "YYC" and a.sequence[h3[1]] == "W"


def test_a_record_without_anchors_is_refused_by_name(tmp_path):
    write_fasta(tmp_path / "x.fasta", [Record("P01756", P01756), Record("oddone", "ACDEFGHIKL" * 11)])
    with pytest.raises(UnmaskError, match="oddone"):
        read_antibodies(tmp_path / "x.fasta")


def test_task_masks_exactly_the_chosen_cdrs():
    a = read_antibodies(SHIPPED)[:3]
    task = AntibodyTask(130, ("H1", "H3"))
    x = task.encode(a)
    truth = task.targets(a)
    for k, ab in enumerate(a):
        want = torch.zeros(130, dtype=torch.bool)
        for name in ("H1", "H3"):
            want[slice(*ab.cdrs[name])] = True
        assert torch.equal(x[k] == MASK_ID, want)
        assert torch.equal(x[k][~want], truth[k][~want])
        assert (x[k, len(ab.sequence) :] == EOS_ID).all()
    with pytest.raises(UnmaskError, match="CDRs must be"):
        AntibodyTask(130, ("L1",))


def tiny_model(seq_len=130, seed=0):
    torch.manual_seed(seed)
    return TransformerDenoiser(ModelConfig(vocab_size=VOCAB_SIZE, mask_id=MASK_ID, seq_len=seq_len, d_model=16, n_layers=1,
                                           n_heads=2, d_ff=32, task="proteins")).eval()


def test_pseudo_log_likelihood_is_one_pass_per_position():
    model = tiny_model()
    x = encode_residues(["ACDEFGHIK", "WYWYWYWY"], 130)
    pos = torch.zeros_like(x, dtype=torch.bool)
    pos[0, [1, 4]] = True
    pos[1, [0, 2, 7]] = True
    got = pseudo_log_likelihood(model, x, pos, batch=2)  # batches split across sequences
    for k in range(2):
        want = []
        for i in pos[k].nonzero()[:, 0].tolist():
            y = x[k : k + 1].clone()
            y[0, i] = MASK_ID
            with torch.no_grad():
                want.append(F.log_softmax(model(y).logits[0, i].float(), -1)[x[k, i]])
        assert got[k] == pytest.approx(float(torch.stack(want).mean()), abs=1e-5)


def test_diversity():
    masked = torch.tensor([[True, True, False, False]] * 4)
    same = torch.tensor([[1, 2, 3, 3]] * 4)
    assert diversity(same, masked, 2) == 0
    differ = torch.tensor([[1, 2, 0, 0], [3, 4, 0, 0], [1, 2, 5, 5], [1, 5, 6, 6]])  # antibody 1: 1.0; antibody 2: 0.5
    assert diversity(differ, masked, 2) == pytest.approx(0.75)


def test_infill_keeps_the_framework_and_counts_passes():
    model = tiny_model()
    antibodies = read_antibodies(SHIPPED)[:4]
    task = AntibodyTask(130, ("H3",))
    m, tokens = infill(task, model, antibodies, parse_policy("sequential"), TokenRule(1.0), samples=3, seed=5,
                       judges={"self": model})
    repeated = [a for a in antibodies for _ in range(3)]
    prompts = task.encode(repeated)
    given = prompts != MASK_ID
    assert torch.equal(tokens[given], prompts[given]) and not (tokens == MASK_ID).any()
    h3 = [a.cdrs["H3"][1] - a.cdrs["H3"][0] for a in antibodies]
    assert m["mean_nfe"] == pytest.approx(sum(h3) / len(h3))  # sequential: one pass per CDR residue
    assert m["residues"] == pytest.approx(sum(h3) / len(h3))
    assert 0 <= m["recovery"] <= 1 and 0 < m["diversity"] <= 1 and m["pll_self"] < 0
    again, tokens2 = infill(task, model, antibodies, parse_policy("sequential"), TokenRule(1.0), samples=3, seed=5,
                            batch_size=5)
    assert torch.equal(tokens, tokens2)  # seeded per sample: batch size does not matter
    one_pass, _ = infill(task, model, antibodies, parse_policy("topk:k=64"), TokenRule(1.0), samples=1)
    assert one_pass["mean_nfe"] == 1
