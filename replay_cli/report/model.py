"""One report: a judged replay's tables, its verdict and its manifest, built once (`Report.of`,
`Report.read`; docs/architecture.md, layer 7) and rendered by every surface, `write.write` its one
serialiser (`Report.read(write(report, d)) == report`). The views more than one surface shows live
here: the frontier, the highlighted configs, the trade to show and the rule's threshold texts."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import cached_property
from importlib.metadata import version
from pathlib import Path
from typing import Any

import polars as pl

from replay_cli import catalogue as C
from replay_cli import schema as S
from replay_cli.advice.frontier import frontier, highlights, rated
from replay_cli.advice.rule import Rule
from replay_cli.advice.texts import off_course_text
from replay_cli.advice.verdict import (
    Decision,
    Verdict,
    backtest_caveat,
    confidence_text,
    judge,
    keep_off_text,
    with_input_findings,
)
from replay_cli.config import ReplayConfig, unique_labels
from replay_cli.errors import InputFileError
from replay_cli.maths.peers import whitening_weights
from replay_cli.maths.top_groups import top_groups
from replay_cli.report.options import ReportOptions
from replay_cli.result import ReplayResult
from replay_cli.rollouts.validation import Rollouts

TABLES = ("summary", "steps", "groups", "resamples", "forecast", "pilots")
"""The replay's tables a report holds (with the verdict's recommendation and findings); the
per-row table is streamed to disk and is not part of a report's equality."""
NEEDED = ("groups.parquet", "steps.parquet", "summary.parquet", "manifest.json")


def manifest(
    result: ReplayResult, rollouts: Rollouts | None = None, options: ReportOptions | None = None
) -> dict[str, Any]:
    """Tool version, command line, input files with sizes and hashes, configs, loading notes, and
    the report's options (rows, highlight, the first-step diagnostic's settings, the rule)."""
    options = options or ReportOptions()
    labels = unique_labels(result.configs)
    columns = [] if rollouts is None else rollouts.frame.collect_schema().names()
    record = {
        "tool": "replay_cli",
        "version": version("replay-cli"),
        "created_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "command_line": sys.argv,
        "inputs": [] if rollouts is None else [vars(f) for f in rollouts.files],
        "resolved_derived_from_reward": rollouts is not None and rollouts.resolved_derived,
        "notes": [*([] if rollouts is None else rollouts.notes), *result.notes],
        "computed_by": result.computed_by,
        "rows": options.rows,
        "highlight": list(options.highlight) or None,
        "effort": options.effort.model_dump(mode="json"),
        "forecast": None if options.forecast is None else options.forecast.model_dump(mode="json"),
        "rule": options.rule.model_dump(mode="json"),
        **({"tensorboard": str(options.tensorboard)} if options.tensorboard else {}),
        **({"wandb": str(options.wandb)} if options.wandb else {}),
        **(
            {"whitening_weights": whitening_weights(columns)}
            if any(c.advantage.estimator == "reinforce-pp-baseline" for c in result.configs)
            else {}
        ),
        "configs": [
            {"config_id": c.config_id, "label": labels[c.config_id], **c.model_dump(mode="json")}
            for c in result.configs
        ],
        "tables": {
            name: f"{name}.parquet"
            for name in S.REPORT_TABLES
            if (name != "rollouts" or options.rows != "none")
            # An input without training rows has nothing to forecast: no table is written; the
            # resamples are the forecast's (the verdict's confidence reads them).
            and (name != "forecast" or result.forecast is not None)
            and (name != "resamples" or result.resamples is not None)
            and (name != "pilots" or result.pilots is not None)
        },
    }
    return json.loads(json.dumps(record))  # as it reads back from manifest.json


def _read(directory: Path, name: str) -> pl.DataFrame | None:
    path = directory / f"{name}.parquet"
    return pl.read_parquet(path) if path.exists() else None


def _same(a: pl.DataFrame | None, b: pl.DataFrame | None) -> bool:
    return a is b if a is None or b is None else a.schema == b.schema and a.equals(b)


