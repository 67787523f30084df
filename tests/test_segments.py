"""Tests for replay_cli.maths.segments: per-run reductions over rows sorted by group."""

import numpy as np

from replay_cli.maths.segments import Runs


def test_extreme_is_null_only_for_runs_without_rows_even_with_infinite_values():
    runs = Runs(np.array([0, 0, 1, 1, 2]))
    x = np.array([np.inf, 1.0, 2.0, 3.0, 4.0])
    where = np.array([True, False, False, False, True])
    assert runs.extreme("min", x, where).to_list() == [np.inf, None, 4.0]
    assert runs.extreme("max", -x, where).to_list() == [-np.inf, None, -4.0]
    assert runs.extreme("max", x, np.zeros(5, dtype=bool)).to_list() == [None, None, None]
