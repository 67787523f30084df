"""Tests for replay_cli.maths.rounding: the per-row float32 bound contains the trainer's own
float32 advantages from three platforms (tests/fixtures/float32_platforms, a subsample every clone
runs, and the full ../shared/fixtures/float32_platforms where it exists) for every row of
every config, in float32 and in float64 mode, and is tight where the platforms agree."""

import json
import math

import numpy as np
import polars as pl
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from replay_cli.config import AdvantageParams
from replay_cli.engine.run import run_replay
from replay_cli.maths import grpo_arrays, rounding
from replay_cli.maths.grpo_arrays import peers_all_equal
from replay_cli.maths.rounding import f32_bound
from replay_cli.maths.segments import Runs
from replay_cli.parameters import parse_value, to_config
from replay_cli.rollouts.validation import rollouts_from_frame

from float32_fixture import SETS, fixture_dir


def parse_flags_for_tests(flags: str):
    """A config from the fixture's replay-cli flags (`--name value` pairs)."""
    words = flags.split()
    flat = {
        words[i][2:].replace("-", "_"): parse_value(words[i][2:].replace("-", "_"), words[i + 1])
        for i in range(0, len(words), 2)
    }
    return to_config(flat)


@pytest.fixture(scope="module", params=list(SETS))
def fixture(request):
    """(rollouts, the platforms' advantages, configs) of the shipped subsample and the full set."""
    path = fixture_dir(request.param)
    rollouts = pl.read_parquet(path / "rollouts.parquet").with_row_index("fixture_row")
    real = pl.read_parquet(path / "real_advantages.parquet").rename({"source_row": "fixture_row"})
    configs = json.loads((path / "configs.json").read_text())
    return rollouts, real, configs


@pytest.mark.parametrize("precision", ["float32", "float64"])
def test_every_platforms_value_is_inside_the_bound(fixture, precision):
    rollouts, real, configs = fixture
    built = {
        name: parse_flags_for_tests(
            flags.replace("--precision float32", f"--precision {precision}")
        )
        for name, flags in configs.items()
    }
    result = run_replay(rollouts_from_frame(rollouts), list(built.values()))
    rows = result.rows.filter(pl.col("split") != "validation")
    for name, cfg in built.items():
        mine = rows.filter(pl.col("config_id") == cfg.config_id).select(
            "fixture_row", "reward_shaped", "advantage_unclipped", "advantage_f32_bound"
        )
        joined = real.filter(pl.col("config") == name).join(mine, on="fixture_row", suffix="_ours")
        assert joined.height == real.filter(pl.col("config") == name).height
        # The rewards the trainer saw are ours, rounded to float32.
        assert (joined["reward_shaped"] == joined["reward_shaped_ours"].cast(pl.Float32)).all()
        diff = (joined["advantage"].cast(pl.Float64) - joined["advantage_unclipped"]).abs()
        outside = joined.filter(diff > joined["advantage_f32_bound"])
        assert outside.height == 0, (name, outside.head(3))
        # And the bound is reached: in every setting some platform's value lies past half of it
        # (with three terms a group of four's worst order is one a platform takes: all of it).
        bounded = joined["advantage_f32_bound"] > 0
        reached = (diff.filter(bounded) / joined["advantage_f32_bound"].filter(bounded)).max()
        assert reached > 0.5, (name, reached)
        if precision == "float32" and name == "loo_off":
            # Shaping off (rewards 0 and 1, exact sums): only the hand-made residue row is loose.
            loose = mine.filter(
                pl.col("advantage_f32_bound")
                > 1e-3 * pl.max_horizontal(1.0, pl.col("advantage_unclipped").abs())
            )
            assert loose.height == 1
            assert loose["advantage_f32_bound"][0] > 1000  # the -2075 of PR #4158 and the -0.95


