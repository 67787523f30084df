"""Issue 45's checks of the tool against a world's simulated training (tests/worlds/world.py):
what the tool says about a world's log, and how that compares with the truth.

1. `pick_right`: the recommended config keeps ≥ 95% of shaping off's long-problem resolve rate
   after simulated training and cuts solve minutes; "keep shaping off" is right only where no
   shaped config clears that.
2. `spearman` / `pair_agreement`: the tool's `forecast/resolve_vs_off@long` ranks the shaped
   configs as simulated training's long-problem resolve ratio does.
3. `repeat_rate` against the stated confidence (`won_share`, or `set_share` where the tool has
   it): how often the pick repeats on independent logs of the same world.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import polars as pl

from worlds.world import Shaping, Truth, World, generate_log

KEEP = 0.95
"""The share of shaping off's long-problem resolve rate a pick must keep."""
NOISE_Z = 2.0
"""How many standard errors of the truth's seeds count as noise."""
LONG_RATIO = "forecast/resolve_vs_off@long"
SOLVE_DELTA = "forecast/solve_minutes_vs_off"


@dataclass(frozen=True)
class ToolView:
    """What the tool says about one log: its pick (a simulator label, or "off"), whether it keeps
    shaping off, its stated confidence, and per config label its forecast numbers."""

    pick: str | None
    keep_off: bool
    confidence: float | None
    long_ratio: dict[str, float]
    solve_delta: dict[str, float]
    roles: dict[str, str]
    alike: frozenset[str] = frozenset()
    """The configs the tool says train like its pick (the confidence is the set's)."""
    alpha: float | None = None
    """The causal share of long runs the forecast fitted (`forecast/alpha`)."""
    skill: float | None = None
    """Success at fixed effort per step the forecast fitted (`forecast/skill`)."""
    backtest: float | None = None
    """1 where the fit's backtest passed, 0 where it failed, None without one."""
    fit: str | None = None
    """The fit's one-line statement (`forecast/fit`)."""

    @property
    def picked_set(self) -> frozenset[str]:
        return frozenset() if self.pick is None else self.alike | {self.pick}


def ask_tool(
    log: pl.DataFrame,
    configs: list[Shaping],
    steps: int,
    seeds: int = 2,
    fit: bool | None = None,
) -> ToolView:
    """Replay `configs` on `log` with the forecast at `steps` steps and read the verdict (the
    fit to the log on or off, or as the tool's default where `fit` is None)."""
    from replay_cli import api
    from replay_cli.config import ForecastSettings
    from replay_cli.rollouts.validation import rollouts_from_frame

    tool = [c.tool_config() for c in configs]
    label = {t.config_id: c.label for t, c in zip(tool, configs, strict=True)}
    fitting = {} if fit is None else {"fit": fit}
    forecast = ForecastSettings(steps=steps, seeds=seeds, problems=150, **fitting)
    options = api.report_options(forecast=forecast)
    result = api.replay(rollouts_from_frame(log), tool, options)
    decision = result.verdict.decision
    rec = decision.recommended
    confidence = None
    if rec is not None:
        confidence = rec.get("set_share", rec.get("won_share"))
    ids = [label[c] for c in result.result.summary["config_id"]]
    roles = result.verdict.recommendation.select("config_id", "role").rows()
    by_label = dict(zip(result.result.summary["label"], ids, strict=True))
    alike = frozenset(by_label[a] for a in (rec or {}).get("alike") or [] if a in by_label)
    return ToolView(
        pick=None if rec is None else label[rec["config_id"]],
        keep_off=decision.keep_off,
        confidence=None if confidence is None else float(confidence),
        long_ratio=dict(zip(ids, result.result.summary[LONG_RATIO], strict=True)),
        solve_delta=dict(zip(ids, result.result.summary[SOLVE_DELTA], strict=True)),
        roles={label[c]: r for c, r in roles},
        alike=alike,
        alpha=_first(result.result.summary, "forecast/alpha"),
        skill=_first(result.result.summary, "forecast/skill"),
        backtest=_first(result.result.summary, "forecast/backtest_pass"),
        fit=_first(result.result.summary, "forecast/fit"),
    )


