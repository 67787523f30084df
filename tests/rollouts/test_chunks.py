"""Tests for replay_cli.rollouts.chunks: chunks of whole steps at the size limit, the order and
run-start tests the engine relies on, and the step counts (a null step last)."""

import polars as pl
import pytest

from replay_cli.rollouts.chunks import in_order, plan_chunks, run_starts, step_counts


def counts(*pairs):
    return pl.DataFrame(pairs, schema={"step": pl.Int64, "len": pl.UInt32}, orient="row")


@pytest.mark.parametrize(
    ("limit", "want"),
    [
        (6, [(1, 2), (3, 3)]),  # 3 + 3 fills 6 exactly: one chunk
        (5, [(1, 1), (2, 2), (3, 3)]),
        (9, [(1, 3)]),
        (2, [(1, 1), (2, 2), (3, 3)]),  # a step larger than the limit is a chunk alone
    ],
)
def test_chunks_are_whole_steps_filled_up_to_the_limit(limit, want):
    assert plan_chunks(counts((1, 3), (2, 3), (3, 3)), limit) == want


def test_a_chunk_after_a_full_one_counts_from_zero():
    steps = counts((1, 3), (2, 3), (3, 3), (4, 3))
    assert plan_chunks(steps, 6) == [(1, 2), (3, 4)]


def test_a_first_step_that_fills_the_limit_alone_is_its_own_chunk():
    assert plan_chunks(counts((0, 4), (1, 1)), 4) == [(0, 0), (1, 1)]
    assert plan_chunks(counts((None, 5), (2, 1)), 4) == [(2, 2)]  # a null step is no chunk


@pytest.mark.parametrize(
    ("rows", "sorted_"),
    [
        ([(1, 1), (1, 1), (1, 2), (2, 0)], True),  # ties allowed
        ([(1, 2), (1, 1)], False),
        ([(2, 0), (1, 5)], False),
        ([(1, 5), (2, 0)], True),  # the first key decides, whatever the second does
        ([(3, 3)], True),
    ],
)
def test_in_order_is_lexicographic_with_ties(rows, sorted_):
    df = pl.DataFrame(rows, schema=["a", "b"], orient="row")
    assert in_order(df, ["a", "b"]) is sorted_


def test_run_starts_mark_the_first_row_of_each_run():
    df = pl.DataFrame({"a": [1, 1, 2, 2, 1], "b": [0, 0, 0, 1, 1]})
    assert df.select(run_starts(["a", "b"]))["a"].to_list() == [True, False, True, True, True]


def test_step_counts_put_a_null_step_last():
    frame = pl.LazyFrame({"step": [2, None, 1, 2]})
    assert step_counts(frame).rows() == [(1, 1), (2, 2), (None, 1)]
