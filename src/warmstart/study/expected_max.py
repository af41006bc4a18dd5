"""The expected best validation score of a search as a function of the number of trials (Dodge et al. 2019,
"Show Your Work: Improved Reporting of Experimental Results", section 3).

Given the validation scores v of n trials, the best of k trials drawn from them with replacement has the
empirical distribution P(max <= v_(i)) = (i/n)^k, v_(1) <= ... <= v_(n) sorted ascending. So

    E[max of k] = sum_i v_(i) * ((i/n)^k - ((i-1)/n)^k)

and its variance is E[max^2] - E[max]^2 with the same weights. This is the paper's estimator (with
replacement, the empirical CDF of the observed scores); it is exact for k = 1 (the mean) and tends to the
observed best as k grows. For a metric where lower is better, the best is the minimum: the scores are
negated, the curve computed, and negated back.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def expected_max(scores: Sequence[float], ks: Sequence[int] | None = None, lower_is_better: bool = False):
    """(ks, means, stds): the expected best of k trials and its standard deviation, for each k in ``ks``
    (default 1..len(scores)). Empty ``scores`` give empty lists."""
    values = np.sort(
        np.asarray([float(s) for s in scores], dtype=np.float64) * (-1 if lower_is_better else 1)
    )
    n = len(values)
    ks = list(range(1, n + 1)) if ks is None else [int(k) for k in ks]
    if n == 0:
        return ks, [], []
    i = np.arange(1, n + 1)
    means, stds = [], []
    for k in ks:
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        weights = (i / n) ** k - ((i - 1) / n) ** k
        mean = float(np.dot(weights, values))
        second = float(np.dot(weights, values**2))
        means.append(-mean if lower_is_better else mean)
        stds.append(float(np.sqrt(max(second - mean**2, 0.0))))
    return ks, means, stds
