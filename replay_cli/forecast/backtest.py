"""The fit checked against the run it reads (issue 53, item 3), and the stages that prepare the
forecast's world (`STAGES`, run in order by `runs.forecast`): the start window, the fit, the
backtest, the reading the runs use.

The backtest holds out the log's last third of distinct steps, fits on the rest (the same
simulated paths, re-scored on the earlier groups only), and compares the forecast of shaping off
over the held-out steps with what the run logged there, on the same problems: the resolve rate
overall and on long problems (the tool's own buckets), the minutes of a rollout, and each level's
share. Each comparison's band is `BAND_Z` standard errors of the forecast's difference from the
log over the bootstrap's resamples of the problems, the fit redone in every resample: the log's
own sampling noise over the held-out steps and the fit's uncertainty. Where a logged value falls
outside its band, the forecast does not reproduce this run: it decides on the cautious reading
(α = 1, no skill) and `forecast/backtest_pass` is 0 (what the verdict reads to say so).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from replay_cli import catalogue as C
from replay_cli.forecast.fit import (
    CAUTIOUS,
    GRID,
    MIN_FIT_STEPS,
    SETTLE_STEPS,
    SKILLS,
    Fit,
    Grid,
    Simulate,
    alive,
    build,
    choose,
    fitted,
    refined,
    with_shares,
)
from replay_cli.forecast.start import start_groups
from replay_cli.forecast.trajectory import Logged
from replay_cli.forecast.world import World
from replay_cli.maths.problems import GroupLevels, Problems
from replay_cli.maths.scopes import LENGTHS

OFF = "the fit to the log is off"
"""`Fit.why` where the log could tell but the fit was not asked for (`ForecastSettings.fit`)."""
HOLD_OUT = 3
"""The backtest holds out the last 1/HOLD_OUT of the log's distinct steps."""
MIN_BACKTEST = 6
"""Distinct logged steps the backtest needs (the fit needs `MIN_FIT_STEPS` before them)."""
BAND_Z = 2.5
"""Half the band's width in standard errors of the forecast's difference from the log."""
GATED = {
    C.FORECAST_BACKTEST_RESOLVE: "resolve rate",
    C.FORECAST_BACKTEST_RESOLVE_LONG: "resolve rate on long problems",
}
"""What the backtest passes on, with its words in the backtest's line: the resolve rate overall
and on long problems (what the rule's bar reads). The minutes and the level shares are shown with their bands but not passed on: the
model's shares drift slower than a run's where effort pays or skill grows, at any step budget
tried (docs/testing.md, "The fit")."""


@dataclass
class Prepared:
    """What the stages build: the start (its groups, W, L, problems, world), the logged
    trajectory, the fit's grid, the fit, whether the backtest passed, and the columns."""

    problems: Problems
    groups: Sequence[GroupLevels]
    seeds: int
    seed: int
    interval: float
    simulate: Simulate
    fitting: bool  # False: the cautious reading, backtested where the log can tell
    subject: str = "shaping off"  # the config `simulate` runs, in the backtest's words
    run: str = "your run"  # the logged run, in its words ("that run": a pilot's)
    start: list[GroupLevels] = field(default_factory=list)
    width: int = 0
    distinct: int = 0
    world: World | None = None
    logged: Logged | None = None
    grid: Grid | None = None
    fit: Fit | None = None
    columns: dict[str, float | str | None] = field(default_factory=dict)


def start_stage(s: Prepared) -> Prepared:
    """The world of the log's first W steps (`start.py`)."""
    s.start, s.width, s.distinct = start_groups(s.groups)
    if s.width < s.distinct:
        s.problems = Problems.of(s.start) or s.problems
    s.world = World.of(s.problems, s.start, s.seeds)
    s.columns |= {
        C.FORECAST_START_STEPS: float(max(s.width, 1)),
        C.FORECAST_FIT_STEPS: float(max(s.distinct, 1)),
    }
    return s


