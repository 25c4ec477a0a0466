"""Real protein sequences from Debian's ``metastudent-data`` (UniProt, January 2014), with the tools
made for them: ``blastdbcmd`` (Debian ``ncbi-blast+``) dumps the BLAST databases, ``mmseqs``
(Debian ``mmseqs2``) clusters them so that no held-out sequence has a near-identical relative in
the training set (Steinegger & Söding 2017).

The pipeline: dump every database → keep sequences of the requested lengths made only of the 20
standard residues, one record per distinct sequence → cluster at ``min_seq_id`` → assign whole
clusters to train/val/test by a seeded shuffle → drop any held-out sequence that ``mmseqs
easy-search`` still finds in the training set at ``min_seq_id`` → the test split is one
representative per cluster (as UniRef50 is).
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from unmask.errors import UnmaskError
from unmask.io import atomic_write, dumps_strict, make_dir
from unmask.tasks.proteins.fasta import AMINO_ACIDS, Record, write_fasta

METASTUDENT = Path("/usr/share/metastudent-data/dataset_201401")  # where Debian's metastudent-data puts its databases
DATABASES = ("BPO", "MFO", "CCO")  # one BLAST database per Gene Ontology branch; they share most proteins
TOOLS = {"blastdbcmd": "ncbi-blast+", "mmseqs": "mmseqs2"}  # command → the Debian package that provides it


@dataclass(frozen=True)
class DataConfig:
    """What ``unmask proteins data`` builds."""

    min_len: int = 50  # shortest sequence kept
    max_len: int = 100  # longest sequence kept (the model's length)
    min_seq_id: float = 0.5  # clusters join sequences of at least this identity; held-out ones have none in train
    coverage: float = 0.8  # alignment coverage for clustering and for the leakage search
    val_clusters: int = 500  # clusters held out for validation (one sequence each)
    test_clusters: int = 1000  # clusters held out as the test set (one representative each)
    reference: int = 500  # test proteins drawn (seeded) into reference.fasta, the set generations are judged against
    seed: int = 0  # the shuffle of clusters into splits

    def __post_init__(self) -> None:
        if not 1 <= self.min_len <= self.max_len:
            raise UnmaskError(f"need 1 <= min_len <= max_len, got {self.min_len}, {self.max_len}")
        if not (0 < self.min_seq_id <= 1 and 0 < self.coverage <= 1):
            raise UnmaskError("min_seq_id and coverage must be in (0, 1]")
        if self.val_clusters < 1 or self.test_clusters < 1:
            raise UnmaskError("val_clusters and test_clusters must be >= 1")


def require_tools(*commands: str) -> None:
    """Refuse, naming the apt packages, when a command is missing; try ``apt-get install`` as root."""
    missing = [c for c in commands if shutil.which(c) is None]
    if not missing:
        return
    packages = sorted({TOOLS[c] for c in missing})
    if os.geteuid() == 0 and shutil.which("apt-get") and os.environ.get("UNMASK_NO_APT") != "1":
        done = subprocess.run(["apt-get", "install", "-y", "-q", *packages], capture_output=True, text=True,
                              env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
        if done.returncode == 0 and all(shutil.which(c) for c in missing):
            return
    raise UnmaskError(f"needs {', '.join(missing)}: install the Debian package(s) with `apt-get install {' '.join(packages)}`")


def _run(argv: list[str]) -> str:
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise UnmaskError(f"{argv[0]} failed ({done.returncode}): {tail[0][:200]}")
    return done.stdout


def dump_blast_db(db: str | os.PathLike) -> list[Record]:
    """Every record of BLAST database ``db`` (named by its path without the extension)."""
    require_tools("blastdbcmd")
    out = _run(["blastdbcmd", "-db", str(db), "-entry", "all", "-outfmt", "%a\t%t\t%s"])
    records = []
    for line in out.splitlines():
        accession, title, seq = line.split("\t", 2)
        # metastudent's titles start "ACCESSION|GO terms" (its %a is an ordinal); other databases keep the id in %a
        name = title.split("|")[0].split()[0] if title.strip() else accession.strip()
        records.append(Record(name or "unnamed", seq.strip().upper()))
    return records


def standard_distinct(records: list[Record], min_len: int, max_len: int) -> list[Record]:
    """One record per distinct sequence (the first name seen) of length in [min_len, max_len] made
    only of the 20 standard residues, sorted by name for a stable order."""
    allowed, seen = set(AMINO_ACIDS), {}
    for r in records:
        if min_len <= len(r.sequence) <= max_len and set(r.sequence) <= allowed:
            seen.setdefault(r.sequence, r.name)
    kept = sorted((Record(name, seq) for seq, name in seen.items()), key=lambda r: (r.name, r.sequence))
    names: dict[str, int] = {}
    for k, r in enumerate(kept):  # names must be unique: the clustering tools report them
        names[r.name] = names.get(r.name, 0) + 1
        if names[r.name] > 1:
            kept[k] = Record(f"{r.name}_{names[r.name]}", r.sequence)
    return kept


def cluster(records: list[Record], min_seq_id: float, coverage: float, work: Path) -> list[list[Record]]:
    """Clusters of ``records`` by ``mmseqs easy-cluster`` (each list starts with its representative)."""
    require_tools("mmseqs")
    write_fasta(work / "all.fasta", records)
    _run(["mmseqs", "easy-cluster", str(work / "all.fasta"), str(work / "clu"), str(work / "tmp"),
          "--min-seq-id", str(min_seq_id), "-c", str(coverage), "--cov-mode", "0", "--threads", str(os.cpu_count() or 1),
          "-v", "1"])
    by_name = {r.name: r for r in records}
    groups: dict[str, list[Record]] = {}
    for line in (work / "clu_cluster.tsv").read_text().splitlines():
        rep, member = line.split("\t")
        groups.setdefault(rep, [by_name[rep]])
        if member != rep:
            groups[rep].append(by_name[member])
    return [groups[k] for k in sorted(groups)]


def hits(query: list[Record], target: list[Record], min_seq_id: float, coverage: float, work: Path) -> dict[str, float]:
    """For each query name, the highest identity of an ``mmseqs easy-search`` hit in ``target``
    (names without a hit are absent)."""
    require_tools("mmseqs")
    write_fasta(work / "query.fasta", query)
    write_fasta(work / "target.fasta", target)
    _run(["mmseqs", "easy-search", str(work / "query.fasta"), str(work / "target.fasta"), str(work / "hits.m8"),
          str(work / "tmp"), "--min-seq-id", str(min_seq_id), "-c", str(coverage), "--threads", str(os.cpu_count() or 1),
          "-v", "1"])
    best: dict[str, float] = {}
    for line in (work / "hits.m8").read_text().splitlines():
        q, _, ident = line.split("\t")[:3]
        best[q] = max(best.get(q, 0.0), float(ident))
    return best


def build_splits(records: list[Record], cfg: DataConfig, work: Path) -> dict[str, list[Record]]:
    """``train``/``val``/``test`` from distinct ``records`` (see the module docstring)."""
    groups = cluster(records, cfg.min_seq_id, cfg.coverage, work)
    if len(groups) <= cfg.val_clusters + cfg.test_clusters:
        raise UnmaskError(f"only {len(groups)} clusters: fewer than val_clusters + test_clusters + 1")
    random.Random(cfg.seed).shuffle(groups)
    test = [g[0] for g in groups[: cfg.test_clusters]]
    val = [g[0] for g in groups[cfg.test_clusters : cfg.test_clusters + cfg.val_clusters]]
    train = [r for g in groups[cfg.test_clusters + cfg.val_clusters :] for r in g]
    leaked = hits(test + val, train, cfg.min_seq_id, cfg.coverage, work)
    return {"train": train, "val": [r for r in val if r.name not in leaked], "test": [r for r in test if r.name not in leaked]}


def dump_metastudent(source: Path = METASTUDENT) -> list[Record]:
    """Every record of metastudent-data's three UniProt databases (proteins recur across them)."""
    dbs = [source / name / "goasp.fasta" for name in DATABASES]
    if not all(Path(f"{db}.psq").is_file() for db in dbs):
        raise UnmaskError(f"{source}: no UniProt BLAST databases; install them with `apt-get install metastudent-data`")
    return [r for db in dbs for r in dump_blast_db(db)]