# The tightness target: the share of rows the bound leaves undecided at 1e-3 relative is at
# most twice the share where the platforms really differ by that much, plus a point. The shipped
# subsample's 120 random groups happen to hold fewer rows that differ than the full set (small-λ
# `correct`: 1.8% against 3.2%) while the bound flags as many (6.6% against 7.1%), so its
# allowance is four points. The bound before 2026-12-07 flagged 15.5% of the full set's small-λ
# rows (target 7.3%) and 17.1% of the subsample's (7.6% with the four points): both fail here
# (docs/semantics.md, "float32 rounding bound").
ALLOWANCE = {"shipped": 0.04, "full": 0.01}


@pytest.fixture(scope="module")
def replayed(fixture):
    """The fixture's replay in float32 mode: every config's training rows."""
    rollouts, _, configs = fixture
    built = {name: parse_flags_for_tests(flags) for name, flags in configs.items()}
    rows = run_replay(rollouts_from_frame(rollouts), list(built.values())).rows
    rows = rows.filter(pl.col("split") != "validation")
    return {name: rows.filter(pl.col("config_id") == cfg.config_id) for name, cfg in built.items()}


@pytest.mark.parametrize(
    "config", ["loo_all", "loo_correct", "mean_all", "loo_off", "loo_small_lambda"]
)
def test_tight_where_the_platforms_agree(request, fixture, replayed, config):
    """Outside rows where the platforms disagree by more than 1e-3 relative, the bound is loose
    only where the worst case over summation orders really reaches that far."""
    _, real, _ = fixture
    rows = replayed[config]
    bound = rows["advantage_f32_bound"].to_numpy()
    adv = np.abs(rows["advantage_unclipped"].to_numpy())
    loose = float((bound > 1e-3 * np.maximum(1.0, adv)).mean())
    wide = real.filter(pl.col("config") == config).pivot(
        on="platform", index="fixture_row", values="advantage"
    )
    values = wide.drop("fixture_row").to_numpy().astype(np.float64)
    spread = values.max(axis=1) - values.min(axis=1)
    disagree = float((spread > 1e-3 * np.maximum(1.0, np.abs(values).max(axis=1))).mean())
    allowance = ALLOWANCE[request.node.callspec.params["fixture"]]
    assert loose <= 2 * disagree + allowance, (config, loose, disagree)


def test_verify_accepts_every_platforms_float32_log_and_flags_a_moved_row(fixture, tmp_path):
    """Dumps whose advantages are a platform's real float32 values (steps 1-10 of the fixture):
    the true setting reproduces each of them with no differing row, the wrong baseline does not,
    and a row moved by 1e-3 relative where its bound is far smaller is flagged."""
    from replay_cli.analysis.verify import verify
    from replay_cli.io.train_data import read_train_data

    from writers import write_train_data

    rollouts, real, _ = fixture
    train = rollouts.filter((pl.col("step") <= 10) & (pl.col("split") == "train")).with_columns(
        # The dumps' prompts stand for groups: an integer per (step, group_id).
        pl.col("group_id").rank("dense").over("step").cast(pl.Int64)
    )
    for config, baseline in (("loo_all", "loo"), ("mean_all", "mean"), ("loo_off", "loo")):
        for platform in real["platform"].unique().sort():
            logged = real.filter((pl.col("config") == config) & (pl.col("platform") == platform))
            rows = train.join(logged, on="fixture_row").select(
                "step",
                "group_id",
                "rollout_index",
                pl.col("reward_shaped").cast(pl.Float64),
                pl.col("advantage").cast(pl.Float64),
                pl.lit(False).alias("masked"),
            )
            paths = write_train_data(rows, tmp_path / f"{config}-{platform[:6]}")
            result = verify(read_train_data(paths))
            candidates = result.candidates
            true = candidates.filter(
                (pl.col("baseline") == baseline)
                & pl.col("normalize")
                & (pl.col("std_guard") == "legacy")
                & pl.col("clip_low").is_null()
                & ~pl.col("exclude_masked")
            )
            assert true["differing_rows"][0] == 0, (config, platform)
            assert result.best["baseline"] == baseline
            wrong = candidates.filter(pl.col("baseline") != baseline)
            assert (wrong["differing_rows"] > 0).all()
    # One row moved by 1e-3 relative, where the platforms agree to far better than that.
    logged = real.filter(
        (pl.col("config") == "loo_all") & pl.col("platform").str.starts_with("x86")
    )
    rows = train.join(logged, on="fixture_row").sort("fixture_row")
    target = rows.filter((pl.col("advantage").abs() > 0.5) & (pl.col("advantage").abs() < 3))[
        "fixture_row"
    ][0]
    moved = rows.with_columns(
        pl.when(pl.col("fixture_row") == target)
        .then(pl.col("advantage") * 1.001)
        .otherwise(pl.col("advantage"))
        .cast(pl.Float64)
    ).select(
        "step",
        "group_id",
        "rollout_index",
        pl.col("reward_shaped").cast(pl.Float64),
        "advantage",
        pl.lit(False).alias("masked"),
    )
    result = verify(read_train_data(write_train_data(moved, tmp_path / "moved")))
    assert result.best["differing_rows"] == 1
    assert result.differing.height == 1
    assert result.differing["bound"][0] < 1e-4 * abs(result.differing["logged_advantage"][0])


