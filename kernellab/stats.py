"""Small statistics for comparing timing samples (numpy only, which matplotlib brings)."""
import math

import numpy as np  # installed with matplotlib

# A later run counts as a regression when it is slower by more than this and the difference is significant.
REGRESSION_MIN_SLOWDOWN = 0.02
SIGNIFICANCE = 0.01


def ranks(values) -> "np.ndarray":
    """1-based ranks, ties sharing their average rank."""
    values = np.asarray(values, dtype=float)
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    # The tied block of the k-th distinct value spans ranks (starts[k], starts[k] + counts[k] - 1].
    starts = np.cumsum(counts) - counts
    return (starts + (counts + 1) / 2)[inverse]


def mann_whitney_p(a, b) -> float:
    """Two-sided p-value of the Mann-Whitney U test (normal approximation with tie correction)."""
    n1, n2 = len(a), len(b)
    if n1 == 0 or n2 == 0:
        return 1.0
    combined = np.concatenate([np.asarray(a, dtype=float), np.asarray(b, dtype=float)])
    r = ranks(combined)
    u1 = r[:n1].sum() - n1 * (n1 + 1) / 2
    n = n1 + n2
    _, counts = np.unique(combined, return_counts=True)
    tie_term = float((counts ** 3 - counts).sum()) / (n * (n - 1)) if n > 1 else 0.0
    variance = n1 * n2 / 12 * ((n + 1) - tie_term)
    if variance <= 0:
        return 1.0
    z = (abs(u1 - n1 * n2 / 2) - 0.5) / math.sqrt(variance)
    return math.erfc(max(z, 0.0) / math.sqrt(2))


def median(values: list) -> float:
    """The median of a non-empty list."""
    s = sorted(values)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


def significantly_slower(before: list, after: list) -> bool:
    """Whether `after` timings are slower than `before` by > 2% with p < 0.01."""
    if len(before) < 5 or len(after) < 5:
        return False
    slower = median(after) > median(before) * (1 + REGRESSION_MIN_SLOWDOWN)
    return slower and mann_whitney_p(before, after) < SIGNIFICANCE
