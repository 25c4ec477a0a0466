"""The judges of generated heavy chains (unmask.tasks.proteins.judges): composition JSD and its split-half
floor, exact global-alignment identity (diversity, novelty), ANARCI numbering, the real-chain finder and
AntPack humanness. Each test's docstring names the planted bug it catches.

ANARCI's tests need ``pip install anarci==2026.2.13.2`` and Debian's HMMER (``apt-get install hmmer``);
AntPack's need ``pip install antpack==0.3.8.6.3``. Each is skipped, with that reason, where absent.
"""

from __future__ import annotations

import importlib.util
import math
import random
import statistics
import sys
from functools import cache
from pathlib import Path

import pytest

from unmask.errors import UnmaskError
from unmask.tasks.proteins import uniprot
from unmask.tasks.proteins.fasta import Record
from unmask.tasks.proteins.judges import identity, numbering
from unmask.tasks.proteins.judges.composition import Floor, composition_jsd, split_half_floor
from unmask.tasks.proteins.judges.identity import diversity, identity_matrix, novelty, pair_identity
from unmask.tasks.proteins.metrics import dipeptide_counts, jsd, residue_counts

needs_anarci = pytest.mark.skipif(
    importlib.util.find_spec("anarci") is None or not (numbering.HMMER_BIN / "hmmscan").exists(),
    reason="needs ANARCI (pip install anarci==2026.2.13.2) and Debian HMMER (apt-get install hmmer)")
needs_antpack = pytest.mark.skipif(importlib.util.find_spec("antpack") is None,
                                   reason="needs AntPack (pip install antpack==0.3.8.6.3)")

VH = numbering.CANARY  # trastuzumab's heavy-chain variable domain
VL = "DIQMTQSPSSLSASVGDRVTITCRASQDVNTAVAWYQQKPGKAPKLLIYSASFLYSGVPSRFSGSRSGTDFTLTISSLQPEDFATYYCQQHYTTPPTFGQGTKVEIK"
MOUSE_VH = ("QVQLQQPGAELVKPGASVKLSCKASGYTFTSYWMHWVKQRPGRGLEWIGRIDPNSGGTKYNEKFKSKATLTVDKPSSTAYMQLSSLTSEDSAVYYCAR"
            "YRLGRYFDYWGQGTTLTVSS")  # UniProt P01755's domain
SIGNAL = "MDWTWRILFLVAAATGAHS"  # a heavy chain's signal peptide
CH1 = "ASTKGPSVFPLAPSSKSTSGGTAALGCLVKDYFPEPVTVSWNSGALTSGVHTFPAVLQSSGLYSLSSVVTVPSSSLGTQTYICNVNHKPSNTKVDKKV"  # IgG1 CH1
# IGHV3-23, a germline V gene that stops before CDR3 and J
GERMLINE_V = "EVQLLESGGGLVQPGGSLRLSCAASGFTFSSYAMSWVRQAPGKGLEWVSAISGSGGSTYYADSVKGRFTISRDNSKNTLYLQMNSLRAEDTAVYYCAK"


def shuffled(seq: str, seed: int = 0) -> str:
    residues = list(seq)
    random.Random(seed).shuffle(residues)
    return "".join(residues)


# ---------------------------------------------------------------- composition


def test_jsd_zero_for_the_same_set_and_positive_symmetric_bounded_otherwise():
    """Bug: a JSD in bits (bound 1, not ln 2), an asymmetric KL in place of JSD, or a set compared with a
    shuffled copy of itself not giving 0 (frequencies not pooled)."""
    a = [VH, VL, MOUSE_VH]
    assert composition_jsd(a, a) == {"jsd_aa": 0.0, "jsd_dipeptide": 0.0}
    assert composition_jsd(a, a[::-1])["jsd_aa"] == 0.0
    disjoint = composition_jsd(["AAAA"], ["CCCC"])
    assert disjoint["jsd_aa"] == pytest.approx(math.log(2)) and disjoint["jsd_dipeptide"] == pytest.approx(math.log(2))
    b = [shuffled(VH * 2, 1), "GGGGSGGGGS" * 5]
    ab, ba = composition_jsd(a, b), composition_jsd(b, a)
    assert ab == pytest.approx(ba)
    assert 0 < ab["jsd_aa"] < math.log(2) and 0 < ab["jsd_dipeptide"] <= math.log(2)
    # a shuffle keeps the residues but not the neighbours
    same_residues = composition_jsd([VH], [shuffled(VH)])
    assert same_residues["jsd_aa"] == 0.0 and same_residues["jsd_dipeptide"] > 0


def test_jsd_refuses_non_standard_residues_in_one_line():
    """Bug: a B/Z/X residue silently dropped (or a bare KeyError) instead of a clear refusal."""
    with pytest.raises(UnmaskError, match="20 standard"):
        composition_jsd([VH], ["ACDBX"])
    with pytest.raises(UnmaskError, match="no sequences"):
        composition_jsd([], [VH])