def test_platform_dependent_rows_in_the_summary(fixture):
    """fragile_std_frac is the share of rows whose bound passes 1e-3 relative; the explosion
    shares and the largest |A| come as what holds on every platform and what some platform can
    reach, around the emitted value."""
    rollouts, _, configs = fixture
    cfg = parse_flags_for_tests(configs["loo_off"])
    result = run_replay(rollouts_from_frame(rollouts), [cfg])
    rows = result.rows.filter(
        pl.col("advantage_f32_bound").is_not_null() & ~pl.col("masked") & pl.col("kept")
    )  # the trainable rows, which the summary's shares count
    s = result.summary.row(0, named=True)
    rel = rows["advantage_f32_bound"] > 1e-3 * np.maximum(1.0, rows["advantage_unclipped"].abs())
    assert s["adv/fragile_std_frac"] == pytest.approx(float(rel.mean()))
    assert s["adv/explosion_certain_frac"] <= s["adv/explosion_trained_frac"]
    assert s["adv/explosion_trained_frac"] <= s["adv/explosion_possible_frac"]
    assert s["adv/abs_max_low"] <= s["adv/abs_max"] <= s["adv/abs_max_high"]
    # Shaping off: only the residue row is platform-dependent, and it can explode on some
    # platforms (-2075) but not on every one (-0.95).
    undecided = s["adv/explosion_possible_frac"] - s["adv/explosion_certain_frac"]
    assert undecided * rows.height == pytest.approx(1)
    assert s["adv/abs_max_high"] > 1000


# ---- the sums: any summation tree lies within tree_error -----------------------------------------

U = 2.0**-24


def _gamma(j):
    j = max(j, 0)
    return j * U / (1 - j * U)


def _half_ulp(y):
    """Half the float32 spacing at y > 0 (2^-150 below the normal range)."""
    return 2.0 ** max(math.frexp(y)[1] - 25, -150) if y > 0 else 0.0


def tree_bound(top, total, k):
    """The derivation's Σ_{i=2..k} half-ulp(c·min(i·top, total)), term by term."""
    c = 1 + _gamma(k)
    return sum(_half_ulp(c * min(i * top, total)) for i in range(2, k + 1)) if total > 0 else 0.0


@settings(max_examples=300, deadline=None)
@given(
    top=st.one_of(
        st.just(0.0),
        st.floats(2.0**-120, 2.0**120),
        st.integers(1, 8).map(lambda j: 2.0**j),  # on a binade's edge
    ),
    fill=st.floats(0.0, 1.0),
    k=st.integers(0, 300),
)
def test_tree_error_sums_the_half_ulps_binade_by_binade(top, fill, k):
    total = top * (1 + fill * max(k - 1, 0))  # from the largest alone to k times it
    want = tree_bound(top, total, k)
    got = float(rounding.tree_error(np.array(top), np.array(total), np.array(k)))
    assert got == pytest.approx(want, rel=1e-12, abs=0.0)


