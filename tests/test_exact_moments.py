"""Tests for replay_cli.maths.exact_moments: float64 leave-one-out statistics without cancellation,
against exact rational arithmetic (fractions) on groups whose spreads go down to 1e-12."""

import math
from fractions import Fraction

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from factories import replay_frame, rollouts

EPS = 1e-6


def test_constant_peers_give_exactly_zero_std_in_float64():
    # The example: equal run times, lambda 1/120, the lone success's peers all equal.
    frame = rollouts(reward=[1.0, 0.0, 0.0, 0.0], openhands_run_time=[600.0] * 4)
    for guard in ("legacy", "trivial"):
        rows = replay_frame(
            frame, {"lambda_time": 1 / 120}, {"precision": "float64", "std_guard": guard}
        ).rows
        assert rows["std"][0] == 0.0
        assert rows["advantage"][0] == pytest.approx(1.0, abs=1e-15)
        assert rows["advantage"][1:].to_list() == pytest.approx([-1 / math.sqrt(3)] * 3, abs=1e-6)


@pytest.mark.parametrize("guard", ["legacy", "trivial"])
@pytest.mark.parametrize("peer", [0.95, 0.3, -0.0833333333333, 1e-12, 123.456])
def test_constant_peer_groups_never_explode(guard, peer):
    frame = rollouts(reward=[0.0] + [peer] * 7, resolved=[False] * 8)
    rows = replay_frame(
        frame, {"enabled": False}, {"precision": "float64", "std_guard": guard}
    ).rows
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
    rows = replay_frame(
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
    got = replay_frame(
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
    loo = replay_frame(
        frame, {"enabled": False}, {"precision": "float64", "exclude_masked": True}
    ).rows
    b = sum(valid) / 2
    q = sum(v * v for v in valid) / 2
    assert loo["baseline"][3] == pytest.approx(b)
    assert loo["std"][3] == pytest.approx(math.sqrt(max((q - b * b) * 2, 0.0)))
    assert loo.filter(pl.col("masked"))["advantage"][0] == pytest.approx(0.0 - b)
