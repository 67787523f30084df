"""Tests for replay_cli.maths.exact_moments: float64 leave-one-out statistics without cancellation,
against exact rational arithmetic (fractions) on groups whose spreads go down to 1e-12."""

import math
from fractions import Fraction

import polars as pl
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from factories import replay_rows, rollouts

EPS = 1e-6


def test_constant_peers_give_exactly_zero_std_in_float64():
    # The example: equal run times, lambda 1/120, the lone success's peers all equal.
    frame = rollouts(reward=[1.0, 0.0, 0.0, 0.0], openhands_run_time=[600.0] * 4)
    for guard in ("legacy", "trivial"):
        rows = replay_rows(
            frame, {"lambda_time": 1 / 120}, {"precision": "float64", "std_guard": guard}
        ).rows
        assert rows["std"][0] == 0.0
        assert rows["advantage"][0] == pytest.approx(1.0, abs=1e-15)
        assert rows["advantage"][1:].to_list() == pytest.approx([-1 / math.sqrt(3)] * 3, abs=1e-6)


@pytest.mark.parametrize("guard", ["legacy", "trivial"])
@pytest.mark.parametrize("peer", [0.95, 0.3, -0.0833333333333, 1e-12, 123.456])
def test_constant_peer_groups_never_explode(guard, peer):
    frame = rollouts(reward=[0.0] + [peer] * 7, resolved=[False] * 8)
    rows = replay_rows(frame, {"enabled": False}, {"precision": "float64", "std_guard": guard}).rows
    assert rows["std"][0] == 0.0
    assert rows["advantage"][0] == pytest.approx(-peer, rel=1e-15)


def reference_loo(values):
    """Exact leave-one-out (baseline, std, r - baseline) per row from Fractions."""
    exact = [Fraction(v) for v in values]
    out = []
    for i, r in enumerate(exact):
        peers = exact[:i] + exact[i + 1 :]
        m = len(peers)
        b = sum(peers) / m
        var = sum((p - b) ** 2 for p in peers) / (m - 1)
        out.append((float(b), math.sqrt(float(var)), float(r - b)))
    return out


@settings(max_examples=150, deadline=None)
@given(
    base=st.floats(-2.0, 2.0),
    spread_exp=st.integers(-12, -1),
    steps=st.lists(st.integers(0, 4), min_size=3, max_size=9),
    outlier=st.one_of(st.none(), st.floats(-3.0, 3.0)),
)
def test_float64_matches_exact_arithmetic(base, spread_exp, steps, outlier):
    spread = 10.0**spread_exp
    values = [base + k * spread for k in steps]
    if outlier is not None:
        values[0] = outlier
    frame = rollouts(reward=values, resolved=[False] * len(values))
    rows = replay_rows(
        frame, {"enabled": False}, {"precision": "float64", "std_guard": "legacy"}
    ).rows
    for i, (b, sd, diff) in enumerate(reference_loo(values)):
        assert rows["baseline"][i] == pytest.approx(b, rel=1e-12, abs=1e-15)
        # The std keeps its relative precision however small the spread; an advantage is exact
        # to 1e-12 (rounding the inputs' differences costs a few ulps of the values).
        if sd == 0.0:
            assert rows["std"][i] == 0.0
            assert rows["advantage"][i] == pytest.approx(diff, rel=1e-9, abs=1e-12)
        else:
            assert rows["std"][i] == pytest.approx(sd, rel=1e-9)
            assert rows["advantage"][i] == pytest.approx(diff / (sd + EPS), rel=1e-9, abs=1e-12)


def test_mean_baseline_and_masked_rows_in_float64():
    frame = rollouts(reward=[1.0, 0.25, 0.25, 0.0], mask_sample=[False, False, False, True])
    got = replay_rows(
        frame,
        {"enabled": False},
        {"precision": "float64", "baseline": "mean", "exclude_masked": True},
    ).rows
    valid = [1.0, 0.25, 0.25]
    mean = sum(valid) / 3
    std = math.sqrt(sum((v - mean) ** 2 for v in valid) / 2)
    assert got["baseline"].to_list() == pytest.approx([mean] * 4)
    assert got["std"].to_list() == pytest.approx([std] * 4)
    # LOO with the masked row excluded: the masked row's peers are the three valid rows, divided
    # by n - 1 = 2 as the trainer does.
    loo = replay_rows(
        frame, {"enabled": False}, {"precision": "float64", "exclude_masked": True}
    ).rows
    b = sum(valid) / 2
    q = sum(v * v for v in valid) / 2
    assert loo["baseline"][3] == pytest.approx(b)
    assert loo["std"][3] == pytest.approx(math.sqrt(max((q - b * b) * 2, 0.0)))
    assert loo.filter(pl.col("masked"))["advantage"][0] == pytest.approx(0.0 - b)


