"""Small, dependency-free statistics for comparing timing samples."""
import math

# A later run counts as a regression when it is slower by more than this and the difference is significant.
REGRESSION_MIN_SLOWDOWN = 0.02
SIGNIFICANCE = 0.01


def ranks(values: list) -> list:
    """1-based ranks, ties sharing their average rank."""
    order = sorted(range(len(values)), key=values.__getitem__)
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


def mann_whitney_p(a: list, b: list) -> float:
    """Two-sided p-value of the Mann-Whitney U test (normal approximation with tie correction)."""
    n1, n2 = len(a), len(b)
    if n1 == 0 or n2 == 0:
        return 1.0
    combined = list(a) + list(b)
    r = ranks(combined)
    u1 = sum(r[:n1]) - n1 * (n1 + 1) / 2
    n = n1 + n2
    counts = {}
    for v in combined:
        counts[v] = counts.get(v, 0) + 1
    tie_term = sum(t ** 3 - t for t in counts.values()) / (n * (n - 1)) if n > 1 else 0.0
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
