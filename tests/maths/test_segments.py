"""Tests for replay_cli.maths.segments: per-run reductions over rows sorted by group."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from replay_cli.maths.segments import Runs, masked_fill


def test_extreme_is_null_only_for_runs_without_rows_even_with_infinite_values():
    runs = Runs(np.array([0, 0, 1, 1, 2]))
    x = np.array([np.inf, 1.0, 2.0, 3.0, 4.0])
    where = np.array([True, False, False, False, True])
    assert runs.extreme("min", x, where).to_list() == [np.inf, None, 4.0]
    assert runs.extreme("max", -x, where).to_list() == [-np.inf, None, -4.0]
    assert runs.extreme("max", x, np.zeros(5, dtype=bool)).to_list() == [None, None, None]


def test_the_reductions_of_every_run():
    runs = Runs(np.array([3, 3, 3, 7, 9, 9]))
    x = np.array([[1.0, -2.0, 5.0, 4.0, 0.5, 0.25], [0.0, 1.0, 2.0, -3.0, 6.0, -6.0]])
    where = np.array([True, False, True, False, True, True])
    assert runs.lengths.tolist() == [3, 1, 2]
    assert runs.sum(x).tolist() == [[4.0, 4.0, 0.75], [3.0, -3.0, 0.0]]
    assert runs.sum(where).tolist() == [2, 0, 2]
    assert runs.sum(where).dtype == np.int64
    assert runs.mean(x[0]).tolist() == [4 / 3, 4.0, 0.375]
    assert runs.top(x, where).tolist() == [[5.0, -np.inf, 0.5], [2.0, -np.inf, 6.0]]
    assert runs.low(x, where).tolist() == [[1.0, np.inf, 0.25], [0.0, np.inf, -6.0]]
    lo, hi = runs.bounds(x, where)
    assert lo.tolist() == [[1.0, np.inf, 0.25], [0.0, np.inf, -6.0]]
    assert hi.tolist() == [[5.0, -np.inf, 0.5], [2.0, -np.inf, 6.0]]
    assert runs.rows(np.array([10, 20, 30])).tolist() == [10, 10, 10, 20, 30, 30]
    assert runs.extreme("min", x[0]).to_list() == [-2.0, 4.0, 0.25]
    assert runs.extreme("max", x[0], where).to_list() == [5.0, None, 0.5]


def test_bounds_keep_float32_and_take_integers_as_float64():
    runs = Runs(np.array([0, 0, 1]))
    lo, hi = runs.bounds(np.array([0.1, 0.2, 0.3], dtype=np.float32))
    assert lo.dtype == hi.dtype == np.float32
    assert lo.tolist() == [np.float32(0.1), np.float32(0.3)]
    lo, hi = runs.bounds(np.array([4, 2, 9]), np.array([True, True, False]))
    assert lo.dtype == np.float64
    assert lo.tolist() == [2.0, np.inf]
    assert hi.tolist() == [4.0, -np.inf]


def test_no_rows_give_empty_reductions_of_the_right_shape():
    runs = Runs(np.array([], dtype=np.int64))
    x = np.zeros((3, 0))
    assert len(runs) == 0
    assert runs.sum(x).shape == (3, 0)
    assert runs.sum(np.zeros(0, bool)).dtype == np.int64
    assert runs.top(x).shape == runs.low(x).shape == (3, 0)
    assert [b.shape for b in runs.bounds(x)] == [(3, 0), (3, 0)]
    assert runs.extreme("max", np.zeros(0)).len() == 0


def test_masked_fill_with_a_shared_mask_equals_the_plain_where_for_every_fill():
    # The penalty shortcut holds only for an infinite fill; a finite fill takes np.where.
    x = np.array([[1.5, -2.0, 3.0], [4.0, 5.0, -6.0]])
    for where in (np.array([True, False, True]), np.array([[False, True, True]])):
        for fill in (np.inf, -np.inf, 0.0, -1.0):
            want = np.where(np.broadcast_to(where, x.shape), x, fill)
            assert masked_fill(x, where, fill).tolist() == want.tolist(), (where, fill)
    assert masked_fill(x, None, 0.0) is x


@given(
    lengths=st.lists(st.integers(1, 9), max_size=12),
    width=st.integers(1, 20),
)
def test_blocks_cover_every_run_once_in_order_and_never_cut_one(lengths, width):
    ids = np.repeat(np.arange(len(lengths)), lengths)
    runs = Runs(ids)
    covered, seen = 0, []
    for rows, block in runs.blocks(width):
        assert rows.start == covered  # back to back from row 0
        assert (
            block.starts.tolist()
            == (runs.starts[len(seen) : len(seen) + len(block)] - covered).tolist()
        )
        seen += block.lengths.tolist()
        size = rows.stop - rows.start
        assert size == block.lengths.sum()
        assert size <= width or len(block) == 1  # over the width only for a single long run
        covered = rows.stop
    assert covered == len(ids)
    assert seen == lengths
