"""The forecast's runs: the main simulation and each check on it described as data (`Run`, the
list `RUNS`) and executed by one loop (`forecast`), so that a new reading of the simulation is
one more entry, not one more branch."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from replay_cli import catalogue as C
from replay_cli.config import EffortSettings, ForecastSettings, ReplayConfig, ShapingParams
from replay_cli.forecast.backtest import STAGES, Prepared
from replay_cli.forecast.horizon import REFUSED, RULED, horizon, resample_frame
from replay_cli.forecast.simulate import Replay, path, simulate
from replay_cli.forecast.table import table
from replay_cli.forecast.world import World, metrics
from replay_cli.maths.bootstrap import summary_value
from replay_cli.maths.problems import GroupLevels, Problems
from replay_cli.maths.scopes import ALL, LONG, SCOPES
from replay_cli.parameters import registry


@dataclass(frozen=True)
class Run:
    """One run of the simulation, and what the summary reads of its end. `name`: "" for the main
    run (every horizon column), else the check's suffix (`catalogue.at_check`; the rule's
    columns only, `horizon.RULED`). `seeds`: the share of the forecast's seeds it runs on (the
    first ones); `budget`: the step budget's scale; `steps`: its length as a share of T;
    `seed`: added to the forecast's seed (fresh draws); `start`: the run from whose end it
    starts (None: the logged effort); `within`: the run whose first steps it is, read from that
    run's trajectory instead of simulated again (the same draws); `table`: its trajectory
    enters the long table."""

    name: str
    seeds: float = 1.0
    budget: float = 1.0
    steps: float = 1.0
    seed: int = 0
    start: str | None = None
    within: str | None = None
    table: bool = False

    def length(self, steps: int) -> int:
        """Its simulated steps, of a forecast of `steps`."""
        return max(1, int(steps * self.steps))


MAIN = Run("", table=True)
RUNS = (
    MAIN,
    # The checks read the rule's numbers at their end only: half the seeds serve them.
    Run("half", seeds=0.5, budget=0.5, table=True),
    Run("twice", seeds=0.5, budget=2.0, table=True),
    Run("half_steps", steps=0.5, within=""),
    Run("twice_steps", seeds=0.5, seed=1, start=""),  # the main run, T more steps
)
"""The main run, then the checks (`ForecastSettings.check_budgets`): half and twice the step
budget, half the steps, and twice the steps (the main run continued with fresh draws)."""


def off_twin(cfg: ReplayConfig) -> ReplayConfig:
    """A config's shaping-off twin: the same estimator and masking, no shaping."""
    shaping = ShapingParams(enabled=False, mask_flagged=cfg.shaping.mask_flagged)
    return cfg.model_copy(update={"shaping": shaping})


def _away(cfg: ReplayConfig) -> int:
    """How many of a config's settings are away from their defaults."""
    flat = {**cfg.shaping.model_dump(), **cfg.advantage.model_dump()}
    return sum(flat[n] != p.default for n, p in registry().items() if n in flat)


def footing(configs: Sequence[ReplayConfig]) -> ReplayConfig:
    """The baseline the log was run with, which every config is measured against: shaping off
    with the sweep's own non-shaping settings (the mask switch, the estimator, the clip,
    normalisation), those of the configs' shaping-off twins nearest the defaults (the first in
    the sweep's order among equals)."""
    twins = [off_twin(c) for c in configs]
    return min(twins, key=lambda t: (_away(t), twins.index(t)))


def _twins(
    configs: Sequence[ReplayConfig], replay: Replay
) -> tuple[list[ReplayConfig], list[int], list[int]]:
    """The simulated configs (the configs, then one shaping-off twin per replay key: configs
    replayed together share theirs), the index among them of the twin every config is measured
    against (the footing's: one baseline for all), and of each config's own twin."""

    def key(cfg: ReplayConfig) -> object:
        shared = replay.key(cfg)
        return cfg.config_id if shared is None else shared

    base = footing(configs)
    twins = {key(base): base} | {key(c): off_twin(c) for c in configs}
    keys = list(twins)
    own = [len(configs) + keys.index(key(c)) for c in configs]
    return [*configs, *twins.values()], [len(configs)] * len(configs), own


@dataclass(frozen=True)
class _Job:
    """What every run of one forecast shares."""

    world: World
    configs: Sequence[ReplayConfig]
    simulated: list[ReplayConfig]  # the configs, then their shaping-off twins
    twin_of: list[int]  # the footing's twin, for every config
    own_of: list[int]  # each config's own twin
    settings: ForecastSettings
    budget: float
    intervals: EffortSettings
    replay: Replay
    skill: float = 0.0  # the fit's success logit drift per step


