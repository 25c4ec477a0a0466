"""Pairwise mutual information: exact ground truth (:mod:`.exact`), a neural estimator, MI maps."""

from unmask.mi.exact import ExactMI, exact_mi

__all__ = ["ExactMI", "exact_mi"]
