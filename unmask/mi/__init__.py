"""Pairwise mutual information: exact ground truth (:mod:`.exact`), a neural estimator head
(:mod:`.estimator`, :mod:`.fit`, :mod:`.data`), MI-guided policies (:mod:`.policies`) and structure
scores of MI maps (:mod:`.maps`)."""

from unmask.mi import policies  # noqa: F401  (registers the mi, demask, research and oracle policies)
from unmask.mi.exact import ExactMI, exact_mi

__all__ = ["ExactMI", "exact_mi"]