def test_split_half_floor_is_computed_as_documented():
    """Bug: halves that overlap, one halving reused every round, the seed ignored, the population standard
    deviation in place of the sample one, or an odd set's extra sequence put in a half."""
    rng = random.Random(7)
    seqs = ["".join(rng.choice("ACDEFGHIKLMNPQRSTVWY") for _ in range(rng.randint(20, 40))) for _ in range(11)]
    floor = split_half_floor(seqs, rounds=5, seed=3)
    draw, aa, di = random.Random(3), [], []
    for _ in range(5):
        order = draw.sample(range(11), 11)
        x, y = [seqs[k] for k in order[:5]], [seqs[k] for k in order[5:10]]
        assert not set(order[:5]) & set(order[5:10])
        aa.append(jsd(residue_counts(x), residue_counts(y)))
        di.append(jsd(dipeptide_counts(x), dipeptide_counts(y)))
    expect = Floor(statistics.fmean(aa), statistics.stdev(aa), statistics.fmean(di), statistics.stdev(di), 5, 5, 3)
    assert (floor.half, floor.rounds, floor.seed) == (5, 5, 3)
    for field in ("jsd_aa", "jsd_aa_sd", "jsd_dipeptide", "jsd_dipeptide_sd"):
        assert getattr(floor, field) == pytest.approx(getattr(expect, field), rel=1e-12)
    assert floor.jsd_aa_sd > 0  # the rounds differ
    assert split_half_floor(seqs, rounds=5, seed=3) == floor
    assert split_half_floor(seqs, rounds=5, seed=4) != floor
    with pytest.raises(UnmaskError, match=">= 4 sequences"):
        split_half_floor(seqs[:3])


# ---------------------------------------------------------------- identity


def brute_identity(a: str, b: str) -> float:
    """Every global alignment of two tiny strings: the best (score, matches), then matches / columns."""

    @cache
    def best(i: int, j: int) -> tuple[int, int, int]:  # (score, matches, -columns) of a[i:] vs b[j:]
        if i == len(a) and j == len(b):
            return (0, 0, 0)
        options = []
        if i < len(a) and j < len(b):
            s, m, c = best(i + 1, j + 1)
            options.append((s + (a[i] == b[j]), m + (a[i] == b[j]), c - 1))
        if i < len(a):
            s, m, c = best(i + 1, j)
            options.append((s - 1, m, c - 1))
        if j < len(b):
            s, m, c = best(i, j + 1)
            options.append((s - 1, m, c - 1))
        return max(options, key=lambda o: (o[0], o[1]))

    _, m, c = best(0, 0)
    return m / -c


def test_identity_on_hand_examples():
    """Bug: identity over the shorter length instead of the alignment's columns, ties resolved towards the
    ungapped alignment (ACD/CDA would be 0, not 2 of 4 columns), or a gap scored as a mismatch."""
    a = ["ACDE", "ACDE", "AAAA", "ACDEF", "GGGG", "ACD", "W"]
    b = ["ACDE", "ACFE", "CCCC", "ACEF", "GGGGGGGG", "CDA", "WWW"]
    expect = [1.0, 0.75, 0.0, 0.8, 0.5, 0.5, 1 / 3]
    assert pair_identity(a, b).tolist() == pytest.approx(expect)
    assert pair_identity(b, a).tolist() == pytest.approx(expect)  # symmetric


def test_identity_matches_every_alignment_enumerated():
    """Bug: an off-by-one in the DP's running-maximum gap step, or padding of a shorter sequence leaking
    into a longer one's cells in the same batch (random tiny pairs of mixed lengths, all in one batch)."""
    rng = random.Random(0)
    pairs = [("".join(rng.choice("ACD") for _ in range(rng.randint(1, 6))),
              "".join(rng.choice("ACD") for _ in range(rng.randint(1, 6)))) for _ in range(300)]
    got = pair_identity([p[0] for p in pairs], [p[1] for p in pairs])
    assert got.tolist() == pytest.approx([brute_identity(x, y) for x, y in pairs])


def test_novelty_and_diversity_on_hand_examples():
    """Bug: novelty taking the mean (not the highest) identity to the reference, diversity counting the
    diagonal (a sequence with itself) or each pair twice, or a seeded pair sample not reproducible."""
    assert novelty(["ACDE", "CCCC"], ["ACDE", "AAAA"]).tolist() == [1.0, 0.25]
    assert identity_matrix(["ACDE"], ["ACDE", "AAAA", "ACFE"]).tolist() == [[1.0, 0.25, 0.75]]
    assert diversity(["ACDE", "ACDE", "CCCC"]) == pytest.approx((1.0 + 0.25 + 0.25) / 3)
    seqs = [shuffled(VH, k)[:30] for k in range(8)]
    full = identity_matrix(seqs, seqs)
    assert diversity(seqs) == pytest.approx(float(full.triu(1).sum()) / 28)
    assert diversity(seqs, max_pairs=5, seed=1) == diversity(seqs, max_pairs=5, seed=1)
    with pytest.raises(UnmaskError, match="20 standard"):
        pair_identity(["ACDX"], ["ACD"])
    with pytest.raises(UnmaskError, match="at least two"):
        diversity(["ACDE"])