def fit_stage(s: Prepared) -> Prepared:
    """The fit where the log identifies it; where the fit is off, the cautious reading's path
    alone, for the backtest; where the log cannot tell, the cautious reading and why."""
    assert s.world is not None
    levels = s.world.pi.shape[-1]
    steps = max(s.distinct, 1)
    s.logged = Logged.of(s.start, s.groups)
    why = None
    if s.logged is None:
        why = "the log names no problem (no instance_id)"
    elif s.logged.steps < MIN_FIT_STEPS:
        why = f"the log spans {s.logged.steps} step{'s' if s.logged.steps != 1 else ''}"
    elif not s.logged.recurring():
        why = "no problem is logged at two steps"
    if why is not None:
        s.fit = Fit.cautious(levels, steps, why, settle=SETTLE_STEPS)
        return s
    assert s.logged is not None
    points = GRID if s.fitting else CAUTIOUS
    grid, simulated = build(s.world, s.logged, s.width, s.simulate, s.seed, points)
    if not s.fitting:
        s.grid, s.fit = grid, Fit.cautious(levels, steps, OFF)
        return s
    every = np.ones(len(s.logged.rank), bool)
    s.grid = refined(s.world, grid, s.simulate, simulated, every)
    choice = choose(s.grid.table(every), s.grid)
    s.fit = fitted(s.grid, choice, steps, alive(s.world), s.interval)
    return s


def backtest_stage(s: Prepared) -> Prepared:
    """The backtest of the fit's reading; the cautious reading where it fails."""
    if s.grid is None or s.logged is None or s.fit is None:
        return s
    checked, passed, cautious = backtest(s.grid, s.logged, s.fitting, s.subject, s.run)
    s.columns |= checked
    if s.fit.why is not None:
        return s
    why = None
    if passed is False:
        why = "the fitted forecast does not reproduce the log's later steps"
    elif cautious:  # the log rejects the cautious reading in sample, not out of it
        why = "the cautious reading reproduces the log's later steps as well"
    if why is not None:
        s.fit = Fit.cautious(s.fit.alpha.shape[-1], s.fit.steps, why)
        s.columns[C.FORECAST_BACKTEST_PASS] = float(bool(cautious))
    return s


def reading_stage(s: Prepared) -> Prepared:
    """The world at the fit's causal shares, and the fit's columns and statement."""
    assert s.world is not None
    assert s.fit is not None
    f = s.fit
    on = alive(s.world)
    s.world = with_shares(s.world, f.alpha)
    k = f.long_level(on)
    fitted_alpha = f.fitted.get("alpha", False)
    s.columns |= {
        C.FORECAST_ALPHA: float(f.alpha[-1, k]),
        C.bound(C.FORECAST_ALPHA, "low"): _at(f.alpha_low, k) if fitted_alpha else None,
        C.bound(C.FORECAST_ALPHA, "high"): _at(f.alpha_high, k) if fitted_alpha else None,
        C.FORECAST_ALPHA_LEVELS: alpha_levels(f.alpha),
        C.FORECAST_SKILL: f.points / 100 if f.fitted.get("skill") else 0.0,
        C.bound(C.FORECAST_SKILL, "low"): _scaled(f.points_low),
        C.bound(C.FORECAST_SKILL, "high"): _scaled(f.points_high),
        C.FORECAST_FIT: statement(f, k, f.long_level(on, 0)),
    }
    return s


STAGES: tuple[Callable[[Prepared], Prepared], ...] = (
    start_stage,
    fit_stage,
    backtest_stage,
    reading_stage,
)
"""The forecast's preparation, in order: the start, the fit, the backtest, the reading."""


def _at(values: np.ndarray | None, k: int) -> float | None:
    return None if values is None else float(values[-1, k])


def alpha_levels(alpha: np.ndarray) -> str:
    """The causal share of every effort level, lowest first: one row where every length bucket
    reads the same, else per bucket ("short: 0.00 1.00; medium: ...; long: ...")."""

    def row(a: np.ndarray) -> str:
        return " ".join(f"{x:.2f}" for x in a)

    if np.all(alpha == alpha[0]):
        return row(alpha[0])
    return "; ".join(f"{name}: {row(a)}" for name, a in zip(LENGTHS, alpha, strict=True))


def _scaled(points: float | None) -> float | None:
    return None if points is None else points / 100