def _tree_sum(values, rng):
    """A float32 sum of `values` by a random binary tree: two random partial sums at a time."""
    parts = [np.float32(v) for v in values]
    while len(parts) > 1:
        i, j = sorted(rng.choice(len(parts), 2, replace=False))
        b, a = parts.pop(j), parts.pop(i)
        parts.append(np.float32(a + b))
    return float(parts[0]) if parts else 0.0


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(
        st.one_of(
            st.floats(-4.0, 4.0, width=32, allow_subnormal=False),
            st.floats(0.875, 0.9375, width=32),  # near-equal, as small-λ charged successes
        ),
        min_size=1,
        max_size=40,
    ),
    seed=st.integers(0, 2**32 - 1),
)
def test_every_summation_tree_lies_within_tree_error(values, seed):
    """Random trees, left to right, and the chain from the largest magnitude down (each partial
    as large as it can be): every float32 sum is within tree_error of the exact one, and is the
    float32 nearest to a value within tree_error over one term fewer (the additions but the
    last) of it, the interval the bound takes."""
    rng = np.random.default_rng(seed)
    exact = math.fsum(values)
    magnitudes = [abs(v) for v in values]
    top, total, k = np.array(max(magnitudes)), np.array(sum(magnitudes)), len(values)
    whole = float(rounding.tree_error(top, total, k))
    before_last = float(rounding.tree_error(top, total, k - 1))
    chain = sorted(values, key=abs, reverse=True)
    sums = [_tree_sum(values, rng) for _ in range(5)]
    sums += [float(np.cumsum(np.float32(values), dtype=np.float32)[-1])]
    sums += [float(np.cumsum(np.float32(chain), dtype=np.float32)[-1])]
    for got in sums:
        assert abs(got - exact) <= whole, (got, exact, whole)
        lo, hi = np.float32(exact - before_last), np.float32(exact + before_last)
        assert lo <= got <= hi, (got, exact, before_last)


def test_half_ulp_and_spacing_at_zero_subnormals_and_binade_edges():
    y = np.array([0.0, 2.0**-140, 2.0**-126, 1.0, np.nextafter(2.0, 0.0), 2.0])
    assert rounding._half_ulp(y).tolist() == [
        0.0,
        2.0**-150,
        2.0**-150,
        2.0**-24,
        2.0**-24,
        2.0**-23,
    ]
    assert rounding._spacing(y).tolist() == [
        2.0**-149,
        2.0**-149,
        2.0**-149,
        2.0**-23,
        2.0**-23,
        2.0**-22,
    ]


def test_the_sums_interval_holds_where_the_float64_total_is_not_exact():
    """The float64 group total minus the row loses bits where the magnitudes span more than 2^29:
    here 2^16 + 1 + (2^-24 + 2^-40) rounds the last bit away, leaving 1 + 2^-24, a tie that rounds
    down to 1, while the trainer's sum of the two peers rounds up to 1 + 2^-23. The margin is of
    the group's magnitudes, the row's own included."""
    r = np.array([2.0**16, 1.0, 2.0**-24 + 2.0**-40], np.float32)
    runs = Runs(np.zeros(3, int))
    _, _, s_lo, s_hi, _, _ = rounding._peer_sums(r, np.ones(3, bool), runs, loo=True)
    trainer = r[1] + r[2]
    assert trainer == np.float32(1 + 2.0**-23)
    assert s_lo[0] <= trainer <= s_hi[0]


# ---- the bound against orders of summation a platform could take ---------------------------------


def trainer_float32(r, loo, order):
    """The trainer's float32 advantages of one group (torch's operations, legacy guard), each
    masked-matmul row summed in the order `order(peers)` gives."""
    f32 = np.float32
    r = np.asarray(r, f32)
    n = len(r)
    m = f32(n - 1 if loo else n)
    out = np.empty(n, f32)
    for i in range(n):
        peers = np.where(np.arange(n) == i, f32(0), r) if loo else r  # (1 - I) masks the row
        terms = peers[order(peers)]
        s = np.cumsum(terms, dtype=f32)[-1]
        q = np.cumsum(terms * terms, dtype=f32)[-1]
        with np.errstate(invalid="ignore"):
            b, qm = s / m, q / m
            std = np.nan_to_num(np.sqrt((qm - b * b) * (m / (m - f32(1)))))
        out[i] = (r[i] - b) / (std + f32(1e-6)) if std > 0 else r[i] - b
    return out


