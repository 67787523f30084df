"""Tests for replay_cli.maths.level_axis: the level reductions give numpy's own bits."""

import numpy as np
import pytest

from replay_cli.maths.level_axis import level_cumsum, level_max, level_sum


@pytest.mark.parametrize("levels", [1, 2, 3, 4, 7, 8, 11])
def test_the_level_reductions_equal_numpys_bit_for_bit(levels):
    rng = np.random.default_rng(levels)
    x = rng.normal(size=(3, 50, levels)) * 10.0 ** rng.integers(-8, 8, size=(3, 50, levels))
    x[0, 0] = -np.inf  # an effort level of probability 0 has log-probability -inf
    x[1, 1, 0] = np.nan
    for keepdims in (False, True):
        np.testing.assert_array_equal(level_sum(x, keepdims), x.sum(-1, keepdims=keepdims))
        np.testing.assert_array_equal(level_max(x, keepdims), x.max(-1, keepdims=keepdims))
    np.testing.assert_array_equal(level_cumsum(x), np.cumsum(x, axis=-1))
    strided = x[:, ::2]  # a view, as the forecast reduces
    assert level_sum(strided).tobytes() == strided.sum(-1).tobytes()
