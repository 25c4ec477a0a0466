"""Proteins: FASTA files, UniProt data via BLAST/MMseqs2 tools, the protein MDM and its generation metrics."""