def _first(summary: pl.DataFrame, name: str) -> float | None:
    """A column every config shares (None where absent)."""
    return summary[name][0] if name in summary.columns else None


def shaped(configs: list[Shaping]) -> list[str]:
    return [c.label for c in configs if c.enabled]


def clearing(truth: Truth, z: float) -> list[str]:
    """Shaped configs that clear the bar (z > 0: beyond z standard errors; z < 0: within)."""
    return [c for c in shaped(truth.configs) if truth.clears(c, z=z, keep=KEEP)]


def pick_right(truth: Truth, view: ToolView) -> bool:
    """A shaped pick must clear the bar within the truth's noise; keeping shaping off is right
    only where no shaped config clears it beyond the noise. No pick at all is never right."""
    if view.pick is None:
        return False
    if view.keep_off:
        return not clearing(truth, NOISE_Z)
    return truth.clears(view.pick, z=-NOISE_Z, keep=KEEP)


def spearman(x: list[float], y: list[float]) -> float:
    """Spearman's rank correlation (average ranks for ties)."""

    def ranks(v: list[float]) -> np.ndarray:
        a = np.asarray(v, float)
        order = a.argsort(kind="stable")
        r = np.empty(len(a))
        r[order] = np.arange(len(a), dtype=float)
        for value in np.unique(a):
            tied = a == value
            r[tied] = r[tied].mean()
        return r

    rx, ry = ranks(x), ranks(y)
    if rx.std() == 0 or ry.std() == 0:
        return float("nan")
    return float(np.corrcoef(rx, ry)[0, 1])


def rank_agreement(
    truth: Truth, view: ToolView, what: str = "long_ratio"
) -> tuple[float, float | None, int]:
    """(Spearman of the tool's `what` (`long_ratio`, the rule's bar, or `solve_delta`, its
    ranking) vs the truth's over the shaped configs, the share of the pairs training separates
    beyond its noise that the tool orders the same way or None where it separates none, how many
    pairs it separates)."""
    labels = shaped(truth.configs)
    tool = getattr(view, what)
    rho = spearman([tool[c] for c in labels], [truth.mean(c, what) for c in labels])
    same = total = 0
    for a, b in itertools.combinations(labels, 2):
        sign = truth.separated(a, b, z=NOISE_Z, what=what)
        if sign == 0:
            continue
        total += 1
        same += int(np.sign(tool[a] - tool[b]) == sign)
    return rho, (same / total if total else None), total


def ranks_agree(rho: float, pairs: float | None) -> bool:
    """Check 2: Spearman ≥ 0.7, or ≥ 80% of the separated pairs in the same order."""
    return (not math.isnan(rho) and rho >= 0.7) or (pairs is not None and pairs >= 0.8)


@dataclass(frozen=True)
class Repeats:
    picks: list[str | None]
    confidences: list[float | None]
    sets: list[frozenset[str]] | None = None
    """Per log, the pick and the configs the tool says train like it (None: the picks alone)."""

    @property
    def repeat_rate(self) -> float:
        """Mean over logs of the share of the other logs whose pick falls in this log's set (its
        pick, or a config the tool says trains like it): what the stated confidence claims."""
        k = len(self.picks)
        sets = self.sets or [frozenset() if p is None else frozenset({p}) for p in self.picks]
        same = [
            sum(self.picks[j] in sets[i] for j in range(k) if j != i) / (k - 1) for i in range(k)
        ]
        return float(np.mean(same))

    @property
    def stated(self) -> float:
        """Mean stated confidence (a log without a pick states 0)."""
        return float(np.mean([c or 0.0 for c in self.confidences]))


def repeats(
    world: World,
    configs: list[Shaping],
    logs: int,
    steps: int,
    groups: int,
    horizon: int,
    first_seed: int = 100,
) -> Repeats:
    """The tool's pick and stated confidence on `logs` independent logs of the world."""
    views = [
        ask_tool(generate_log(world, steps, groups, first_seed + i), configs, horizon)
        for i in range(logs)
    ]
    return Repeats(
        [v.pick for v in views], [v.confidence for v in views], [v.picked_set for v in views]
    )
