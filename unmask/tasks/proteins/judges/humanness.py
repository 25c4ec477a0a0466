"""Humanness: how likely a model of human antibodies finds a sequence, by AntPack (Parkinson & Wang 2024,
"For antibody sequence generative modeling, mixture models may be all you need", Bioinformatics 40:5):
a mixture model over IMGT-numbered positions fitted to human heavy and light chains of the Observed
Antibody Space.

AntPack numbers the sequence (IMGT) and returns log p(x) under its human model for that chain: higher is
more human (AntPack's own human heavy training set has a median of about -59.6). It is optional and
pinned to ``antpack==0.3.8.6.3``, the last release under GPL-3.0 that scores offline: from 0.3.9 on
AntPack is under an academic non-commercial licence and refuses to number anything without a licence
key registered interactively (``AntPack-setup``). The wheel carries its models (about 70 MB installed)
and needs only numpy.
"""

from __future__ import annotations

import torch

from unmask.errors import UnmaskError

ANTPACK_PIN = "antpack==0.3.8.6.3"  # the last GPL-3.0 release; later ones need a licence key


def humanness(sequences: list[str], mask_cdr3: bool = False) -> torch.Tensor:
    """``(N,)`` float64 AntPack log p(x) under its human model (NaN where AntPack finds no antibody chain);
    ``mask_cdr3``: leave IMGT CDR3 out of the score (CDR3 says little about species)."""
    try:
        from antpack import SequenceScoringTool
    except ImportError:
        raise UnmaskError(f"humanness needs AntPack: `pip install {ANTPACK_PIN}` (GPL-3.0; later releases need a "
                          "licence key)") from None
    if not sequences:
        return torch.empty(0, dtype=torch.float64)
    try:
        scores = SequenceScoringTool().score_seqs([s.upper() for s in sequences], mask_cdr3=mask_cdr3)
    except Exception as e:  # AntPack raises ValueError / RuntimeError with multi-line messages
        raise UnmaskError(f"AntPack failed ({type(e).__name__}): {(str(e).strip().splitlines() or [''])[0][:200]}") from None
    return torch.as_tensor(scores, dtype=torch.float64)