def _simulated(
    job: _Job, runs: Sequence[Run], refused: dict[int, str]
) -> tuple[dict[str, tuple[World, np.ndarray]], list[pl.DataFrame]]:
    """Each run in order: its world and the efforts at its end by name, and the long table's
    frames of the runs with `table`; `refused` gets every run's refusals."""
    ends: dict[str, tuple[World, np.ndarray]] = {}
    kept: dict[str, dict[int, np.ndarray]] = {}
    began: dict[str, int] = {}  # the forecast step each run starts at (skill's clock)
    frames = []
    s = job.settings
    for run in runs:
        if run.within is not None:
            length = run.length(s.steps)
            world = ends[run.within][0].skilled(job.skill * (began[run.within] + length))
            ends[run.name] = (world, kept[run.within][length])
            continue
        world = job.world
        if run.seeds < 1:
            world = world.first(max(1, int(s.seeds * run.seeds)))
        start = None if run.start is None else ends[run.start][1][:, : world.pi.shape[0]]
        at = 0 if run.start is None else began[run.start] + runs_length(runs, run.start, s.steps)
        began[run.name] = at
        kept[run.name] = {r.length(s.steps): world.pi for r in runs if r.within == run.name}
        budget, steps, seed = job.budget * run.budget, run.length(s.steps), s.seed + run.seed
        sim, end = simulate(
            world,
            job.simulated,
            steps,
            budget,
            seed,
            job.replay,
            refused,
            start,
            kept[run.name],
            skill=job.skill,
            at=at,
        )
        if run.table:
            frames.append(table(sim, job.configs, job.twin_of, budget))
        ends[run.name] = (world.skilled(job.skill * (at + steps)), end)
    return ends, frames


def runs_length(runs: Sequence[Run], name: str, steps: int) -> int:
    """The simulated steps of the run `name`."""
    return next(r for r in runs if r.name == name).length(steps)


def _read(
    job: _Job,
    runs: Sequence[Run],
    ends: dict[str, tuple[World, np.ndarray]],
    refused: dict[int, str],
) -> tuple[dict[str, dict], pl.DataFrame]:
    """Per config its summary columns at the end of each run (none where its estimator or its
    twin's refused the simulated groups: the reason instead), and the main run's resamples."""
    configs = job.configs
    columns: dict[str, dict] = {c.config_id: {} for c in configs}
    resamples = pl.DataFrame()
    for run in runs:
        point, boot = horizon(*ends[run.name], job.twin_of, job.intervals, job.own_of)
        for k, cfg in enumerate(configs):
            why = refused.get(k) or refused.get(job.twin_of[k]) or refused.get(job.own_of[k])
            if why is not None:
                for name in point:
                    point[name][k] = None
                for name in boot:
                    boot[name][:, k] = np.nan
                columns[cfg.config_id][REFUSED] = why
        for k, cfg in enumerate(configs):
            mine = {name: v[k] for name, v in point.items()}
            if run.name:
                mine = {
                    C.at_check(n, run.name): v
                    for n, v in mine.items()
                    if n.partition("@")[0] in RULED
                }
            columns[cfg.config_id] |= mine
        if run is MAIN and boot:
            resamples = resample_frame(configs, boot)
    return columns, resamples


def _sampled(
    world: World,
    problems: Problems,
    settings: ForecastSettings,
    budget: float,
    prepared: dict[str, float | str | None],
) -> dict[str, float | str | None]:
    """The columns every config shares: the sample, the budget, the start, the fit and its
    backtest (`prepared`), and the logged start (resolve rate, minutes of failures) over all
    and long problems."""
    start = metrics(world.pi, world.rate, world.m, world.bucket, world.weight)
    sampled: dict[str, float | str | None] = {
        C.FORECAST_STEPS: float(settings.steps),
        C.FORECAST_PROBLEMS: float(world.pi.shape[1]),
        C.FORECAST_PROBLEMS_TOTAL: float(len(problems.model)),
        C.FORECAST_PROBLEMS_SAMPLED: float(len(np.unique(world.index))),
        C.FORECAST_BUDGET: budget,
        **prepared,
    }
    for where in (ALL, LONG):
        b, scope = SCOPES.index(where), where.suffix
        sampled[C.scoped(C.F_RESOLVE_START, scope)] = summary_value(np.mean(start[:, b, 0]))
        sampled[C.scoped(C.F_FAIL_START, scope)] = summary_value(np.mean(start[:, b, 2]))
    return sampled


def forecast(
    problems: Problems,
    groups: Sequence[GroupLevels],
    configs: Sequence[ReplayConfig],
    settings: ForecastSettings,
    budget: float,
    intervals: EffortSettings,
    replay: Replay,
) -> tuple[pl.DataFrame, dict[str, dict[str, float | None]], pl.DataFrame]:
    """The forecast table (config_id, budget, step, bucket, metric, mean, low, high over seeds;
    `_off` metrics for the config's shaping-off twin, `_vs_off` for their per-seed ratio or
    difference), per config its summary columns at the horizon T (the outcome the rule reads,
    with intervals from resampling the problems: `horizon`), and the resample table (config_id,
    resample, the `RESAMPLED` columns) the verdict's confidence reads. `RUNS` are simulated in
    order, after the `STAGES` that prepare their world (the start window, the fit, its backtest,
    the reading), then read: a refusal in any run blanks the config in every reading."""
    off = footing(configs)  # the baseline the log was run with
    s = Prepared(
        problems,
        groups,
        settings.seeds,
        settings.seed,
        intervals.interval,
        path(off, budget, settings.seed, replay),
        settings.fit,
    )
    for stage in STAGES:
        s = stage(s)
    assert s.world is not None
    assert s.fit is not None
    world, problems = s.world, s.problems
    budget *= s.fit.scale  # the step size the fit read from the log (else as configured)
    job = _Job(
        world, configs, *_twins(configs, replay), settings, budget, intervals, replay, s.fit.skill
    )
    runs = [r for r in RUNS if settings.check_budgets or r is MAIN]
    refused: dict[int, str] = {}
    ends, frames = _simulated(job, runs, refused)
    columns, resamples = _read(job, runs, ends, refused)
    sampled = _sampled(world, problems, settings, budget, s.columns)
    for cid in columns:
        columns[cid] |= sampled
    return pl.concat(frames), columns, resamples
