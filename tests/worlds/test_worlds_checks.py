"""Issue 45's checks: what the tool recommends from a world's log, against the world's simulated
training (tests/worlds/world.py; the checks themselves in tests/worlds/checks.py).

The forecast runs at the horizon of simulated training (HORIZON steps); the truth is the mean of
six training seeds under common random numbers, and its noise is their spread. The tests marked
xfail still fail on the tool as it is (the forecast's effort model, see docs/testing.md); the
marks say what each one measures.
benchmarks/worlds.py prints the same checks, larger, for every world.
"""

from functools import cache

import pytest

from worlds import checks as K
from worlds import world as W

HORIZON = 50
LOG_STEPS, LOG_GROUPS = 12, 48
CHECK_LOGS = 3
REPEAT_LOGS = 8
CONFIGS = W.standard_configs()


@cache
def truth(name: str) -> W.Truth:
    return W.truth(W.WORLDS[name], CONFIGS, HORIZON)


@cache
def view(name: str, i: int) -> K.ToolView:
    log = W.generate_log(W.WORLDS[name], LOG_STEPS, LOG_GROUPS, seed=100 + i)
    return K.ask_tool(log, CONFIGS, HORIZON)


def _worlds(failing: dict[str, str]) -> list:
    return [
        pytest.param(name, marks=pytest.mark.xfail(strict=False, reason=failing[name]))
        if name in failing
        else name
        for name in W.WORLDS
    ]


PICK_FAILS: dict[str, str] = {}
"""Every world's pick is right on every log since the rule reads the outcome at the horizon
(before, it kept shaping off in `effort_pays` and, on half the logs, in `effort_buys_nothing`)."""


@pytest.mark.parametrize("name", _worlds(PICK_FAILS))
def test_the_pick_keeps_long_resolves_and_cuts_solve_minutes(name):
    """Check 1, on each of CHECK_LOGS independent logs: a shaped pick keeps ≥ 95% of shaping
    off's long-problem resolve rate after simulated training (within its noise) and makes
    successes faster; keeping shaping off is right only where no shaped config clears that
    beyond the noise."""
    t = truth(name)
    wrong = [
        (view(name, i).pick, view(name, i).confidence)
        for i in range(CHECK_LOGS)
        if not K.pick_right(t, view(name, i))
    ]
    assert wrong == [], f"configs that clear in training: {K.clearing(t, K.NOISE_Z)}"


RANK_FAILS = {
    "effort_buys_nothing": "failures quit at 0.3-0.9 of a success's time, and the effort model "
    "reads short runs as a cause of failure: the forecast has larger λ lose long resolves "
    "(ρ ≈ −0.94); training loses none (docs/testing.md: what was tried)",
    "skill": "the forecast holds success rates fixed; training's skill makes moderate λ gain "
    "long resolves (1/30 correct best), the forecast ranks small λ first",
    "timeouts_one_policy": "one softmax for all lengths: training has every `all` config lose "
    "two thirds of long resolves, `correct` far less; the forecast, per problem, ranks `all` "
    "about level with `correct` (above it on some logs)",
}


@pytest.mark.parametrize("name", _worlds(RANK_FAILS))
def test_the_forecast_ranks_configs_as_training_does(name):
    """Check 2, on each of CHECK_LOGS independent logs: Spearman ≥ 0.7 between the tool's
    forecast/resolve_vs_off@long and training's long-problem resolve ratio over the shaped
    configs, or ≥ 80% of the pairs training separates beyond its noise in the same order
    (vacuous where it separates none)."""
    found = [K.rank_agreement(truth(name), view(name, i)) for i in range(CHECK_LOGS)]
    assert all(n == 0 or K.ranks_agree(rho, pairs) for rho, pairs, n in found), found


@pytest.mark.parametrize("name", sorted(W.WORLDS))
def test_the_forecasts_solve_minutes_rank_configs_as_training_does(name):
    """Check 2 on the rule's other number, the one that ranks the configs that clear the bar: the
    tool's forecast/solve_minutes_vs_off against training's change of solve minutes, Spearman ≥
    0.7 or ≥ 80% of the separated pairs in the same order, on every log of every world (the long
    ratio above misses in three worlds; the ranking does not)."""
    t = truth(name)
    found = [K.rank_agreement(t, view(name, i), "solve_delta") for i in range(CHECK_LOGS)]
    assert all(n == 0 or K.ranks_agree(rho, pairs) for rho, pairs, n in found), found


@pytest.mark.slow
@pytest.mark.xfail(
    strict=False,
    reason="since the forecast starts from the log's first 4 of 12 steps, effort_pays' pick "
    "repeats on 43% of the other logs where the confidence states 59% (16 points; target 15): "
    "the fixed predictive spread is issue 53 item 7, not yet built",
)
def test_the_stated_confidence_is_how_often_the_pick_repeats():
    """Check 3: the recommended row's stated confidence (won_share, or set_share where the tool
    has it), averaged over REPEAT_LOGS independent logs, is within 15 points of how often the
    pick repeats on the other logs."""
    views = [view("effort_pays", i) for i in range(REPEAT_LOGS)]
    r = K.Repeats(
        [v.pick for v in views], [v.confidence for v in views], [v.picked_set for v in views]
    )
    assert abs(r.stated - r.repeat_rate) <= 0.15, (r.picks, r.confidences)