def build_uniprot_data(out: str | os.PathLike, cfg: DataConfig, source: Path = METASTUDENT) -> dict:
    """Write ``train.fasta``, ``val.fasta``, ``test.fasta`` and ``manifest.json`` into ``out``."""
    dumped = dump_metastudent(source)
    out = make_dir(out)
    records = standard_distinct(dumped, cfg.min_len, cfg.max_len)
    with tempfile.TemporaryDirectory() as tmp:
        splits = build_splits(records, cfg, Path(tmp))
    splits["reference"] = random.Random(cfg.seed).sample(splits["test"], min(cfg.reference, len(splits["test"])))
    for name, part in splits.items():
        write_fasta(out / f"{name}.fasta", part)
    manifest = {"config": asdict(cfg), "source": str(source), "records_dumped": len(dumped), "distinct_kept": len(records),
                "splits": {k: len(v) for k, v in splits.items()}, "tools": tool_versions()}
    atomic_write(out / "manifest.json", lambda p: Path(p).write_text(dumps_strict(manifest, indent=1) + "\n"))
    return manifest


def tool_versions() -> dict[str, str]:
    """The versions of the tools, for the manifest."""
    versions = {}
    for cmd, flag in (("blastdbcmd", "-version"), ("mmseqs", "version")):
        if shutil.which(cmd):
            done = subprocess.run([cmd, flag], capture_output=True, text=True)
            versions[cmd] = (done.stdout.strip().splitlines() or [""])[0]
    return versions

