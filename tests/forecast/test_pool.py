"""Tests for replay_cli.forecast.pool: a draw takes the problem's own cell, then its bucket's,
then the fallback, and a step's shared choices draw what each run would draw alone."""

import numpy as np

from replay_cli.forecast.pool import Pool


def test_the_pool_draws_the_problems_own_cell_then_its_buckets_then_the_fallback():
    rows = {
        "level": np.array([0, 1, 1, 0, 1]),
        "resolved": np.array([True, False, True, False, True]),
        "reward": np.array([1.0, 0.0, 1.0, 0.0, 0.7]),
        "minutes": np.array([1.0, 2.0, 3.0, 4.0, 5.0]),
        "calls": np.arange(5),
        "mask_sample": np.zeros(5, bool),
        "zeroed": np.zeros(5, bool),
    }
    # Rows 0-2 are problem 0 (bucket 1), rows 3-4 problem 1 (bucket 2).
    pool = Pool.of(rows, np.array([0, 0, 0, 1, 1]), np.array([1, 2]), 2, 2)
    u = np.array([0.0, 0.5, 0.99])

    def draw(problem, level, outcome):
        n = len(u)
        got = pool.draw(
            np.full(n, problem),
            np.full(n, [1, 2][problem]),
            np.full(n, level),
            np.full(n, outcome, bool),
            u,
        )
        return got["minutes"].tolist(), got["reward"].tolist()

    assert draw(0, 0, True) == ([1.0] * 3, [1.0] * 3)  # its own cell
    assert draw(0, 1, False) == ([2.0] * 3, [0.0] * 3)
    assert draw(1, 1, True) == ([5.0] * 3, [0.7] * 3)
    assert draw(1, 0, False) == ([4.0] * 3, [0.0] * 3)
    # Problem 1 never failed at level 1, nor did its bucket (2): a row of the bucket at that level
    # with the other outcome (row 4: its minutes are of level 1), with the bucket's mean reward
    # of failures (row 3's 0.0). Taking the neighbouring cell in sort order instead gave row 3,
    # a level-0 failure's minutes for a level-1 draw.
    assert draw(1, 1, False) == ([5.0] * 3, [0.0] * 3)
    # Problem 0 never failed at level 0, nor did bucket 1: row 0's minutes (level 0), and the
    # bucket's failure reward (row 1's 0.0).
    assert draw(0, 0, False) == ([1.0] * 3, [0.0] * 3)
    # A success drawn where only failures were logged: the success reward of the bucket (1.0).
    rows2 = {**rows, "resolved": np.array([False, False, True, False, True])}
    pool = Pool.of(rows2, np.array([0, 0, 0, 1, 1]), np.array([1, 2]), 2, 2)
    assert draw(0, 0, True) == ([1.0] * 3, [1.0] * 3)


def test_a_steps_shared_choices_draw_what_each_run_would_draw_alone():
    # A block of many runs gathers from the step's choices per (rollout, level, outcome); each
    # run drawing on its own must get the same rows, rewards and fallbacks.
    from replay_cli.forecast.pool import Choices

    rng = np.random.default_rng(3)
    n = 400
    rows = {
        "level": rng.integers(0, 3, n),
        "resolved": rng.random(n) < 0.4,
        "reward": rng.random(n),
        "minutes": rng.random(n) * 30,
        "calls": rng.integers(0, 50, n),
        "mask_sample": rng.random(n) < 0.1,
        "zeroed": rng.random(n) < 0.05,
    }
    problem = rng.integers(0, 20, n)
    bucket_of = rng.integers(0, 3, 20)
    pool = Pool.of(rows, problem, bucket_of, 3, 20)
    local = rng.integers(0, 20, 50)
    u = rng.random(50)
    choices = Choices.of(pool, local, bucket_of[local], u)
    level = rng.integers(0, 3, (7, 50))
    outcome = rng.random((7, 50)) < 0.5
    shared = choices.values(pool, level, outcome)
    alone = pool.draw(
        np.tile(local, 7),
        np.tile(bucket_of[local], 7),
        level.ravel(),
        outcome.ravel(),
        np.tile(u, 7),
    )
    assert shared.keys() == alone.keys()
    for k in alone:
        np.testing.assert_array_equal(shared[k], alone[k], err_msg=k)