def trainer_moments(values, valid, loo):
    """Exact (baseline, std) per row of one group, as the trainer defines them: a valid row's
    peers are the other valid rows (LOO) or all of them (mean); an invalid row's sums run over all
    valid rows but are divided by the peer count m of a valid row, std = sqrt((q - b²)·m/(m-1))."""
    x = [Fraction(v) for v in values]
    n = sum(valid)
    out = []
    for i, r in enumerate(x):
        if n <= 1:
            out.append((float(r), 0.0))
            continue
        m = n - 1 if loo else n
        if valid[i] or not loo:
            peers = [p for j, p in enumerate(x) if valid[j] and (j != i or not loo)]
            b = sum(peers) / m
            var = sum((p - b) ** 2 for p in peers) / (m - 1) if m > 1 else Fraction(0)
        else:
            peers = [p for j, p in enumerate(x) if valid[j]]
            b = sum(peers) / m
            var = (sum(p * p for p in peers) / m - b * b) * m / (m - 1) if m > 1 else Fraction(0)
        out.append((float(b), math.sqrt(max(float(var), 0.0))))
    return out


@settings(max_examples=120, deadline=None)
@given(
    groups=st.lists(
        st.lists(st.tuples(st.floats(-3.0, 3.0), st.booleans()), min_size=1, max_size=6),
        min_size=1,
        max_size=6,
    ),
    loo=st.booleans(),
)
def test_float64_moments_of_many_groups_with_masked_rows_match_the_trainer(groups, loo):
    # Several groups share a length (one block), with masked rows excluded from the votes: every
    # row's baseline and std equal the exact ones of its own group, masked rows included.
    values = [v for g in groups for v, _ in g]
    masked = [m for g in groups for _, m in g]
    gids = [k for k, g in enumerate(groups) for _ in g]
    frame = rollouts(
        reward=values, resolved=[False] * len(values), mask_sample=masked, group_id=gids
    )
    rows = replay_rows(
        frame,
        {"enabled": False},
        {"precision": "float64", "exclude_masked": True, "baseline": "loo" if loo else "mean"},
    ).rows.sort("source_row")
    want = [
        moment
        for g in groups
        for moment in trainer_moments([v for v, _ in g], [not m for _, m in g], loo)
    ]
    for i, (b, sd) in enumerate(want):
        assert rows["baseline"][i] == pytest.approx(b, rel=1e-12, abs=1e-12), (i, groups)
        # An invalid row's std is the trainer's subtraction, a residue of ~1e-8 where exact is 0.
        assert rows["std"][i] == pytest.approx(sd, rel=1e-9, abs=1e-7), (i, groups)


@settings(max_examples=80, deadline=None)
@example(peer=0.3, odd=2.5, length=3, where=1, other=[0.0, 1.0, 2.0])  # the odd row second
@example(peer=0.7, odd=0.1, length=4, where=1, other=[0.0, 1.0, 2.0])
@example(peer=0.3, odd=0.0, length=4, where=0, other=[0.5, 0.5, 0.5])  # the odd row first
@given(
    peer=st.floats(-3.0, 3.0),
    odd=st.floats(-3.0, 3.0),
    length=st.integers(3, 9),
    where=st.integers(0, 8),
    other=st.lists(st.floats(-3.0, 3.0), min_size=3, max_size=9),
)
def test_a_rows_equal_peers_give_exactly_zero_std_wherever_it_sits(peer, odd, length, where, other):
    # The shift that makes equal peers exact zeros must be one of the row's own peers whichever
    # position the odd row holds (first, second or later), beside another group of any values.
    group = [peer] * length
    group[where % length] = odd
    values = group + other
    gids = [0] * length + [1] * len(other)
    frame = rollouts(reward=values, resolved=[False] * len(values), group_id=gids)
    rows = replay_rows(
        frame, {"enabled": False}, {"precision": "float64", "std_guard": "legacy"}
    ).rows.sort("source_row")
    assert rows["std"][where % length] == 0.0
    assert rows["baseline"][where % length] == peer