def statement(f: Fit, k: int, short: int | None = None) -> str:
    """One line: what the fit read from the log, or which assumption drives the forecast: the
    causal share of long runs on long problems (level `k` of the long bucket, what the bar
    reads) and, where it differs, on short ones (level `short` of the short bucket)."""
    head = f"from {f.steps} logged step{'s' if f.steps != 1 else ''}"
    reading = (
        f"{head}: the cautious reading (longer runs cause all of their extra success, no skill, "
        "the step size as configured)"
    )
    if f.why == OFF:
        return f"{reading}; {f.why} (--fit)"
    if f.why is not None and f.settle is None:
        return f"{reading}, since {f.why}"
    if f.why is not None:
        return (
            f"{reading}, since {f.why}; about {f.settle} logged steps of a shaping-off run "
            "naming its problems may settle it (--fit)"
        )
    if f.fitted.get("alpha") and f.alpha_low is not None and f.alpha_high is not None:
        what = (
            f"long runs cause {f.alpha[-1, k]:.0%} of their extra success (interval "
            f"{f.alpha_low[-1, k]:.0%}–{f.alpha_high[-1, k]:.0%})"
        )
        short = k if short is None else short
        if f.alpha[0, short] != f.alpha[-1, k]:
            what += f" on long problems, {f.alpha[0, short]:.0%} on short ones"
    else:
        what = "long runs cause all of their extra success (the log does not reject it)"
    if f.fitted.get("skill"):
        skill = (
            f"success at fixed effort rises {f.points:.2f} points a step (interval "
            f"{f.points_low or 0:.2f}–{f.points_high or 0:.2f})"
        )
    else:
        skill = "no skill shows at fixed effort"
    size = (
        "the step size as configured"
        if f.scale == 1.0
        else f"steps {f.scale:g}× the configured size"
    )
    return f"{head}: {what}; {skill}; {size}"


