"""The recommendation rule (docs/report.md, "The recommendation"): a config is eligible when it
passes every criterion in `CRITERIA`, read from the summary table's outcome at the horizon (the
forecast's resolve rate and minutes after T steps, each against shaping off's, with paired
bootstrap intervals over problems). `CRITERIA` is the one list: `judge_rows` applies it, the
confidence applies its resolve criteria again per resample, scarcity reads their intervals, and
the rule, the confidence, the frontier and the trade read the resolve rate kept through `kept`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from replay_cli import catalogue as C
from replay_cli.advice.texts import kept_text
from replay_cli.advice.words import num
from replay_cli.catalogue.units import pct
from replay_cli.maths.thresholds import EXPLOSION

STATIC_NEEDED = (C.INTRODUCED, C.EXPLOSION_TRAINED, C.UNCHARGED_ONLY)
"""The summary columns the criteria that need no forecast read."""


def plain_off(row: dict[str, Any]) -> bool:
    """A config that leaves every reward as it is (it launches as `enabled=false`): shaping
    disabled, or lambda 0 with no bonus and no floor."""
    return not row.get("enabled", True) or (
        row.get("lambda_time") == 0
        and row.get("lambda_call_bonus", 0) == 0
        and row.get("floor") is None
    )


def shaping_off(summary: pl.DataFrame) -> pl.Series:
    """`plain_off` of each summary row."""
    return pl.Series("off", [plain_off(r) for r in summary.iter_rows(named=True)], pl.Boolean)


def changes_setting(row: dict[str, Any]) -> bool:
    """Whether a config's non-shaping settings (the mask switch, the estimator, the clip,
    normalisation) differ from the baseline's every config is measured against: its own
    shaping-off twin then has a resolve rate of its own (`forecast/resolve_own_off`)."""
    return any(row.get(C.scoped(C.F_RESOLVE_OWN_OFF, s)) is not None for s in ("", C.LONG))


class Rule(BaseModel):
    """The thresholds of the recommendation; each can be changed (`judge(summary, rule=Rule(...))`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    min_resolve_vs_off: float = Field(
        0.95,
        description="the low end of the interval of the resolve rate after T steps, as a share "
        "of shaping off's after T steps, over all problems (forecast/resolve_vs_off_low)",
    )
    min_resolve_vs_off_long: float = Field(
        0.95, description="the same on long problems (forecast/resolve_vs_off_low@long)"
    )
    max_fail_faster: float = Field(
        0.05,
        description="not a criterion: the fail_faster warning's threshold, how much sooner than "
        "under shaping off failures may end after T steps as a share of shaping off's mean "
        "minutes of a failure then (what giving up costs is in the resolve rate the rule reads)",
    )
    min_faster: float = Field(
        0.01,
        description="how much faster than under shaping off successes must end after T steps, "
        "as a share of shaping off's mean minutes of a success then, to count as faster at all "
        "(a smaller change, such as a rounding-sized λ's, ties with shaping off)",
    )
    max_uncharged_only: float = Field(
        0.01, description="the share of groups with signal only from uncharged rows, at most"
    )
    require_launchable: bool = Field(
        True,
        description="only configs NeMo-RL can run as they are: the PR's semantics and its own "
        "GRPO estimator (the launch overrides would run something else)",
    )
    max_trade_cost: float = Field(
        0.10,
        description="where shaping off is kept, a best trade is offered only when it keeps at "
        "least 1 − this of shaping off's resolve rate after T steps (overall and long)",
    )
    min_problems: int = Field(
        50,
        ge=1,
        description="below this many problems in the forecast, the verdict is 'not enough "
        "data to decide'",
    )
    alike_level: float = Field(
        0.90,
        gt=0,
        lt=1,
        description="two eligible configs train alike when the interval at this level of "
        "each difference the rule reads (resolve on long problems, solve minutes) holds 0",
    )
    spread: float = Field(
        2.0,
        gt=0,
        description="how much wider than the bootstrap's a new log's spread around this log's "
        "value is taken to be in the confidence (2 minimises the worst error in the two-way "
        'normal model; docs/report.md, "Confidence")',
    )

    def bars(self) -> C.Bars:
        """The thresholds the catalogue marks summary cells by."""
        return C.Bars(resolve=self.min_resolve_vs_off, fail_share=self.max_fail_faster)

    def fail_limit(self, row: dict[str, Any]) -> float:
        """Minutes by which failures may end sooner than under shaping off after T steps."""
        return self.bars().fail_limit(row)

    def faster_limit(self, row: dict[str, Any]) -> float:
        """The smallest solve-minute gain after T steps that counts."""
        return self.min_faster * num(row, C.F_SOLVE_OFF)

    def bar_text(self, steps: float | None = None) -> str:
        """The resolve bar a config had to clear, from the rule's thresholds: 'low end of the
        resolve rate's interval after 50 steps ≥ 95% of shaping off's, overall and on long
        problems'."""
        after = "T" if steps is None else f"{steps:.0f}"
        overall, long = pct(self.min_resolve_vs_off), pct(self.min_resolve_vs_off_long)
        where = (
            f"{overall} of shaping off's, overall and on long problems"
            if overall == long
            else f"{overall} of shaping off's overall and {long} on long problems"
        )
        return f"low end of the resolve rate's interval after {after} steps ≥ {where}"

    def summary_text(self) -> str:
        """The rule in one sentence, with its thresholds (the page and the terminal print it)."""
        return (
            "eligible: launchable as replayed, no inversion that shaping introduces, no "
            f"|advantage| above {EXPLOSION:g} left after the clip, a resolve rate after T "
            f"training steps of at least {pct(self.min_resolve_vs_off)} of shaping off's (low "
            f"end of the interval) overall and {pct(self.min_resolve_vs_off_long)} on long "
            f"problems, signal from uncharged rows in at most "
            f"{pct(self.max_uncharged_only)} of groups; among those, the one that makes "
            "successes fastest after T steps against shaping off wins (ties: the smaller λ, "
            "then shaping off)"
        )


def width(row: dict[str, Any], scope: str) -> float | None:
    """How far below its point value the interval of the resolve rate kept in `scope` reaches
    (None without an interval)."""
    point = row.get(C.scoped(C.F_RESOLVE_VS_OFF, scope))
    low = row.get(C.bound(C.F_RESOLVE_VS_OFF, "low", scope))
    return None if point is None or low is None else point - low


def kept(row: dict[str, Any], scope: str, end: str = "low", resampled: Any = None) -> Any:
    """The resolve rate kept after T steps as a share of shaping off's, in `scope` ('' or
    '@long'): the low end of its interval as the rule reads it (the point value without an
    interval), or the point value (`end="point"`). With `resampled` (the ratio per bootstrap
    resample), each resample's low end: its value less the width the interval has here. None
    without a ratio (shaping off resolves nothing: `meets` compares the rates)."""
    point = row.get(C.scoped(C.F_RESOLVE_VS_OFF, scope))
    if point is None or end == "point":
        return None if point is None else float(point)
    if resampled is not None:
        return resampled - (width(row, scope) or 0.0)
    low = row.get(C.bound(C.F_RESOLVE_VS_OFF, "low", scope))
    return float(low if low is not None else point)


def meets(row: dict[str, Any], scope: str, least: float, resampled: Any = None) -> Any:
    """The resolve rate kept in `scope` (per resample with `resampled`) is at least `least`;
    without a ratio, the resolve rate may not fall below shaping off's."""
    value = kept(row, scope, resampled=resampled)
    if value is None:
        on, off = num(row, C.scoped(C.F_RESOLVE, scope)), num(row, C.scoped(C.F_RESOLVE_OFF, scope))
        return on >= off - 1e-12
    with np.errstate(invalid="ignore"):
        return value >= least


@dataclass(frozen=True)
class Criterion:
    """One test of the rule: its name, whether a summary row passes, and the sentence that says
    why a row fails (with its number). One on the resolve rate kept (`on_resolve`) names its
    `scope` and bar (`least`), which the confidence and scarcity read; the others are static."""

    name: str
    passes: Callable[[dict[str, Any], Rule], bool]
    why: Callable[[dict[str, Any], Rule], str]
    scope: str | None = None
    least: Callable[[Rule], float] | None = None

    @classmethod
    def on_resolve(cls, name: str, scope: str, least: Callable[[Rule], float]) -> Criterion:
        return cls(
            name,
            lambda r, rule: meets(r, scope, least(rule)),
            lambda r, rule: f"it {kept_text(r, scope, least(rule))}",
            scope,
            least,
        )

    @property
    def static(self) -> bool:  # needs no forecast; the bootstrap does not move it
        return self.scope is None


def _launchable(row: dict[str, Any]) -> bool:
    return row.get("semantics", "nemo-rl") == "nemo-rl" and row.get("estimator", "grpo") == "grpo"


CRITERIA = [
    Criterion(
        "launchable",
        lambda r, rule: not rule.require_launchable or _launchable(r),
        lambda r, _: (
            f"NeMo-RL cannot launch it as replayed (semantics {r.get('semantics')}, "
            f"estimator {r.get('estimator')})"
        ),
    ),
    Criterion(
        "inversion",
        lambda r, _: num(r, C.INTRODUCED) == 0,
        lambda r, _: (
            f"shaping puts a resolved rollout below an unresolved one in "
            f"{pct(num(r, C.INTRODUCED))} of groups"
        ),
    ),
    Criterion(
        "explosion",
        lambda r, _: num(r, C.EXPLOSION_TRAINED) == 0,
        lambda r, _: (
            f"{pct(num(r, C.EXPLOSION_TRAINED))} of trained rows keep "
            f"|advantage| > {EXPLOSION:g} (up to {num(r, C.ABS_MAX):.4g}): clip to "
            f"[-{EXPLOSION:g}, {EXPLOSION:g}]"
        ),
    ),
    Criterion.on_resolve(C.T_RESOLVE, "", lambda rule: rule.min_resolve_vs_off),
    Criterion.on_resolve("resolve_long", C.LONG, lambda rule: rule.min_resolve_vs_off_long),
    Criterion(
        "uncharged_only",
        lambda r, rule: num(r, C.UNCHARGED_ONLY) <= rule.max_uncharged_only,
        lambda r, rule: (
            f"{pct(num(r, C.UNCHARGED_ONLY))} of groups get signal only "
            f"from rows that were not charged (limit {pct(rule.max_uncharged_only)})"
        ),
    ),
]
"""Every criterion, in the order reasons list them: a new one is one entry here (its threshold a
`Rule` field); the confidence and scarcity apply a resolve criterion without further change."""


def resolve_criteria() -> list[Criterion]:
    """The criteria on the resolve rate kept (a config failing only these may be a trade)."""
    return [c for c in CRITERIA if not c.static]


_SCOPES = tuple(dict.fromkeys(c.scope for c in resolve_criteria()))
NEEDED = (
    *STATIC_NEEDED,
    *(C.scoped(C.F_RESOLVE_VS_OFF, s) for s in _SCOPES),
    C.F_SOLVE_VS_OFF,
    C.F_SOLVE_OFF,
)
"""The summary columns the whole rule reads (the outcome at the horizon among them)."""
_INTERVALS = [
    (C.scoped(C.F_RESOLVE_VS_OFF, s), C.bound(C.F_RESOLVE_VS_OFF, "low", s)) for s in _SCOPES
]
RULE_READS = (*(name for pair in _INTERVALS for name in pair), C.F_SOLVE_VS_OFF)
"""The numbers the rule reads, carried by the recommendation table under their summary names."""


@dataclass(frozen=True)
class Judged:
    """A summary row judged: its place, the row, the criteria it fails, whether it is shaping off."""

    index: int
    row: dict[str, Any]
    failed: tuple[Criterion, ...]
    off: bool

    def without_horizon(self) -> Judged:
        """Only its static failures (where the resolve rate is not judged)."""
        return replace(self, failed=tuple(c for c in self.failed if c.static))


def judge_rows(
    rows: Iterable[dict[str, Any]], off: list[bool], rule: Rule, horizon: bool = True
) -> list[Judged]:
    """Each row against every criterion (only the static ones without the horizon's columns)."""
    criteria = [c for c in CRITERIA if horizon or c.static]
    return [
        Judged(i, row, tuple(c for c in criteria if not c.passes(row, rule)), off[i])
        for i, row in enumerate(rows)
    ]
