"""The real heavy chains: every antibody heavy-chain variable domain in Debian's ``metastudent-data``.

metastudent-data holds UniProt's Gene-Ontology-annotated proteins of January 2014 (see
:mod:`unmask.tasks.proteins.uniprot`); among its 435,059 distinct sequences, its antibody heavy chains
are mostly the "Ig heavy chain V region" entries (P01xxx) of the protein-sequencing era, some with a
signal peptide or a constant region attached, some germline V genes that stop before CDR3. They are found
with ANARCI's own models, not by name or by motif:

1. **screen**: ``hmmsearch`` (Debian ``hmmer``) runs ANARCI's seven heavy-chain profile HMMs (human,
   mouse, rabbit, rhesus, pig, alpaca, cow) over every distinct sequence, keeping those with a domain of
   at least 80 bits, ANARCI's own threshold (a loose Cys…W[VIFL][RK]Q / [YF][YF]C…WG.G regex screen
   followed by ANARCI finds exactly the same 121 sequences, several times more slowly);
2. **number**: ANARCI (:func:`~unmask.tasks.proteins.judges.numbering.number`) against all of its HMMs,
   light chains and T-cell receptors included; a sequence is kept if its best domain is "H";
3. **trim**: to the numbered domain (ANARCI's first to last numbered residue: a signal peptide or a
   constant region is cut off); domains with a residue outside the 20 standard ones (the sequencing
   era's B, Z, X) are dropped; one record per distinct domain, named by the first accession.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from unmask.errors import UnmaskError
from unmask.tasks.proteins.fasta import AMINO_ACIDS, Record
from unmask.tasks.proteins.judges.numbering import HMMER_BIN, MIN_BITS, number, require_anarci
from unmask.tasks.proteins.uniprot import dump_metastudent

COMPLETE = (3, 125)  # a complete domain is numbered from IMGT position <= 3 to >= 125 (through FR4's J region)


def heavy_profiles(path: Path) -> Path:
    """Write ANARCI's heavy-chain profile HMMs (the ``*_H`` entries of its ``ALL.hmm``) to ``path``."""
    text = (Path(require_anarci().HMM_path) / "ALL.hmm").read_text()
    keep = [e + "//\n" for e in text.split("//\n") if e.strip() and any(line.split()[:2][-1].endswith("_H")
                                                                        for line in e.splitlines() if line.startswith("NAME"))]
    if not keep:
        raise UnmaskError("ANARCI's ALL.hmm has no heavy-chain (*_H) profiles")
    path.write_text("".join(keep))
    return path


def screen(sequences: list[str], work: Path) -> list[int]:
    """Indices of the ``sequences`` in which ``hmmsearch`` finds a heavy-chain domain of >= 80 bits."""
    fasta = work / "all.fasta"
    fasta.write_text("".join(f">{k}\n{s}\n" for k, s in enumerate(sequences)))
    table = work / "hits.tbl"
    argv = [str(HMMER_BIN / "hmmsearch"), "--noali", "-o", os.devnull, "--tblout", str(table), "-T", str(MIN_BITS),
            "--cpu", str(os.cpu_count() or 1), str(heavy_profiles(work / "heavy.hmm")), str(fasta)]
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise UnmaskError(f"hmmsearch failed ({done.returncode}): {tail[:200]}")
    hits = {int(line.split()[0]) for line in table.read_text().splitlines() if line and not line.startswith("#")}
    return sorted(hits)


def real_heavy_chains(records: list[Record] | None = None, complete: bool = False) -> list[Record]:
    """Every heavy-chain variable domain in ``records`` (default: all of metastudent-data, dumped with
    :func:`~unmask.tasks.proteins.uniprot.dump_metastudent`), found as the module docstring says: trimmed,
    of the 20 standard residues, one per distinct domain, sorted by name. ``complete``: only domains
    numbered from IMGT position <= 3 to >= 125 (the fair reference for whole generated domains; the
    others are germline V genes without CDR3 and J, or fragments). Each name is
    ``"ACCESSION SPECIES V_GENE"`` (the closest germline's species and gene, as ANARCI assigns them)."""
    records = dump_metastudent() if records is None else records
    first: dict[str, str] = {}  # sequence → the first name in sorted order
    for r in sorted(records, key=lambda r: r.name):
        first.setdefault(r.sequence.upper(), r.name.split()[0])
    sequences = list(first)
    require_anarci()
    with tempfile.TemporaryDirectory() as tmp:
        picked = [sequences[k] for k in screen(sequences, Path(tmp))]
    domains: dict[str, str] = {}  # domain → name
    for seq, n in zip(picked, number(picked)):
        domain = seq[n.start : n.end]
        if not n.is_heavy or set(domain) - set(AMINO_ACIDS):
            continue
        if complete and not (n.imgt_first <= COMPLETE[0] and n.imgt_last >= COMPLETE[1]):
            continue
        name = f"{first[seq]} {n.v_species} {n.v_gene}"
        if domain not in domains or name < domains[domain]:
            domains[domain] = name
    return sorted((Record(name, d) for d, name in domains.items()), key=lambda r: r.name)
