"""Tests for replay_cli.segments: per-group reductions must equal polars' windows exactly."""

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_series_equal

from replay_cli.segments import Runs, over

rows = st.lists(
    st.tuples(
        st.integers(0, 4),  # group id
        st.one_of(st.none(), st.sampled_from([0.0, 1.0, -0.5, 0.1, 0.2, 1e-7, 3.0])),
    ),
    max_size=40,
)


@pytest.mark.parametrize("how", ["sum", "min", "max"])
@given(data=rows, presorted=st.booleans())
@settings(max_examples=60, deadline=None)
def test_over_equals_polars_window(how, data, presorted):
    if presorted:
        data = sorted(data, key=lambda r: r[0])
    df = pl.DataFrame(data, schema={"g": pl.Int64, "v": pl.Float64}, orient="row")
    expected = df.select(getattr(pl.col("v"), how)().over("g")).to_series()
    got = df.select(over(pl.col("v"), "g", how, pl.Float64())).to_series()
    # Sums of a few values may differ from polars' in the last bit only (order of additions).
    assert_series_equal(got, expected, check_names=False, abs_tol=1e-12)


def test_over_keeps_row_order_and_nulls_for_empty_groups():
    df = pl.DataFrame({"g": [2, 1, 2, 1, 3], "v": [1.0, None, 5.0, None, 4.0]})
    got = df.select(
        over(pl.col("v"), "g", "sum", pl.Float64()).alias("s"),
        over(pl.col("v"), "g", "max", pl.Float64()).alias("hi"),
        over(pl.col("v").is_not_null().cast(pl.Int64), "g", "sum", pl.Int64()).alias("n"),
    )
    assert got["s"].to_list() == [6.0, 0.0, 6.0, 0.0, 4.0]
    assert got["hi"].to_list() == [5.0, None, 5.0, None, 4.0]
    assert got["n"].to_list() == [2, 0, 2, 0, 1]
    assert got["n"].dtype == pl.Int64


def test_over_on_no_rows():
    df = pl.DataFrame({"g": [], "v": []}, schema={"g": pl.Int64, "v": pl.Float32})
    got = df.select(over(pl.col("v"), "g", "min", pl.Float32()))
    assert got.height == 0
    assert got.to_series().dtype == pl.Float32


def test_extreme_is_null_only_for_runs_without_rows_even_with_infinite_values():
    runs = Runs(np.array([0, 0, 1, 1, 2]))
    x = np.array([np.inf, 1.0, 2.0, 3.0, 4.0])
    where = np.array([True, False, False, False, True])
    assert runs.extreme("min", x, where).to_list() == [np.inf, None, 4.0]
    assert runs.extreme("max", -x, where).to_list() == [-np.inf, None, -4.0]
    assert runs.extreme("max", x, np.zeros(5, dtype=bool)).to_list() == [None, None, None]
