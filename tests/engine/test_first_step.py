"""Tests for the first-step diagnostic (engine/first_step.py, maths/effort.py, maths/effort_step.py, maths/bootstrap.py): equal
to a slow loop-by-loop reference, invariant to what should not matter (the rewards' scale, the
guard's flavour, float32 against float64, a rounding-sized λ), and its bootstrap reweighting
equal to weighting each problem by hand."""

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay_cli import api
from replay_cli.advice.verdict import Decision
from replay_cli.engine.first_step import point_measures
from replay_cli.maths.bootstrap import measures, sums
from replay_cli.maths.effort import EffortModel, solve_eta
from replay_cli.maths.effort_step import Steps, take_steps
from replay_cli.report.options import ReportOptions
from replay_cli.rollouts.synth import synth_rollouts
from replay_cli.rollouts.validation import rollouts_from_frame

import reference_step
from factories import config, replay_frame, rollouts

CLIP = {"clip_low": -3.0, "clip_high": 3.0}
MEASURES = ("resolve", "resolve_effort", "solve_minutes", "fail_minutes")


def replayed(frame: pl.DataFrame, configs, forecast: bool = True):
    """A replay with the default forecast, or without it for tests of the first step alone."""
    options = None if forecast else ReportOptions(forecast=None)
    return api.replay(rollouts_from_frame(frame), configs, options)


def assert_equals_reference(result, configs, rel=1e-8):
    for k, cfg in enumerate(configs):
        rows = result.result.rows.filter(pl.col("config_id") == cfg.config_id)
        row = result.result.summary.row(k, named=True)
        for column, twin in (("advantage", ""), ("advantage_raw", "_off")):
            want = reference_step.measure(rows, column)
            for scope in reference_step.SCOPES:
                for name in MEASURES:
                    if f"{name}{scope}" not in want:
                        assert row[f"step/{name}{twin}{scope}"] is None
                        continue
                    expected = want[f"{name}{scope}"]
                    got = row[f"step/{name}{twin}{scope}"]
                    assert got == pytest.approx(expected, rel=rel, abs=1e-10), (name, scope, twin)


def test_the_measure_equals_the_slow_reference_on_synthetic_runs():
    frame = synth_rollouts(steps=3, groups_per_step=16, group_size=6, seed=5)
    configs = [
        config({"enabled": False}),
        config({"apply_to": "all"}, CLIP),
        config({"apply_to": "correct", "lambda_time": 1 / 30}, CLIP),
        config({"apply_to": "correct"}, {"filter": "nemo-rl"}),  # the polars plans' path
    ]
    assert_equals_reference(replayed(frame, configs, forecast=False), configs)


