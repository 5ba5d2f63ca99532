"""Interleaved timing rounds for the Python benchmarks (call_overhead.py,
train_step.py): every variant once per round, so the machine's drift
reaches all of them alike; each variant's median with its spread, and the
median ratio of two variants within a round.

    rounds = interleaved([lambda: time_a(), lambda: time_b()])
    cells(rounds, digits=2)       # ["  1.00 (0.90-1.20)", ...]
    median_ratio(rounds, 0, 1)    # a's time over b's, round by round
"""

import statistics


def interleaved(measures, rounds=5):
    """Each measure called once per round, `rounds` times: a list of rounds,
    each the measures' results in order."""
    return [[m() for m in measures] for _ in range(rounds)]


def cells(rounds, digits):
    """Per variant, "median (min-max)" of its results over the rounds."""
    out = []
    for k in range(len(rounds[0])):
        xs = [r[k] for r in rounds]
        out.append(f"{statistics.median(xs):8.{digits}f} ({min(xs):.{digits}f}-{max(xs):.{digits}f})")
    return out


def median_ratio(rounds, a, b):
    """The median over rounds of variant a's result over variant b's."""
    return statistics.median(r[a] / r[b] for r in rounds)