@dataclass(frozen=True, eq=False)
class Report:
    """A judged replay as every surface shows it: its tables (`result`), its verdict and its
    manifest. Two reports are equal when their tables, verdicts and manifests are."""

    result: ReplayResult
    verdict: Verdict
    manifest: dict[str, Any]

    # -- building ------------------------------------------------------------------------------

    @classmethod
    def of(
        cls,
        result: ReplayResult,
        options: ReportOptions | None = None,
        rollouts: Rollouts | None = None,
    ) -> Report:
        """The report of a replay, judged here (`advice.verdict.judge`, once, under the options'
        rule); `rollouts` names its inputs."""
        options = options or ReportOptions()
        coerced = rollouts.coerced if rollouts is not None else ()
        verdict = judge(result.summary, result.top_groups, result.resamples, options.rule, coerced)
        return cls(result, verdict, manifest(result, rollouts, options))

    @classmethod
    def read(cls, directory: str | Path, *, rows: bool = False) -> Report:
        """The report in `directory`, with the verdict it stored; a directory written by an earlier
        version of replay-cli, which stored none, is refused (rerun the replay). `rows`: also read
        the per-row table's advantages, deductions and minutes (the distribution charts)."""
        directory = Path(directory)
        missing = [name for name in NEEDED if not (directory / name).exists()]
        if missing:
            raise InputFileError(
                f"{directory} is not a replay report: missing {', '.join(missing)}."
            )
        record = json.loads((directory / "manifest.json").read_text())
        recommendation, found = _read(directory, "recommendation"), _read(directory, "findings")
        if found is None or recommendation is None or S.SHAPING_OFF not in recommendation.columns:
            raise InputFileError(
                f"{directory} was written by an earlier version of replay-cli (it stores no "
                "verdict this version reads): rerun the replay to rebuild it."
            )
        configs = [
            ReplayConfig.model_validate({k: c[k] for k in ("shaping", "advantage", "metrics_by")})
            for c in record["configs"]
        ]
        summary = pl.read_parquet(directory / "summary.parquet")
        result = ReplayResult(
            rows=None,
            groups=pl.read_parquet(directory / "groups.parquet"),
            steps=pl.read_parquet(directory / "steps.parquet"),
            summary=summary,
            configs=configs,
            resamples=_read(directory, "resamples"),
            forecast=_read(directory, "forecast"),
            pilots=_read(directory, "pilots"),
            **(_distributions(directory, summary) if rows else {}),
        )
        rule = Rule.model_validate(record["rule"])
        verdict = Verdict(recommendation, found, Decision.of(recommendation), rule)
        return cls(result, verdict, record)

    def judged_again(self, rule: Rule | None = None) -> Report:
        """This report judged again from its own tables under `rule` (default: the rule it
        records), for `replay-cli report` and `plot`."""
        rule = rule or self.verdict.rule
        verdict = judge(self.result.summary, self.top_groups, self.result.resamples, rule)
        # The input's findings (values the trainer coerces) came from its rows, not its tables.
        return replace(self, verdict=with_input_findings(verdict, self.verdict.findings))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Report):
            return NotImplemented
        frames = [(getattr(self.result, n), getattr(other.result, n)) for n in TABLES]
        mine, theirs = self.verdict, other.verdict
        frames += [(mine.recommendation, theirs.recommendation), (mine.findings, theirs.findings)]
        return (
            all(_same(a, b) for a, b in frames)
            and mine.rule == theirs.rule
            and self.manifest == other.manifest
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        roles = self.verdict.recommendation[C.ROLE].to_list()
        return f"Report({self.result.summary.height} configs, roles {roles})"

    @cached_property
    def top_groups(self) -> pl.DataFrame | None:
        """`maths.top_groups.top_groups` of the group table (kept by the replay while it
        streamed the groups, or computed from the groups held)."""
        if self.result.top_groups is not None:
            return self.result.top_groups
        groups = self.result.groups
        if groups is None or S.G_MAX_ABS_ADVANTAGE_UNCLIPPED not in groups.columns:
            return None
        return top_groups(groups.lazy())

    # -- views every surface shares ------------------------------------------------------------

    @cached_property
    def frontier(self) -> pl.DataFrame | None:
        """`advice.frontier.frontier` of this report; None for a replay without the forecast,
        whose summary lacks the rule's outcome columns."""
        summary = self.result.summary
        return frontier(summary, self.verdict.recommendation) if rated(summary) else None

    @cached_property
    def numbers(self) -> dict[str, int]:
        """Each config's number on the page, the frontier and the charts (summary order, from 1)."""
        return {cid: n for n, cid in enumerate(self.result.summary[S.CONFIG_ID], start=1)}

    def highlighted(self, chosen: list[str] | None = None) -> list[str]:
        """The config ids drawn step by step: `chosen` (ids, id prefixes or labels), else those
        the report was written with (--highlight), else shaping off, the recommended and the
        runner-up configs and the best trade."""
        chosen = chosen or self.manifest.get("highlight")
        return highlights(self.result.summary, chosen, self.verdict.recommendation)

    @property
    def trade(self) -> dict[str, Any] | None:
        """The best trade to show beside the verdict: only where shaping off is kept (or nothing
        passes), and only when it has a trade to state."""
        d = self.verdict.decision
        trade = d.best_trade if d.keep_off or d.recommended is None else None
        return trade if trade is not None and trade.get(C.TRADE) else None

    @property
    def why(self) -> str:
        """Why the recommended config (or shaping off) is the pick, in words."""
        d = self.verdict.decision
        if d.recommended is None:
            return ""
        return keep_off_text(d, self.verdict.rule) if d.keep_off else d.recommended[C.REASONS]

    @property
    def confidence(self) -> str:
        """How sure the pick is (its interval and how often a new log would pick it)."""
        rec = self.verdict.decision.recommended
        if rec is None:
            return ""
        text = confidence_text(rec, self.verdict.recommendation.to_dicts())
        caveat = backtest_caveat(self.result.summary.row(0, named=True), self.result.pilots)
        return f"{text} {caveat}" if caveat else text

    @property
    def rule_line(self) -> float:
        """The rule's least share of shaping off's resolve rate (the frontier's line)."""
        rule = self.verdict.rule
        return min(rule.min_resolve_vs_off, rule.min_resolve_vs_off_long)

    @property
    def bar_text(self) -> str:
        """The resolve bar the verdict used, from the rule it was judged by, at its horizon."""
        summary = self.result.summary
        steps = summary[C.FORECAST_STEPS][0] if C.FORECAST_STEPS in summary else None
        return self.verdict.rule.bar_text(steps)

    @property
    def off_course(self) -> str | None:
        """Shaping off's course on long problems as the decision's config (the pick, else the
        best trade, else the first config) is compared with it; None without a forecast."""
        summary = self.result.summary
        if C.F_RESOLVE_OFF_LONG not in summary.columns or summary.is_empty():
            return None
        chosen = (self.verdict.decision.recommended, self.trade)
        cid = next((r[S.CONFIG_ID] for r in chosen if r is not None), None)
        index = summary[S.CONFIG_ID].to_list().index(cid) if cid is not None else 0
        return off_course_text(summary.row(index, named=True))

    @property
    def pick_warnings(self) -> list[tuple[str, str]]:
        """The hazards and warnings the findings say of the recommended config, as (severity,
        text): the decision says them with the pick, never only in the findings."""
        rec = self.verdict.decision.recommended
        found = self.verdict.findings
        if rec is None or found.is_empty():
            return []
        mine = pl.col(S.CONFIG_ID) == rec[S.CONFIG_ID]
        grave = found.filter(mine & pl.col("severity").is_in(["hazard", "warning"]))
        prefix = f"{rec['label']}: "  # the decision names the pick already
        return [
            (sev, text.removeprefix(prefix))
            for sev, text in grave.select("severity", "text").iter_rows()
        ]


def _distributions(directory: Path, summary: pl.DataFrame) -> dict[str, Any]:
    """From rollouts.parquet: each config's trainable advantages and charged deductions, and the
    input's training minutes (the distribution charts); nothing where no rows were written."""
    rows_path = directory / "rollouts.parquet"
    if not rows_path.exists():
        return {}
    cols = [S.CONFIG_ID, S.ADVANTAGE, S.MASKED, S.CHARGED, S.DEDUCTION, S.MINUTES, S.SPLIT]
    rows = pl.read_parquet(rows_path, columns=cols)
    trainable = rows.filter(pl.col(S.ADVANTAGE).is_not_null() & ~pl.col(S.MASKED))
    charged = rows.filter(pl.col(S.CHARGED))
    ids = summary[S.CONFIG_ID]
    advantages = {cid: trainable.filter(pl.col(S.CONFIG_ID) == cid)[S.ADVANTAGE] for cid in ids}
    deductions = {cid: charged.filter(pl.col(S.CONFIG_ID) == cid)[S.DEDUCTION] for cid in ids}
    train = rows.filter((pl.col(S.CONFIG_ID) == ids[0]) & (pl.col(S.SPLIT) != S.SPLIT_VALIDATION))
    return {"advantages": advantages, "deductions": deductions, "minutes": train[S.MINUTES]}