group = st.lists(
    st.tuples(st.booleans(), st.floats(1.0, 3600.0), st.booleans()), min_size=1, max_size=6
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(groups=st.lists(group, min_size=3, max_size=8), lam=st.sampled_from([1 / 120, 1 / 20]))
def test_the_measure_equals_the_slow_reference_on_random_groups(groups, lam):
    rows = [
        {"group_id": g, "reward": float(ok), "openhands_run_time": t, "mask_sample": masked}
        for g, members in enumerate(groups)
        for ok, t, masked in members
    ]
    frame = pl.DataFrame(rows).with_columns(
        pl.col("reward").gt(0).alias("resolved"), pl.lit(1).alias("step")
    )
    configs = [config({"lambda_time": lam}, CLIP), config({"apply_to": "correct"})]
    assert_equals_reference(replayed(frame, configs, forecast=False), configs, rel=1e-7)


def test_the_step_spends_exactly_the_budget_and_its_first_order_is_reported():
    rng = np.random.default_rng(0)
    count = rng.integers(0, 4, size=(50, 4)).astype(float)
    success = np.minimum(count, rng.integers(0, 3, size=(50, 4)))
    model = EffortModel.of_counts(count, success, count * 10.0, rng.integers(0, 3, 50), np.ones(50))
    a = rng.normal(size=(3, 50, 4)) * (count > 0)
    steps = take_steps(model, a, a * 0.5, 0.002)
    assert steps.kl.mean(-1) == pytest.approx(0.002, rel=1e-9)
    # A zero direction takes no step.
    still = take_steps(model, np.zeros((1, 50, 4)), np.zeros((1, 50, 4)), 0.002)
    assert still.eta[0] == 0.0
    assert np.all(still.d_p == 0.0)


def test_scaling_the_advantages_leaves_the_step_unchanged():
    rng = np.random.default_rng(1)
    count = rng.integers(1, 4, size=(40, 4)).astype(float)
    model = EffortModel.of_counts(
        count, count // 2, count * 7.0, rng.integers(0, 3, 40), np.ones(40)
    )
    a = rng.normal(size=(1, 40, 4))
    one, many = take_steps(model, a, a * 0.3, 0.001), take_steps(model, 8 * a, 2.4 * a, 0.001)
    np.testing.assert_allclose(one.d_p, many.d_p, rtol=1e-9, atol=1e-15)
    assert many.eta[0] == pytest.approx(one.eta[0] / 8, rel=1e-9)


@pytest.mark.parametrize("c", [0.25, 0.5, 2.0])
def test_scaling_every_reward_and_lambda_leaves_every_ratio_unchanged(c):
    # Without normalisation every advantage scales by c (c a power of two: exactly), so the
    # fixed-size step is the same: every ratio and minute change, and the verdict, are equal.
    # (The explosion hazard is |A| > 3 in the PR's units: far larger c would trip it.)
    frame = synth_rollouts(steps=4, groups_per_step=24, group_size=6, seed=3)
    scaled = frame.with_columns(pl.col("reward") * c)
    plain = {"normalize": False, **CLIP}
    base = replayed(frame, [config({"enabled": False}, plain), config({"apply_to": "all"}, plain)])
    wide = {**plain, "clip_low": -3 * c, "clip_high": 3 * c}
    other = replayed(
        scaled,
        [
            config({"enabled": False}, wide),
            config({"apply_to": "all", "lambda_time": c / 60}, wide),
        ],
    )
    names = [
        n
        for n in base.result.summary.columns
        if n.startswith(("step/", "forecast/")) and n != "step/eta"
    ]
    for name in names:
        for a, b in zip(base.result.summary[name], other.result.summary[name], strict=True):
            if isinstance(a, str):  # the fit's one-line statement
                assert a == b, name
                continue
            assert (a is None and b is None) or b == pytest.approx(a, rel=1e-9, abs=1e-12), name
    assert (
        base.verdict.recommendation["role"].to_list()
        == other.verdict.recommendation["role"].to_list()
    )


@pytest.mark.parametrize("c", [0.5, 2.0, 10.0])
def test_scaling_rewards_under_normalisation_keeps_the_verdict_on_the_shipped_data(c):
    # With normalisation on, a row whose peers are all equal keeps r - b unnormalised (the
    # trainer's guard), so its advantage scales with c and the forecast moves a little: the
    # verdict does not; at c <= 2 every ratio stays inside its interval, at c = 10 within a point.
    frame = pl.read_parquet("data_samples/rollouts_medium.parquet")
    configs = lambda k: [
        config({"enabled": False}, CLIP),
        config({"apply_to": "correct", "lambda_time": k / 60}, CLIP),
        config({"apply_to": "all", "lambda_time": k / 30}, CLIP),
    ]
    base = replayed(frame, configs(1.0))
    other = replayed(frame.with_columns(pl.col("reward") * c), configs(c))
    assert (
        base.verdict.recommendation["role"].to_list()
        == other.verdict.recommendation["role"].to_list()
    )
    for a, b in zip(base.result.summary.to_dicts(), other.result.summary.to_dicts(), strict=True):
        for scope in ("", "@long"):
            low, high = (a[f"forecast/resolve_vs_off_{end}{scope}"] for end in ("low", "high"))
            moved = b[f"forecast/resolve_vs_off{scope}"]
            if c <= 2:
                assert low <= moved <= high
            else:  # ten times the unnormalised lone rows: 1.41 points measured (0.53 when the
                # forecast started from every step pooled; it starts from the first quarter now)
                assert abs(moved - a[f"forecast/resolve_vs_off{scope}"]) < 0.02


def demo_frame() -> pl.DataFrame:
    return synth_rollouts(steps=12, groups_per_step=48, group_size=8, seed=7)


@pytest.fixture(scope="module")
def tiny_lambda():
    configs = [config({"enabled": False}, CLIP)] + [
        config({"lambda_time": 1e-6, "apply_to": a}, {**CLIP, "precision": p})
        for a in ("all", "correct")
        for p in ("float32", "float64")
    ]
    return replayed(demo_frame(), configs)


def test_at_a_rounding_sized_lambda_only_the_time_only_share_moves_the_ratio(tiny_lambda):
    # The step spends its budget partly on groups whose outcomes are all equal (time alone);
    # the rest, a share 1 - s of the KL, is a step sqrt(1 - s) as long in the mixed groups.
    for row in tiny_lambda.result.summary.filter(pl.col("precision") == "float64").to_dicts():
        share = row["step/time_only_share"]
        assert share > 0.05  # normalisation trains the tied groups on time at full size
        explained = np.sqrt(1 - share)
        half = (row["step/resolve_vs_off_high"] - row["step/resolve_vs_off_low"]) / 2
        assert abs(row["step/resolve_vs_off"] - explained) <= half, row["label"]


def test_the_jump_at_a_rounding_sized_lambda_is_named(tiny_lambda):
    found = tiny_lambda.verdict.findings.filter(
        (pl.col("kind") == "time_only_step") & pl.col("config_id").is_not_null()
    )
    tiny = found.filter(pl.col("text").str.contains("λ=1e-06", literal=True))
    assert tiny.height >= 2
    assert all("the jump at λ → 0⁺" in text for text in tiny["text"])


def test_offered_zero_or_a_rounding_sized_lambda():
    """At the trainer's precision (float32). Under `correct` a λ of 1e-6 charges successes
    below float32's resolution near 1: the tool keeps shaping off. Under `all` the all-fail
    groups' rewards near 0 differ by about 1e-5, above the std's 1e-6 epsilon, so the trainer
    really normalises them into a time signal (the jump at λ → 0⁺): the forecast prices it
    (within two points of shaping off's resolve rate: 1.51 measured from the log's first four
    steps, the forecast's start window) and the finding names the jump."""
    tiny = config({"lambda_time": 1e-6, "apply_to": "correct"}, CLIP)
    correct = [config({"enabled": False}, CLIP), tiny]
    d = Decision.of(replayed(demo_frame(), correct).verdict.recommendation)
    assert d.keep_off, d.recommended
    every = [
        config({"enabled": False}, CLIP),
        config({"lambda_time": 1e-6, "apply_to": "all"}, CLIP),
    ]
    result = replayed(demo_frame(), every)
    row = result.result.summary.row(1, named=True)
    assert abs(row["forecast/resolve"] - row["forecast/resolve_off"]) < 0.02
    jump = result.verdict.findings.filter(pl.col("kind") == "time_only_step")["text"].to_list()
    assert any("the jump at λ → 0⁺" in text for text in jump)


@pytest.fixture(scope="module")
def toward_zero():
    """The shipped log replayed at λ → 0 under the PR's clip, in both precisions."""
    frame = pl.read_parquet("data_samples/rollouts_medium.parquet")
    out = {}
    for precision in ("float32", "float64"):
        configs = [config({"enabled": False}, {**CLIP, "precision": precision})] + [
            config({"lambda_time": lam, "apply_to": a}, {**CLIP, "precision": precision})
            for lam in (1e-9, 1e-7, 1e-6)
            for a in ("all", "correct")
        ]
        out[precision] = replayed(frame, configs).result.summary
    return out


@pytest.mark.parametrize("precision", ["float32", "float64"])
def test_as_lambda_goes_to_zero_the_outcome_goes_to_shaping_offs(toward_zero, precision):
    """Within a point of shaping off's resolve rate after T steps at λ ≤ 1e-7 (half a point),
    and at 1e-6 under `correct`; `all` at 1e-6 sits 1.4 (float32) and 1.7 (float64) points
    below, measured from the log's first quarter of steps (the forecast's start window): its
    all-fail groups' shaped rewards differ by about λ × minutes, the scale of the std's 1e-6
    epsilon, so the trainer there already normalises them to a time signal."""
    for row in toward_zero[precision].to_dicts()[1:]:
        gap = abs(row["forecast/resolve"] - row["forecast/resolve_off"])
        limit = 0.02 if (row["apply_to"], row["lambda_time"]) == ("all", 1e-6) else 0.01
        assert gap <= limit, (row["label"], gap)
        if row["lambda_time"] <= 1e-7:
            assert gap <= 0.005, (row["label"], gap)


def test_without_the_clip_a_rounding_sized_lambda_explodes_and_is_avoided():
    """With no clip, λ = 1e-9 turns a group whose peers tie under shaping off into a std of
    about 1e-9: its one success gets an advantage near 1e6 (NeMo-RL PR #4158), and training
    really follows it. The rule avoids such a config for the explosion, whatever it forecasts."""
    frame = pl.read_parquet("data_samples/rollouts_medium.parquet")
    configs = [config({"enabled": False}), config({"lambda_time": 1e-9, "apply_to": "all"})]
    verdict = replayed(frame, configs).verdict.recommendation
    tiny = verdict.filter(pl.col("label").str.contains("1e-09")).row(0, named=True)
    assert tiny["role"] == "avoid"
    assert "explosion" in tiny["failed"]


def shipped_verdict(**advantage):
    frame = pl.read_parquet("data_samples/rollouts_medium.parquet")
    configs = [config({"enabled": False}, {**CLIP, **advantage})] + [
        config({"lambda_time": lam, "apply_to": a}, {**CLIP, **advantage})
        for lam in (1 / 120, 1 / 60, 1 / 30)
        for a in ("all", "correct")
    ]
    verdict = replayed(frame, configs).verdict.recommendation
    return verdict.select("label", "role").with_columns(
        pl.col("label").str.replace(r" (guard=legacy|float64)", "")
    )


def test_the_guards_flavour_and_the_precision_do_not_change_the_verdict():
    base = shipped_verdict()
    assert shipped_verdict(std_guard="legacy").equals(base)
    assert shipped_verdict(precision="float64").equals(base)


def test_float32_rounding_residue_of_equal_rewards_is_no_step():
    # Six failures of 7 minutes each under λ=1/480: the shaped rewards are equal, yet float32's
    # leave-one-out mean leaves a residue of about 1e-9 on every row (as the trainer's does).
    # That group has no signal (spec §5); scaled to the step budget, the residue would read as
    # a full-size step about time alone.
    frame = rollouts(
        reward=[0.0] * 6, resolved=[False] * 6, group_id=[0] * 6, openhands_run_time=[420.0] * 6
    )
    rows, residue = {}, {}
    for precision in ("float32", "float64"):
        result = replay_frame(frame, {"lambda_time": 1 / 480}, {"precision": precision})
        assert result.result.summary["signal/group_rate"][0] == 0.0
        assert result.result.summary["step/time_only_share"][0] == 0.0
        rows[precision] = result.result.summary.select(pl.selectors.starts_with("step/")).row(0)
        residue[precision] = np.abs(next(iter(result.result.advantages.values())).to_numpy()).max()
    assert 0 < residue["float32"] < 1e-8  # the residue is there, and the trainer trains it
    assert residue["float64"] == 0.0
    assert rows["float32"] == rows["float64"]


def test_the_bootstrap_reweights_each_problem_as_weighting_it_by_hand():
    rng = np.random.default_rng(4)
    n = 30
    count = rng.integers(1, 4, size=(n, 4)).astype(float)
    model = EffortModel.of_counts(count, count // 2, count * 5.0, rng.integers(0, 3, n), np.ones(n))
    a = rng.normal(size=(2, n, 4))
    steps = take_steps(model, a, a * 0.4, 0.001)
    point, boot = sums(model, steps, resamples=3, seed=9)
    weights = np.random.default_rng([9, 0]).poisson(1.0, size=(3, n)).astype(float)
    got = measures(boot, 0.001, point=False)
    pi, p, m = model.pi, model.p, model.m
    p0, pm0 = (pi * p).sum(-1), (pi * p * m).sum(-1)
    for b in range(3):
        w = weights[b]
        scale = np.sqrt(0.001 / ((steps.kl * w).sum(-1) / w.sum()))
        expected = scale * (steps.d_p * w).sum(-1) / w.sum()
        np.testing.assert_allclose(got["resolve"][b, :, 0], expected, rtol=1e-12)
        solve = (pm0 * w).sum() + scale * (steps.d_pm * w).sum(-1)
        solve = solve / ((p0 * w).sum() + scale * (steps.d_p * w).sum(-1))
        solve -= (pm0 * w).sum() / (p0 * w).sum()
        np.testing.assert_allclose(got["solve_minutes"][b, :, 0], solve, rtol=1e-10, atol=1e-12)
        f0, fm0 = (pi * (1 - p)).sum(-1), (pi * (1 - p) * m).sum(-1)
        fail = (fm0 * w).sum() + scale * (steps.d_fm * w).sum(-1)
        fail = fail / ((f0 * w).sum() - scale * (steps.d_p * w).sum(-1))
        fail -= (fm0 * w).sum() / (f0 * w).sum()
        np.testing.assert_allclose(got["fail_minutes"][b, :, 0], fail, rtol=1e-10, atol=1e-12)
        effort = scale * (steps.d_pe * w).sum(-1) / w.sum()
        np.testing.assert_allclose(got["resolve_effort"][b, :, 0], effort, rtol=1e-12)
    whole = measures(point, 0.001, point=True)
    np.testing.assert_allclose(whole["resolve"][0, :, 0], steps.d_p.mean(-1), rtol=1e-12)
    # The point estimate from the sums is the one taken directly, in every scope.
    direct = point_measures(model, steps)
    for name, values in direct.items():
        np.testing.assert_allclose(whole[name], values, rtol=1e-9, atol=1e-12, err_msg=name)


def test_the_base_sums_weight_each_problem_by_its_groups():
    """A pooled problem (an instance id seen at several steps) weighs as many groups as drew
    it. With every weight 1, as elsewhere, a sum that drops the weight would be the same."""
    from replay_cli.maths.bootstrap import PER_CONFIG

    rng = np.random.default_rng(6)
    n = 24
    count = rng.integers(1, 4, size=(n, 3)).astype(float)
    weight = rng.integers(1, 5, size=n).astype(float)
    bucket = np.arange(n) % 3
    model = EffortModel.of_counts(count, count // 2, count * 5.0, bucket, weight)
    a = rng.normal(size=(2, n, 3))
    steps = take_steps(model, a, a * 0.4, 0.001)
    point, boot = sums(model, steps, resamples=4, seed=3)
    draws = np.random.default_rng([3, 0]).poisson(1.0, size=(4, n)).astype(float)
    before = model.outcomes
    base = {"w": np.ones(n), "p0": before["p"], "pm0": before["pm"]}
    base |= {"f0": before["f"], "fm0": before["fm"]}
    for scope in range(4):
        mine = np.ones(n, bool) if scope == 0 else bucket == scope - 1
        for name, x in base.items():
            want = (weight * x)[mine].sum()
            np.testing.assert_allclose(point.base[name][0, scope], want, rtol=1e-12)
            want = (draws * weight * x)[:, mine].sum(-1)
            np.testing.assert_allclose(boot.base[name][:, scope], want, rtol=1e-12)
        for name in PER_CONFIG:
            want = (weight * getattr(steps, name))[:, mine].sum(-1)
            np.testing.assert_allclose(point.config[name][0, :, scope], want, rtol=1e-12)
    whole = measures(point, 0.001, point=True)
    for name, values in point_measures(model, steps).items():
        np.testing.assert_allclose(whole[name], values, rtol=1e-9, atol=1e-12, err_msg=name)


def test_the_bootstrap_is_paired_seeded_and_brackets_the_point():
    frame = synth_rollouts(steps=4, groups_per_step=24, group_size=6, seed=8)
    configs = [config({"enabled": False}, CLIP), config({"apply_to": "correct"}, CLIP)]
    one, two = replayed(frame, configs), replayed(frame, configs)
    assert one.result.resamples.equals(two.result.resamples)
    off = one.result.resamples.filter(pl.col("config_id") == configs[0].config_id)
    # paired: off vs itself (the verdict's resamples are the forecast's)
    assert off["forecast/resolve_vs_off"].to_list() == [1.0] * off.height
    row = one.result.summary.row(1, named=True)
    assert row["step/resolve_vs_off_low"] <= row["step/resolve_vs_off"]
    assert row["step/resolve_vs_off"] <= row["step/resolve_vs_off_high"]
    # The interval's ends are the resamples' quantiles at (1 ∓ interval) / 2 (90% by default:
    # its low end a one-sided 95% bound).
    from replay_cli.config import EffortSettings

    level = EffortSettings().interval
    mine = one.result.resamples.filter(pl.col("config_id") == configs[1].config_id)
    values = mine["forecast/resolve_vs_off"].to_numpy()
    low, high = np.quantile(values, [(1 - level) / 2, (1 + level) / 2])
    assert row["forecast/resolve_vs_off_low"] == pytest.approx(low, rel=1e-12)
    assert row["forecast/resolve_vs_off_high"] == pytest.approx(high, rel=1e-12)
    won = one.verdict.recommendation["won_share"].sum()
    assert won == pytest.approx(1.0)  # shaping off is always eligible: every resample has a pick


def test_solve_eta_reaches_the_budget_from_a_poor_second_order_guess():
    rng = np.random.default_rng(2)
    count = rng.integers(1, 5, size=(20, 4)).astype(float)
    model = EffortModel.of_counts(
        count, count // 3, count * 3.0, rng.integers(0, 3, 20), np.ones(20)
    )
    a = rng.normal(size=(1, 20, 4)) * 30  # a large direction: the KL is far from quadratic
    from replay_cli.maths.effort import Direction, mean_kl

    direction = Direction.of(model, a, a * 0.1)
    for budget in (1e-4, 0.05, 0.5):
        eta = solve_eta(model, direction, budget)
        assert mean_kl(model, direction, eta)[0] == pytest.approx(budget, rel=1e-9)


def test_solve_eta_with_a_shared_model_equals_one_model_per_config():
    """The first-step diagnostic's model is shared by every config, its logarithms computed once;
    the forecast's is one per config, taken row by row: the same step sizes to the last bit."""
    from replay_cli.maths.effort import Direction

    rng = np.random.default_rng(5)
    count = rng.integers(1, 6, size=(30, 4)).astype(float)
    model = EffortModel.of_counts(
        count, count // 2, count * 2.0, rng.integers(0, 3, 30), np.ones(30)
    )
    a = rng.normal(size=(5, 30, 4))
    direction = Direction.of(model, a, a * rng.uniform(0, 1, size=a.shape))
    shared = solve_eta(model, direction, 0.01)
    per_config = EffortModel(
        np.broadcast_to(model.pi, a.shape).copy(),
        np.broadcast_to(model.p, a.shape).copy(),
        model.m,
        model.bucket,
        np.broadcast_to(model.weight, a.shape[:2]).copy(),
    )
    assert solve_eta(per_config, direction, 0.01).tolist() == shared.tolist()
    assert (shared > 0).all()
    taken = per_config.take(np.array([3, 1]))
    assert taken.log_pi.tolist() == np.log(per_config.pi[[3, 1]]).tolist()
    assert taken.log_outcomes[0].tolist() == per_config.log_outcomes[0][[3, 1]].tolist()


def test_steps_fields_are_what_the_bootstrap_sums():
    from replay_cli.maths.bootstrap import PER_CONFIG

    assert set(PER_CONFIG) <= set(Steps.__dataclass_fields__)


def test_log_rates_share_one_softplus_and_stay_finite():
    from replay_cli.maths.effort import _log_rates

    z = np.array([-1000.0, -40.0, -1.5, 0.0, 1e-300, 2.0, 40.0, 1000.0])
    log_q, log_not_q = _log_rates(z)
    np.testing.assert_allclose(log_q, -np.logaddexp(0.0, -z), rtol=1e-15, atol=0)
    np.testing.assert_allclose(log_not_q, -np.logaddexp(0.0, z), rtol=1e-15, atol=0)
    assert log_q[0] == -1000.0  # saturated, not -inf
    assert log_not_q[-1] == -1000.0
    assert log_q[3] == log_not_q[3] == -np.log(2.0)


# ---- problems pooled by instance, the time-limit window, the step's fields (mutation survivors) --


def test_groups_of_one_instance_pool_into_one_problem():
    from replay_cli.maths.problems import GroupLevels, Problems

    levels = 3
    rng = np.random.default_rng(4)

    def chunk(problems: list[str], bucket: list[int]) -> GroupLevels:
        count = rng.integers(1, 5, size=(len(problems), levels)).astype(np.int64)
        success = rng.integers(0, 2, size=count.shape) * count
        minutes = count * rng.uniform(1, 30, size=count.shape)
        return GroupLevels(count, success, minutes, np.array(bucket), pl.Series(problems))

    chunks = [chunk(["y", "x", "z"], [1, 0, 2]), chunk(["x", "y"], [0, 1])]
    problems = Problems.of(chunks)
    # Problems in the order of their first group: y (groups 0 and 4), x (1 and 3), z (2).
    assert problems.of_group.tolist() == [0, 1, 2, 1, 0]
    assert problems.model.weight.tolist() == [2.0, 2.0, 1.0]
    assert problems.model.bucket.tolist() == [1, 0, 2]
    count = np.concatenate([c.count for c in chunks]).astype(np.float64)
    success = np.concatenate([c.success for c in chunks]).astype(np.float64)
    minutes = np.concatenate([c.minutes for c in chunks])
    by = [[0, 4], [1, 3], [2]]
    pooled = EffortModel.of_counts(
        np.stack([count[g].sum(0) for g in by]),
        np.stack([success[g].sum(0) for g in by]),
        np.stack([minutes[g].sum(0) for g in by]),
        np.array([1, 0, 2]),
        np.array([2.0, 2.0, 1.0]),
    )
    np.testing.assert_allclose(problems.model.pi, pooled.pi, rtol=1e-15)
    np.testing.assert_allclose(problems.model.p, pooled.p, rtol=1e-15)
    per_group = rng.normal(size=(5, levels))
    expected = np.stack([per_group[g].mean(0) for g in by])
    np.testing.assert_allclose(problems.mean(per_group), expected, rtol=1e-15)


def test_the_time_limit_window_is_two_percent_of_the_longest_and_at_least_a_minute():
    from replay_cli.config import EffortSettings
    from replay_cli.maths.effort import DEFAULT_LEVELS, EffortLevels, window_start

    assert window_start(100.0) == 98.0
    assert window_start(20.0) == 19.0
    assert EffortLevels((), None).count == DEFAULT_LEVELS == EffortSettings().levels


@pytest.mark.parametrize(("second", "limit"), [(5880.0, 98.0), (5879.0, None)])
def test_a_rollout_exactly_at_the_window_start_counts_toward_the_time_limit(second, limit):
    """400 rollouts, the longest at 100 min: the log has a time limit when 0.5% of them (2) end
    within its window, [98, 100] min. The second longest at exactly 98 min is one of them."""
    from replay_cli.engine.effort_levels import effort_levels

    times = [6000.0, second] + [600.0 + k for k in range(398)]
    frame = rollouts(group_id=[k // 4 for k in range(400)], openhands_run_time=times)
    levels, _, _ = effort_levels(rollouts_from_frame(frame).frame, (0.0, 1e9), 4)
    assert levels.limit == limit


def test_the_steps_fields_by_hand():
    rng = np.random.default_rng(9)
    count = rng.integers(1, 6, size=(6, 3)).astype(float)
    model = EffortModel.of_counts(count, count // 2, count * 4.0, rng.integers(0, 3, 6), np.ones(6))
    a = rng.normal(size=(2, 6, 3)) * 0.1
    ay = a * rng.uniform(0, 1, size=a.shape)
    steps = take_steps(model, a, ay, 0.01)
    from replay_cli.maths.effort import Direction

    direction = Direction.of(model, a, ay)
    pi, p, m = model.pi, model.p, model.m
    fm0 = (pi * (1 - p) * m).sum(-1)
    np.testing.assert_allclose(steps.d_fm, steps.new["fm"] - fm0, rtol=1e-12, atol=1e-15)
    d_mean = (pi * direction.d).sum(-1, keepdims=True)
    first = (pi * (direction.d - d_mean) * p).sum(-1) + (pi * p * (1 - p) * direction.e).sum(-1)
    np.testing.assert_allclose(steps.first_p, steps.eta[:, None] * first, rtol=1e-12)


@pytest.mark.parametrize("seed", [0, 2, 10, 12, 13])
def test_solve_eta_reaches_a_budget_near_the_saturation_of_the_kl(seed):
    """Near the KL's ceiling (every problem at the level and outcome its direction favours) the
    secant overshoots its bracket and the bisection takes over: these draws need it (seeds found
    by counting the fallback's uses) and must still reach the budget."""
    from replay_cli.maths.effort import Direction, mean_kl

    rng = np.random.default_rng(seed)
    problems, levels = rng.integers(1, 4), rng.integers(2, 5)
    pi = rng.dirichlet(np.ones(levels) * rng.uniform(0.1, 2), size=problems)
    p = rng.uniform(0.01, 0.99, size=(problems, levels))
    weight = rng.uniform(0.1, 3, problems)
    model = EffortModel(pi, p, np.ones_like(pi), np.zeros(problems, int), weight)
    d = rng.normal(size=(1, problems, levels)) * rng.choice([0.1, 1, 10, 100])
    e = rng.normal(size=(1, problems, levels)) * rng.choice([0, 0.1, 1, 10, 100])
    direction = Direction(d, e)
    ceiling = mean_kl(model, direction, np.array([1e4]))[0]
    for share in (0.9, 0.99, 0.999, 0.9999):
        eta = solve_eta(model, direction, share * ceiling)
        assert mean_kl(model, direction, eta)[0] == pytest.approx(share * ceiling, rel=1e-9)


# ---- a problem seen at several steps (issue 44: the pooled path crashed) ----------------------

POOLING_CONFIGS = [
    config({"enabled": False}, CLIP),
    config({"apply_to": "all"}, CLIP),
    config({"apply_to": "correct", "lambda_time": 1 / 30}),
]


def test_an_instance_id_that_pools_nothing_changes_nothing():
    frame = synth_rollouts(steps=3, groups_per_step=12, group_size=6, seed=11)
    ids = frame.with_columns(instance_id=pl.format("p{}-{}", pl.col("step"), pl.col("group_id")))
    plain, named = replayed(frame, POOLING_CONFIGS), replayed(ids, POOLING_CONFIGS)
    # Every number equal; the forecast's reading gives its own reason for staying cautious.
    reading = "forecast/fit"
    assert named.result.summary.drop(reading).equals(plain.result.summary.drop(reading))
    assert "since the log spans 3 steps" in named.result.summary[reading][0]
    assert "since the log names no problem (no instance_id)" in plain.result.summary[reading][0]
    assert named.result.resamples.equals(plain.result.resamples)
    assert named.verdict.recommendation.equals(plain.verdict.recommendation)


def test_a_problem_seen_at_every_step_replays_and_pools():
    frame = synth_rollouts(steps=4, groups_per_step=10, group_size=6, seed=12)
    ids = frame.with_columns(
        instance_id=pl.format("task{}", pl.col("group_id").rank("dense").over("step"))
    )
    result = replayed(ids, POOLING_CONFIGS)
    for row in result.result.summary.to_dicts():
        assert 0.0 <= row["step/time_only_share"] <= 1.0
        assert row["step/resolve_off"] is not None
    assert result.result.resamples["resample"].n_unique() == 200


def test_the_time_only_share_of_pooled_problems_is_one_where_shaping_off_has_no_signal():
    # Three problems, each at two steps; every group's outcomes are equal (all resolved or all
    # failed), so whatever a time charge trains, it trains on time alone.
    rows = []
    for step in (1, 2):
        for g, resolved in enumerate((True, False, True)):
            for i in range(4):
                rows.append(
                    {
                        "step": step,
                        "group_id": g,
                        "reward": float(resolved),
                        "resolved": resolved,
                        "openhands_run_time": 60.0 * (1 + i + 3 * g + step),
                    }
                )
    frame = rollouts(**{k: [r[k] for r in rows] for k in rows[0]})
    frame = frame.with_columns(instance_id=pl.format("t{}", pl.col("group_id")))
    result = replay_frame(frame, {"lambda_time": 1 / 60})
    assert result.result.summary["step/time_only_share"][0] == 1.0


def test_a_configs_step_does_not_depend_on_the_configs_computed_beside_it(monkeypatch):
    # The measure computes configs in blocks sized for the cache; the block changes only speed.
    from replay_cli.engine import first_step

    rng = np.random.default_rng(8)
    count = rng.integers(0, 4, size=(60, 4)).astype(float)
    success = np.minimum(count, rng.integers(0, 3, size=(60, 4)))
    model = EffortModel.of_counts(count, success, count * 9.0, rng.integers(0, 3, 60), np.ones(60))
    a = rng.normal(size=(7, 60, 4)) * (count > 0)
    assert first_step.config_block(60, 4) == first_step.MAX_BLOCK  # all seven in one block
    together = first_step._steps(model, a, a * 0.3, 0.002)
    monkeypatch.setattr(first_step, "BLOCK_VALUES", 1)
    assert first_step.config_block(60, 4) == 1
    alone = first_step._steps(model, a, a * 0.3, 0.002)
    for name in ("kl", "d_p", "d_pm", "d_fm", "d_pe", "first_p", "eta"):
        np.testing.assert_array_equal(getattr(alone, name), getattr(together, name), err_msg=name)
