"""The UniProt pipeline (blastdbcmd → filter → mmseqs2 clusters → splits → leakage search) on a tiny
BLAST database made here with ``makeblastdb``, never the 782 MB Debian package.

Skipped, with the reason, where the Debian tools are absent (``apt-get install ncbi-blast+ mmseqs2``).
"""

from __future__ import annotations

import random
import shutil
import subprocess

import pytest

from unmask.errors import UnmaskError
from unmask.tasks.proteins.fasta import AMINO_ACIDS, Record, read_fasta, write_fasta
from unmask.tasks.proteins.uniprot import DATABASES, DataConfig, build_uniprot_data, standard_distinct

needs_tools = pytest.mark.skipif(not all(shutil.which(t) for t in ("makeblastdb", "blastdbcmd", "mmseqs")),
                                 reason="needs Debian ncbi-blast+ and mmseqs2 (apt-get install ncbi-blast+ mmseqs2)")


def families(n_families: int = 12, members: int = 5, seed: int = 0) -> list[Record]:
    """Unrelated random families of near-identical sequences (3 point mutations per member)."""
    rng = random.Random(seed)
    out = []
    for f in range(n_families):
        root = "".join(rng.choice(AMINO_ACIDS) for _ in range(rng.randint(55, 95)))
        for m in range(members):
            seq = list(root)
            for _ in range(3):
                seq[rng.randrange(len(seq))] = rng.choice(AMINO_ACIDS)
            out.append(Record(f"F{f:02d}M{m}", "".join(seq)))
    return out


def test_standard_distinct_filters_and_deduplicates():
    # Bugs caught: non-standard residues or out-of-range lengths kept; a duplicate sequence kept twice.
    recs = [Record("b", "A" * 60), Record("a", "A" * 60), Record("c", "A" * 40), Record("d", "B" * 60), Record("e", "C" * 70)]
    assert standard_distinct(recs, 50, 100) == [Record("b", "A" * 60), Record("e", "C" * 70)]


@needs_tools
def test_pipeline_on_a_tiny_database(tmp_path):
    source = tmp_path / "metastudent"
    recs = families()
    extra = [Record("SHORT", "ACD" * 10), Record("ODD", "B" * 60)]  # dropped: too short, non-standard letters
    for k, db in enumerate(DATABASES):  # the three databases share most proteins, as the real ones do
        (source / db).mkdir(parents=True)
        fasta = source / db / "input.fasta"
        write_fasta(fasta, recs[k:] + extra[:1]) if k else fasta.write_text(
            "".join(f">{r.name}\n{r.sequence}\n" for r in recs + extra))
        subprocess.run(["makeblastdb", "-in", str(fasta), "-dbtype", "prot", "-out", str(source / db / "goasp.fasta"),
                        "-parse_seqids"], check=True, capture_output=True)
    cfg = DataConfig(min_len=50, max_len=100, val_clusters=2, test_clusters=3, reference=2)
    manifest = build_uniprot_data(tmp_path / "out", cfg, source=source)
    assert manifest["distinct_kept"] == len(recs)
    splits = {k: read_fasta(tmp_path / "out" / f"{k}.fasta") for k in ("train", "val", "test", "reference")}
    family = {k: {r.name[:3] for r in v} for k, v in splits.items()}
    # Bugs caught: a cluster split across train and a held-out set; held-out sets with several members
    # of one family; the reference not drawn from the test set.
    assert len(splits["test"]) == 3 and len(splits["val"]) == 2 and len(splits["train"]) == 7 * 5
    assert not family["train"] & (family["val"] | family["test"])
    assert len(family["test"]) == 3 and set(map(tuple, [(r.name, r.sequence) for r in splits["reference"]])) <= \
        set((r.name, r.sequence) for r in splits["test"])
    again = build_uniprot_data(tmp_path / "again", cfg, source=source)  # the same seed gives the same splits
    assert again["splits"] == manifest["splits"]
    assert (tmp_path / "again" / "train.fasta").read_bytes() == (tmp_path / "out" / "train.fasta").read_bytes()


def test_missing_database_names_the_package(tmp_path):
    with pytest.raises(UnmaskError, match="apt-get install metastudent-data"):
        build_uniprot_data(tmp_path / "out", DataConfig(), source=tmp_path)