def _truth(long_ratios: dict[str, list[float]], solve: dict[str, list[float]]) -> W.Truth:
    """A truth with given per-seed long resolve rates (off's are 1) and solve minutes (off's are
    10, a shaped config's 9 unless given)."""
    configs = [W.OFF, *(W.Shaping(lambda_time=1 / k) for k in (240, 60))]
    t = W.Truth(configs)
    for cfg in configs:
        ratios = long_ratios.get(cfg.label, [1.0, 1.0, 1.0])
        minutes = solve.get(cfg.label, [9.0 if cfg.enabled else 10.0] * 3)
        t.outcomes[cfg.label] = [
            W.Outcome(resolve=r, resolve_long=r, solve_minutes=m + 10, solve_minutes_long=m)
            for r, m in zip(ratios, minutes, strict=True)
        ]
    return t


def _view(pick: str, ratios: dict[str, float]) -> K.ToolView:
    return K.ToolView(pick, pick == "off", 0.5, {"off": 1.0, **ratios}, {}, {})


def test_a_pick_is_right_within_noise_and_keeping_off_only_where_nothing_clears():
    t = _truth({"1/240 all": [0.99, 0.97, 0.98], "1/60 all": [0.5, 0.6, 0.55]}, {})
    assert K.clearing(t, K.NOISE_Z) == ["1/240 all"]
    assert K.pick_right(t, _view("1/240 all", {}))
    assert not K.pick_right(t, _view("1/60 all", {}))
    assert not K.pick_right(t, _view("off", {}))
    slower = _truth(
        {"1/240 all": [0.99, 0.97, 0.98], "1/60 all": [0.5, 0.6, 0.55]},
        {"1/240 all": [11.0, 11.0, 11.0]},
    )
    assert K.pick_right(slower, _view("off", {}))  # keeps resolves but makes nothing faster
    noisy = _truth({"1/240 all": [1.0, 0.9, 0.98], "1/60 all": [0.5, 0.6, 0.55]}, {})
    # 1/240 all keeps 0.96 ± 0.03: clears, but not beyond the noise
    assert K.pick_right(noisy, _view("1/240 all", {}))
    assert K.pick_right(noisy, _view("off", {}))


def test_rank_agreement_counts_the_pairs_training_separates():
    t = _truth({"1/240 all": [0.99, 0.97, 0.98], "1/60 all": [0.5, 0.6, 0.55]}, {})
    rho, pairs, n = K.rank_agreement(t, _view("off", {"1/240 all": 0.9, "1/60 all": 0.8}))
    assert (rho, pairs, n) == (pytest.approx(1.0), 1.0, 1)
    rho, pairs, n = K.rank_agreement(t, _view("off", {"1/240 all": 0.8, "1/60 all": 0.9}))
    assert (rho, pairs, n) == (pytest.approx(-1.0), 0.0, 1)
    assert K.spearman([1, 2, 3, 4], [10, 30, 20, 40]) == pytest.approx(0.8)
    assert K.spearman([1, 1, 2], [1, 2, 3]) == pytest.approx(0.8660254)


def test_the_repeat_rate_is_the_share_of_other_logs_with_the_same_pick():
    r = K.Repeats(["a", "a", "b", "a"], [1.0, 0.5, None, 0.5])
    assert r.repeat_rate == pytest.approx((2 / 3 * 3 + 0) / 4)
    assert r.stated == pytest.approx(0.5)


@cache
def run48(name: str) -> K.ToolView:
    """The tool on the first 48 steps of the world's shaping-off run (seed 100)."""
    return K.ask_tool(W.world_log(W.WORLDS[name], "run48", 100), CONFIGS, HORIZON)


@pytest.mark.parametrize("name", sorted(W.WORLDS))
def test_on_a_48_step_run_log_the_pick_is_right(name):
    """Check 1 on a `run48` log: the forecast starts from its first 12 steps (a drifting run
    pooled is no run's start), and the pick keeps long resolves and cuts solve minutes."""
    view = run48(name)
    assert K.pick_right(truth(name), view), (view.pick, K.clearing(truth(name), K.NOISE_Z))


@pytest.mark.parametrize("name", sorted(W.WORLDS))
def test_on_a_48_step_run_log_the_solve_minutes_rank_configs_as_training_does(name):
    found = K.rank_agreement(truth(name), run48(name), "solve_delta")
    assert found[2] == 0 or K.ranks_agree(found[0], found[1]), found


RUN48_RANK_FAILS = {
    **RANK_FAILS,
    "effort_buys_nothing": "measured on run48 logs (benchmarks/worlds.py, 4 logs): ρ −0.94, "
    "0/4 logs; the fit to the log is off by default (docs/report.md, the fit)",
    "skill": "measured on run48 logs: ρ +0.50, 0/4 logs; success rising at fixed effort is "
    "read only by the fit, off by default",
    "timeouts_one_policy": "measured on run48 logs: ρ +0.69, 2/4 logs pass (seed 100 does); "
    + RANK_FAILS["timeouts_one_policy"],
}


@pytest.mark.parametrize("name", _worlds(RUN48_RANK_FAILS))
def test_on_a_48_step_run_log_the_bar_ranks_configs_as_training_does(name):
    found = K.rank_agreement(truth(name), run48(name))
    assert found[2] == 0 or K.ranks_agree(found[0], found[1]), found
