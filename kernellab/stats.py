"""Small statistics for comparing timing samples (numpy only, which matplotlib brings)."""
import math

import numpy as np  # installed with matplotlib

# A later run counts as a regression when it is slower by more than this and the difference is significant.
REGRESSION_MIN_SLOWDOWN = 0.02
SIGNIFICANCE = 0.01


def mann_whitney_p(a, b) -> float:
    """Two-sided p-value of the Mann-Whitney U test (normal approximation with tie correction)."""
    n1, n2 = len(a), len(b)
    if n1 == 0 or n2 == 0:
        return 1.0
    a, b = np.sort(np.asarray(a, dtype=float)), np.sort(np.asarray(b, dtype=float))
    # U1 counts the pairs (x from a, y from b) with x > y, a tie as half: two binary searches per
    # x rather than ranking the pooled samples. Halves and whole numbers: exact in floats.
    u1 = (np.searchsorted(b, a, "left").sum() + np.searchsorted(b, a, "right").sum()) / 2
    n = n1 + n2
    _, counts = np.unique(np.concatenate([a, b]), return_counts=True)
    tie_term = float((counts ** 3 - counts).sum()) / (n * (n - 1)) if n > 1 else 0.0
    variance = n1 * n2 / 12 * ((n + 1) - tie_term)
    if variance <= 0:
        return 1.0
    z = (abs(u1 - n1 * n2 / 2) - 0.5) / math.sqrt(variance)
    return math.erfc(max(z, 0.0) / math.sqrt(2))


def median(values) -> float:
    """The median of a non-empty list (or numpy array)."""
    return median_of_sorted(np.sort(values) if isinstance(values, np.ndarray) else sorted(values))


def median_of_sorted(s) -> float:
    """The median of a non-empty sequence already in order."""
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


def significantly_slower(before: list, after: list) -> bool:
    """Whether `after` timings are slower than `before` by > 2% with p < 0.01."""
    if len(before) < 5 or len(after) < 5:
        return False
    slower = median(after) > median(before) * (1 + REGRESSION_MIN_SLOWDOWN)
    return slower and mann_whitney_p(before, after) < SIGNIFICANCE