def _compared(
    grid: Grid, logged: Logged, early: np.ndarray, picks: list[tuple[int, int]]
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per compared value over the held-out groups: (1 + B,) forecasts and logged values (row 0
    the fit's reading, then each resample's own fit, weighted by its problems' weights)."""
    weights, observed = grid.cells.weights, grid.cells.observed
    cache: dict[tuple[int, int], np.ndarray] = {}

    def model(i: int, j: int) -> np.ndarray:
        if (i, j) not in cache:
            cache[(i, j)] = grid.readings[i].predicted(float(SKILLS[j]))
        return cache[(i, j)]

    held = ~early
    levels = logged.count.shape[1]
    values = {
        C.FORECAST_BACKTEST_RESOLVE: (0, np.ones_like(held)),
        C.FORECAST_BACKTEST_RESOLVE_LONG: (0, logged.bucket == 2),
        C.FORECAST_BACKTEST_MINUTES: (1, np.ones_like(held)),
        **{f"share{k}": (2 + k, np.ones_like(held)) for k in range(levels)},
    }
    out = {}
    for name, (j, scope) in values.items():
        m, x = np.full(len(picks), np.nan), np.full(len(picks), np.nan)
        for b, (i, s) in enumerate(picks):
            y = model(i, s)[:, j]
            ok = held & scope & np.isfinite(y)
            w = weights[b, logged.code[ok]] * logged.n[ok]
            if w.sum() > 0:
                m[b] = (w * y[ok]).sum() / w.sum()
                x[b] = (w * observed[ok, j]).sum() / w.sum()
        out[name] = (m, x)
    return out


def _inside(grid: Grid, logged: Logged, early: np.ndarray, pick: tuple[int, int]) -> bool:
    """Whether one reading's forecast of the held-out steps lies within `BAND_Z` standard
    errors of the log's resamples on every `GATED` value (the reading not refitted)."""
    picks = [pick] * (grid.cells.weights.shape[0])
    for name, (m, x) in _compared(grid, logged, early, picks).items():
        d = m - x
        if name in GATED and abs(d[0]) > BAND_Z * float(np.nanstd(d[1:], ddof=1)):
            return False
    return True


def backtest(
    grid: Grid,
    logged: Logged,
    fitting: bool = True,
    subject: str = "shaping off",
    run: str = "your run",
) -> tuple[dict[str, float | str | None], bool | None, bool]:
    """The backtest's columns, whether every logged value lies in its band (None: no test),
    and whether the cautious reading's forecast lies in its band too (then the log's later
    steps do not confirm the fit: the forecast keeps the cautious reading). Where the fit is off
    (`fitting` False) the reading checked is the cautious one, in every resample. `subject`,
    `run`: the config simulated and the run logged, in the line's words (a pilot's: its
    config's label, "that run")."""
    ranks = np.unique(logged.rank)
    if len(ranks) < MIN_BACKTEST:
        return {}, None, True
    cut = ranks[len(ranks) - len(ranks) // HOLD_OUT]
    early = logged.rank < cut
    one = (grid.cautious, int(np.flatnonzero(SKILLS == 0)[0]))
    cautious = None  # where the fit is off, the reading checked below is the cautious one
    if fitting:
        cautious = _inside(grid, logged, early, one)
        choice = choose(grid.table(early), grid)
        picks = [(choice.point, choice.skill), *((int(i), int(j)) for i, j in choice.resampled)]
    else:
        picks = [one] * grid.cells.weights.shape[0]
    out: dict[str, float | str | None] = {}
    passed, worst = True, (0.0, 0.0)
    for name, (m, x) in _compared(grid, logged, early, picks).items():
        d = m - x
        spread = BAND_Z * float(np.nanstd(d[1:], ddof=1))
        if not np.isfinite(d[0]) or not np.isfinite(spread):
            continue
        if name.startswith("share"):
            if abs(d[0]) / max(spread, 1e-12) >= worst[0] / max(worst[1], 1e-12):
                worst = (abs(float(d[0])), spread)
            continue
        passed &= name not in GATED or bool(abs(d[0]) <= spread)
        out[name], out[C.logged_value(name)] = float(m[0]), float(x[0])
        out[C.bound(name, "low")], out[C.bound(name, "high")] = m[0] - spread, m[0] + spread
    out[C.FORECAST_BACKTEST_SHARE_GAP], out[C.bound(C.FORECAST_BACKTEST_SHARE_GAP, "high")] = worst
    out[C.FORECAST_BACKTEST_PASS] = float(passed)
    first, last = int(cut) + 1, int(ranks[-1]) + 1
    out[C.FORECAST_BACKTEST] = backtest_text(out, first, last, fitting, subject, run)
    return out, passed, passed if cautious is None else cautious


def backtest_text(
    out: dict[str, float | str | None],
    first: int,
    last: int,
    fitting: bool,
    subject: str = "shaping off",
    run: str = "your run",
) -> str:
    """The backtest in one line: the held-out steps, the value it names (the overall resolve rate
    where it passes, else the gated value furthest outside its band) forecast and logged there
    with the band, and what the forecast then rests on. `subject`: the config simulated; `run`:
    the run logged (a pilot's is "that run", not the user's own)."""
    passed = out[C.FORECAST_BACKTEST_PASS] == 1.0

    def outside(name: str) -> float:
        value, low, high = (
            out.get(name),
            out.get(C.bound(name, "low")),
            out.get(C.bound(name, "high")),
        )
        if (
            not isinstance(value, float)
            or not isinstance(low, float)
            or not isinstance(high, float)
        ):
            return -1.0
        logged = float(out[C.logged_value(name)] or 0.0)
        return max(low - logged, logged - high) / max(high - low, 1e-12)

    name = C.FORECAST_BACKTEST_RESOLVE if passed else max(GATED, key=outside)
    what = GATED[name]
    value, logged = out.get(name), out.get(C.logged_value(name))
    low, high = out.get(C.bound(name, "low")), out.get(C.bound(name, "high"))
    text = (
        f"the forecast of {subject} {'reproduces' if passed else 'does not reproduce'} steps "
        f"{first}–{last} of {run}: {what} {C.show(name, value)} vs logged "
        f"{C.show(name, logged)}, band {C.show(name, low)}–{C.show(name, high)}"
    )
    if passed:
        return text
    if fitting:
        return text + "; the forecast decides on the cautious reading"
    this = "this run" if run == "your run" else run
    return text + f"; its numbers are the cautious reading's, not a prediction of {this}"