def test_small_lambda_successes_are_not_flagged_and_every_order_is_inside():
    """Groups of successes charged 2-30 minutes at λ = 1/240 (the small-λ `correct` setting): the
    variance is a difference of two moments near 0.8 about 10^4 times smaller than them. The
    bound of 2026-12-06, a relative error for every operation, flagged half of these rows as
    platform-dependent (51%); the sums' interval carried through the exact float32 operations flags
    almost none, and contains the trainer's value for random orders and for the worst one."""
    rng = np.random.default_rng(1)
    groups, size = 60, 16
    r = (1 - rng.uniform(2, 30, (groups, size)) / 240).astype(np.float32)
    runs = Runs(np.repeat(np.arange(groups), size))
    valid = np.ones(groups * size, bool)
    p = AdvantageParams(baseline="loo", precision="float32")
    emitted = grpo_arrays.grpo(r.ravel(), valid, runs, p).unclipped.astype(np.float64)
    bound = f32_bound(r.ravel(), valid, runs, p, emitted, np.zeros(groups * size, bool))
    assert (bound > 1e-3 * np.maximum(1.0, np.abs(emitted))).mean() <= 0.01
    orders = [lambda x: np.argsort(-np.abs(x), kind="stable")]  # largest partial sums
    orders += [
        lambda x, seed=seed: np.random.default_rng(seed).permutation(len(x)) for seed in range(8)
    ]
    worst = 0.0
    for g in range(groups):
        rows = slice(g * size, (g + 1) * size)
        for order in orders:
            real = trainer_float32(r[g], True, order).astype(np.float64)
            worst = max(worst, float(np.max(np.abs(real - emitted[rows]) / bound[rows])))
    assert worst <= 1.0
    assert worst > 0.1  # and it is not loose by orders of magnitude


# ---- the bound's value, row by row, against a scalar re-derivation ------------------------------
# Containment above is checked against real platforms; these pin each term of the derivation
# (docs/semantics.md), so a bound made looser or tighter by a slip is caught, not only one that
# stops containing the fixture.

SLACK = 2 * U * 1.001
TINY = 2.0**-149


def _down(x):
    return x - SLACK * abs(x)


def _up(x):
    return x + SLACK * abs(x)


def _spacing(y):
    return 2.0 ** max(math.frexp(y)[1] - 24, -149) if y > 0 else TINY