def test_identity_is_fast_enough_for_a_table_row():
    """Bug: a per-pair Python DP (minutes for 500 × 100 chains); 50 × 20 pairs of ~120 residues here."""
    import time

    gen, real = [shuffled(VH, k) for k in range(50)], [shuffled(MOUSE_VH, k) for k in range(20)]
    start = time.perf_counter()
    novelty(gen, real)
    assert time.perf_counter() - start < 5
    assert identity.CHUNK >= 1024


# ---------------------------------------------------------------- ANARCI


@needs_anarci
def test_a_real_heavy_chain_numbers_as_heavy_and_a_shuffled_one_does_not():
    """Bug: the chain type read from the wrong domain or field (a light chain called heavy), a shuffled
    sequence numbered anyway (threshold ignored), or the domain's span off by one."""
    vh, vl, shuf = numbering.number([SIGNAL + VH + CH1, VL, shuffled(VH)])
    assert vh.is_heavy and vh.chain_type == "H" and vh.bitscore >= numbering.MIN_BITS
    assert (SIGNAL + VH + CH1)[vh.start : vh.end] == VH and (vh.imgt_first, vh.imgt_last) == (1, 128)
    assert vh.v_species == "human" and vh.v_gene.startswith("IGHV3") and 0.7 < vh.v_identity <= 1
    assert vh.j_gene.startswith("IGHJ") and 0.7 < vh.j_identity <= 1
    assert vl.chain_type == "K" and not vl.is_heavy
    assert shuf.chain_type is None and not shuf.is_heavy and math.isnan(shuf.v_identity)
    assert numbering.heavy_share([vh, vl, shuf]) == pytest.approx(1 / 3)


@needs_anarci
def test_a_hmmer_that_finds_nothing_is_refused_not_read_as_no_heavy_chains(monkeypatch):
    """Bug: an HMMER whose output ANARCI cannot read (PyPI's hmmer 3.4) silently making every sequence
    'not heavy' (the canary check removed)."""
    class Blind:
        HMM_path = ""

        @staticmethod
        def anarci(named, **kwargs):
            return [None] * len(named), [None] * len(named), [None] * len(named)

    monkeypatch.setattr(numbering.importlib, "import_module", lambda name: Blind)
    with pytest.raises(UnmaskError, match="known heavy chain"):
        numbering.number([VH])


def test_missing_tools_are_refused_in_one_line_naming_the_install(monkeypatch, tmp_path):
    """Bug: a bare FileNotFoundError / ImportError (or an install attempt that hides the refusal) instead
    of one line naming `apt-get install hmmer` or `pip install anarci==...`."""
    monkeypatch.setenv("UNMASK_NO_APT", "1")
    monkeypatch.setattr(uniprot, "TOOLS", dict(uniprot.TOOLS))
    monkeypatch.setattr(numbering, "HMMER_BIN", tmp_path)
    with pytest.raises(UnmaskError, match="apt-get install hmmer"):
        numbering.number([VH])
    if (Path("/usr/bin") / "hmmscan").exists():
        monkeypatch.setattr(numbering, "HMMER_BIN", Path("/usr/bin"))
        monkeypatch.setitem(sys.modules, "anarci.anarci", None)  # import fails as if not installed
        with pytest.raises(UnmaskError, match=r"pip install anarci==\S+"):
            numbering.number([VH])


@needs_anarci
def test_real_heavy_chains_are_found_trimmed_filtered_and_deduplicated():
    """Bug: a light chain or an unrelated protein kept, the signal peptide or CH1 left on, one domain kept
    twice (with and without its signal peptide), a B/Z residue kept, or `complete` not dropping a
    germline V gene that stops before CDR3."""
    from unmask.tasks.proteins.judges.real import real_heavy_chains

    unrelated = shuffled(VH + VL, 3)
    records = [Record("P2", SIGNAL + VH + CH1), Record("P1", VH), Record("P3", VL), Record("P4", unrelated),
               Record("P5", GERMLINE_V), Record("P6", MOUSE_VH.replace("N", "B")), Record("P7", SIGNAL + MOUSE_VH),
               Record("P0", VH)]
    found = real_heavy_chains(records)
    assert [(r.name.split()[0], r.sequence) for r in found] == [("P0", VH), ("P5", GERMLINE_V), ("P7", MOUSE_VH)]
    assert found[0].name.startswith("P0 human IGHV3") and found[2].name.startswith("P7 mouse IGHV1")
    assert [r.name.split()[0] for r in real_heavy_chains(records, complete=True)] == ["P0", "P7"]


# ---------------------------------------------------------------- AntPack


@needs_antpack
def test_humanness_ranks_a_human_heavy_chain_above_a_mouse_one():
    """Bug: the sign flipped (a negative log-likelihood reported as humanness) or scores returned out of
    the input order."""
    from unmask.tasks.proteins.judges.humanness import humanness

    human, mouse = humanness([VH, MOUSE_VH]).tolist()
    assert math.isfinite(human) and math.isfinite(mouse) and human > mouse + 20
    assert humanness([MOUSE_VH, VH]).tolist() == pytest.approx([mouse, human])

