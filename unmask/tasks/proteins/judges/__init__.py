"""Judges of generated antibody heavy chains, by tools and data nobody here wrote.

- :mod:`.real`: the real heavy-chain variable domains of Debian's ``metastudent-data`` (UniProt),
  found and trimmed with ANARCI's HMMs;
- :mod:`.composition`: residue and dipeptide Jensen–Shannon divergence to the real set (nats, as in
  arXiv 2605.20187) and the real set's split-half noise floor;
- :mod:`.numbering`: ANARCI (Dunbar & Deane 2016) on Debian's HMMER: does each sequence number as a
  heavy-chain variable domain, and how close is its nearest germline (species, identity);
- :mod:`.identity`: exact global-alignment identity: diversity within a set, novelty against the real set;
- :mod:`.humanness`: AntPack's human-repertoire log-likelihood (optional);
- :func:`.summary.judge_heavy_chains`: all of these for one generated set, as one dict.

The judge model's pseudo-log-likelihood is :func:`unmask.tasks.proteins.antibody.pseudo_log_likelihood`
(a protein model's token ids) or :func:`unmask.tasks.seq.pll.pseudo_log_likelihood` (any model's).
"""