def scalar_bound(r, valid, i, loo, guard, normalize, emitted, peers_equal):
    """Row i's bound, in plain Python from the derivation (numpy float32 scalars where the
    trainer's operations are IEEE float32 ones)."""
    f32 = np.float32
    n = sum(valid)
    if n <= 1:
        return 0.0
    rv = [x if ok else 0.0 for x, ok in zip(r, valid, strict=True)]
    sq = [float(f32(x) * f32(x)) for x in rv]
    mine = loo and valid[i]
    k = n - (1 if mine else 0)
    m = n - 1 if loo else n
    peers = [j for j in range(len(r)) if valid[j] and not (mine and j == i)]
    s = math.fsum(rv[j] for j in peers)
    q = math.fsum(sq[j] for j in peers)
    a_sum = math.fsum(abs(rv[j]) for j in peers)
    # The sums: every addition but the last, by the tree bound over the group's largest magnitude
    # and total with the group's count of terms, capped by γ(k-2) times the row's own peers'
    # magnitudes; the last rounds to the nearest float32.
    group_k = n - (1 if loo else 0)
    top = max(abs(x) for x in rv)
    tree_s = tree_bound(top, math.fsum(abs(x) for x in rv), k - 1) if group_k == k else math.inf
    top_sq = float(f32(top) * f32(top))
    tree_q = tree_bound(top_sq, math.fsum(sq), k - 1) if group_k == k else math.inf
    e_s, e_q = min(tree_s, _gamma(k - 2) * a_sum), min(tree_q, _gamma(k - 2) * q)
    integral = all(x == round(x) for x, ok in zip(r, valid, strict=True) if ok)
    if integral and sum(x * x for x in rv) < 2**24:
        e_s = e_q = 0.0
    # float64 sums are exact where the values share a grid fine enough: a margin elsewhere, of
    # the whole group's magnitudes (the row's own is in the float64 total).
    bottom = min((abs(x) for x in rv if x != 0), default=math.inf)
    if n * top >= 2.0**28 * bottom:
        e_s += (n + 2) * 2.0**-53 * math.fsum(abs(x) for x in rv)
    if n * top_sq >= 2.0**28 * bottom * bottom:
        e_q += (n + 2) * 2.0**-53 * math.fsum(sq)
    s_lo, s_hi = f32(s - e_s), f32(s + e_s)
    q_lo, q_hi = max(f32(q - e_q), f32(0)), f32(q + e_q)
    # The IEEE operations before the cancellation, on the endpoints.
    m32 = f32(max(m, 1))
    b_lo, b_hi, qm_lo, qm_hi = s_lo / m32, s_hi / m32, q_lo / m32, q_hi / m32
    b_min = b_lo if b_lo > 0 else -b_hi if b_hi < 0 else f32(0)
    b_max = max(abs(b_lo), abs(b_hi))
    bsq_lo, bsq_hi = b_min * b_min, b_max * b_max
    a_lo, a_hi = _down(float(f32(r[i]) - b_hi)), _up(float(f32(r[i]) - b_lo))
    lo, hi = math.inf, -math.inf
    d_hi = _up(float(qm_hi) - float(bsq_lo))
    exactly_zero = (loo and m == 1) or not d_hi > 0
    trivial = peers_equal and guard == "trivial"
    may_keep = not normalize or exactly_zero or trivial
    if normalize and not exactly_zero and not trivial:
        # After the cancellation: one float32 ulp each.
        d_lo = _down(float(qm_lo) - float(bsq_hi))
        c = float(m32 / (m32 - f32(1)))
        var_lo, var_hi = _down(d_lo * c), _up(d_hi * c)
        if var_lo < TINY:  # the guard may fail; a positive variance is at least this
            may_keep = True
            finer = min(_spacing(float(qm_lo)), _spacing(float(bsq_lo)))
            var_lo = max(var_lo, _down(finer * c), TINY)
        eps = float(f32(1e-6))
        den_lo = _down(_down(math.sqrt(var_lo)) + eps)
        den_hi = _up(_up(math.sqrt(var_hi)) + eps)
        quotients = [a_lo / den_lo, a_lo / den_hi, a_hi / den_lo, a_hi / den_hi]
        lo, hi = _down(min(quotients)), _up(max(quotients))
    if may_keep:
        lo, hi = min(lo, a_lo), max(hi, a_hi)
    return max(abs(emitted - lo), abs(hi - emitted))


# The residue group (equal non-integral peers: the guard may pass), a row near its baseline (the
# normalised interval straddles 0), and integers whose squares pass 2^24 (no longer exact).
RESIDUE = [(0.0, False)] + [(0.95, False)] * 7


@settings(max_examples=150, deadline=None)
@example(groups=[RESIDUE], loo=True, guard="legacy", normalize=True)
@example(groups=[RESIDUE], loo=False, guard="legacy", normalize=True)
@example(
    groups=[[(0.3, False), (0.30001, False), (0.29999, False), (0.7, False)]],
    loo=True,
    guard="legacy",
    normalize=True,
)
@example(
    groups=[[(4096.0, False), (4097.0, False), (1.0, False)]],
    loo=True,
    guard="legacy",
    normalize=True,
)
@example(  # near 1: the least variance a subtraction can leave sits across a binade
    groups=[
        [(x, False) for x in (1.0002312660217285, 0.9999825954437256, 1.0003223419189453)]
        + [(0.9996989369392395, False), (0.9997661113739014, False)]
    ],
    loo=False,
    guard="legacy",
    normalize=True,
)
@example(  # peers summing to about 0: the baseline's interval straddles it, so b² may be 0
    groups=[[(0.3, False), (-0.3, False), (0.7, False), (-0.7, False), (1.1, False)]],
    loo=True,
    guard="legacy",
    normalize=True,
)
@example(  # a lone success among zeros: its peers' sums are exact, the group's are not
    groups=[[(0.8708333, False)] + [(0.0, False)] * 7],
    loo=True,
    guard="legacy",
    normalize=True,
)
@example(  # a masked row under leave-one-out sums one term more than its group's count
    groups=[[(0.87, True), (0.86, False), (0.88, False), (0.87, False)]],
    loo=True,
    guard="legacy",
    normalize=True,
)
@given(
    groups=st.lists(
        st.lists(
            st.tuples(
                st.one_of(
                    st.integers(-3, 3).map(float),  # exact sums
                    st.floats(-3.0, 3.0, width=32, allow_subnormal=False),
                    st.floats(0.875, 0.9375, width=32),  # near-equal: the variance cancels
                    st.sampled_from([0.95, 0.3, 0.7]),  # equal peers
                ),
                st.booleans(),
            ),
            min_size=1,
            max_size=6,
        ),
        min_size=1,
        max_size=4,
    ),
    loo=st.booleans(),
    guard=st.sampled_from(["legacy", "trivial"]),
    normalize=st.booleans(),
)
def test_the_bound_of_every_row_equals_the_derivation(groups, loo, guard, normalize):
    r = np.array([x for g in groups for x, _ in g], dtype=np.float32)
    valid = np.array([not masked for g in groups for _, masked in g])
    runs = Runs(np.array([k for k, g in enumerate(groups) for _ in g]))
    p = AdvantageParams(
        baseline="loo" if loo else "mean", std_guard=guard, normalize=normalize, precision="float32"
    )
    emitted = np.linspace(-1.0, 1.0, len(r))  # any value: the bound is measured from it
    peers_equal = peers_all_equal(r, valid, runs, p)
    got = f32_bound(r, valid, runs, p, emitted, peers_equal)
    start = 0
    for g in groups:
        rows = [float(x) for x in r[start : start + len(g)]]
        ok = [bool(v) for v in valid[start : start + len(g)]]
        for j in range(len(g)):
            want = scalar_bound(
                rows, ok, j, loo, guard, normalize, emitted[start + j], peers_equal[start + j]
            )
            assert got[start + j] == pytest.approx(want, rel=1e-12, abs=1e-300), (g, j)
        start += len(g)


@pytest.mark.parametrize("block_values", [1, 5, 23])
@pytest.mark.parametrize("baseline", ["loo", "mean"])
def test_the_bound_by_slices_of_whole_groups_equals_the_bound_over_all_rows(
    monkeypatch, block_values, baseline
):
    # Ragged groups, three configs, masked rows and exactly-equal peers: every slice width
    # cuts the rows somewhere else, and no value may move by a single bit.
    rng = np.random.default_rng(7)
    lengths = rng.integers(1, 9, 60)
    runs = Runs(np.repeat(np.arange(len(lengths)), lengths))
    rows = int(lengths.sum())
    r = rng.normal(0.3, 0.4, (3, rows)).astype(np.float32)
    r[:, : lengths[0] + lengths[1]] = 0.5  # two groups of equal peers
    valid = rng.random(rows) > 0.15
    p = AdvantageParams(baseline=baseline, precision="float32")
    emitted = rng.normal(0.0, 1.0, (3, rows))
    peers_equal = peers_all_equal(r, valid, runs, p)
    args = (r, valid, runs, p, emitted, peers_equal)
    monkeypatch.setattr(rounding, "BLOCK_VALUES", 10**9)
    whole = f32_bound(*args)
    monkeypatch.setattr(rounding, "BLOCK_VALUES", block_values)
    sliced = f32_bound(*args)
    assert len(list(runs.blocks(max(1, block_values // 3)))) > 1
    assert np.array_equal(whole.view(np.int64), sliced.view(np.int64))
    assert np.isfinite(whole).all()
    assert (whole > 0).any()
