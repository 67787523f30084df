"""One report: a judged replay's tables, its verdict and the record of how it was made (the
manifest), built once and only read afterwards.

`Report.of` builds it after a replay (the API does, once); `Report.read` builds it for a report
directory, reading the verdict the report stored (or judging a report of an earlier version that
stored none). Every surface renders it: the page, the terminal, the charts, TensorBoard and W&B;
`write.write` is its one serialiser, and `Report.read(write(report, d)) == report`. The views more
than one surface shows live here: the frontier, the highlighted configs, the trade to show and the
texts that state the rule's thresholds.
"""

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
from replay_cli.advice.rule import Rule, shaping_off
from replay_cli.advice.texts import off_course_text
from replay_cli.advice.verdict import (
    Decision,
    Verdict,
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

TABLES = ("summary", "steps", "groups", "resamples", "forecast")
"""The replay's tables a report holds (with the verdict's recommendation and findings); the
per-row table is streamed to disk and is not part of a report's equality."""
NEEDED = ("groups.parquet", "steps.parquet", "summary.parquet", "manifest.json")


def manifest(
    result: ReplayResult, rollouts: Rollouts | None = None, options: ReportOptions | None = None
) -> dict[str, Any]:
    """Tool version, command line, input files with sizes and hashes, configs, loading notes, and
    the report's options (rows, highlight, the decision measure's settings, the rule)."""
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
        "measure": options.measure.model_dump(mode="json"),
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
        },
    }
    return json.loads(json.dumps(record))  # as it reads back from manifest.json


def _read(directory: Path, name: str) -> pl.DataFrame | None:
    path = directory / f"{name}.parquet"
    return pl.read_parquet(path) if path.exists() else None


def _same(a: pl.DataFrame | None, b: pl.DataFrame | None) -> bool:
    if a is None or b is None:
        return a is b
    return a.schema == b.schema and a.equals(b)


@dataclass(frozen=True, eq=False)
class Report:
    """A judged replay as every surface shows it: its tables (`result`), its verdict
    (`result.verdict`) and its manifest. Two reports are equal when their tables, verdicts and
    manifests are."""

    result: ReplayResult
    manifest: dict[str, Any]

    # -- building ------------------------------------------------------------------------------

    @classmethod
    def of(
        cls,
        result: ReplayResult,
        options: ReportOptions | None = None,
        rollouts: Rollouts | None = None,
    ) -> Report:
        """The report of a judged replay (`api.judged`); `rollouts` names its inputs."""
        if result.verdict is None:
            raise ValueError("a report is made of a judged result (api.judged)")
        return cls(result, manifest(result, rollouts, options))

    @classmethod
    def read(cls, directory: str | Path, *, rows: bool = False) -> Report:
        """The report in `directory`, with the verdict it stored (judged now, under the rule it
        records, where a report of an earlier version stored none). `rows`: also read the
        per-row table's advantages, deductions and minutes (the distribution charts)."""
        directory = Path(directory)
        missing = [name for name in NEEDED if not (directory / name).exists()]
        if missing:
            raise InputFileError(
                f"{directory} is not a replay report: missing {', '.join(missing)}."
            )
        record = json.loads((directory / "manifest.json").read_text())
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
            **(_distributions(directory, summary) if rows else {}),
        )
        rule = Rule.model_validate(record["rule"]) if "rule" in record else Rule()
        recommendation, found = _read(directory, "recommendation"), _read(directory, "findings")
        stored = recommendation is not None and found is not None
        if stored and S.SHAPING_OFF in recommendation.columns:
            verdict = Verdict(recommendation, found, Decision.of(recommendation), rule)
            return cls(replace(result, verdict=verdict), record)
        # Written before the verdict was stored: judged now, once.
        unjudged = cls(result, record)
        return unjudged.judged_again(rule)

    def judged_again(self, rule: Rule | None = None) -> Report:
        """This report judged again from its own tables under `rule` (default: the rule it
        records), for `replay-cli report` and `plot`: a report of an earlier version gets this
        version's verdict."""
        result = self.result
        rule = rule or self.rule
        verdict = judge(result.summary, self.top_groups, result.resamples, rule)
        if result.verdict is not None:
            verdict = with_input_findings(verdict, result.verdict.findings)
        return replace(self, result=replace(result, verdict=verdict))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Report):
            return NotImplemented
        frames = [(getattr(self.result, n), getattr(other.result, n)) for n in TABLES]
        frames += [
            (self.recommendation, other.recommendation),
            (self.findings, other.findings),
        ]
        return (
            all(_same(a, b) for a, b in frames)
            and self.rule == other.rule
            and self.manifest == other.manifest
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        roles = self.recommendation["role"].to_list() if self.result.verdict else []
        return f"Report({self.summary.height} configs, roles {roles})"

    # -- the tables ----------------------------------------------------------------------------

    @property
    def summary(self) -> pl.DataFrame:
        return self.result.summary

    @property
    def steps(self) -> pl.DataFrame:
        return self.result.steps

    @property
    def groups(self) -> pl.DataFrame | None:
        return self.result.groups

    @property
    def forecast(self) -> pl.DataFrame | None:
        return self.result.forecast

    @property
    def resamples(self) -> pl.DataFrame | None:
        return self.result.resamples

    @property
    def rows(self) -> pl.DataFrame | None:
        return self.result.rows

    @property
    def advantages(self) -> dict[str, pl.Series]:
        return self.result.advantages

    @property
    def deductions(self) -> dict[str, pl.Series]:
        return self.result.deductions

    @property
    def minutes(self) -> pl.Series | None:
        return self.result.minutes

    @property
    def configs(self) -> list[ReplayConfig]:
        return self.result.configs

    @property
    def verdict(self) -> Verdict:
        if self.result.verdict is None:  # only while Report.read judges an earlier version
            raise ValueError("this report has not been judged")
        return self.result.verdict

    @property
    def recommendation(self) -> pl.DataFrame:
        return self.verdict.recommendation

    @property
    def findings(self) -> pl.DataFrame:
        return self.verdict.findings

    @property
    def decision(self) -> Decision:
        return self.verdict.decision

    @property
    def rule(self) -> Rule:
        if self.result.verdict is not None:
            return self.result.verdict.rule
        return Rule.model_validate(self.manifest["rule"]) if "rule" in self.manifest else Rule()

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
        """`advice.frontier.frontier` of this report; None for a report of an earlier version,
        whose summary lacks the rule's columns."""
        return frontier(self.summary, self.recommendation) if rated(self.summary) else None

    @cached_property
    def numbers(self) -> dict[str, int]:
        """Each config's number on the page, the frontier and the charts (summary order, from 1)."""
        return {cid: n for n, cid in enumerate(self.summary[S.CONFIG_ID], start=1)}

    def highlighted(self, chosen: list[str] | None = None) -> list[str]:
        """The config ids drawn step by step: `chosen` (ids, id prefixes or labels), else those
        the report was written with (--highlight), else shaping off, the recommended and the
        runner-up configs and the best trade."""
        chosen = chosen or self.manifest.get("highlight")
        return highlights(self.summary, chosen, self.recommendation)

    @property
    def trade(self) -> dict[str, Any] | None:
        """The best trade to show beside the verdict: only where shaping off is kept (or nothing
        passes), and only when it has a trade to state."""
        d = self.decision
        trade = d.best_trade if d.keep_off or d.recommended is None else None
        return trade if trade is not None and trade.get("trade") else None

    @property
    def why(self) -> str:
        """Why the recommended config (or shaping off) is the pick, in words."""
        d = self.decision
        if d.recommended is None:
            return ""
        return keep_off_text(d, self.rule) if d.keep_off else d.recommended["reasons"]

    @property
    def confidence(self) -> str:
        """How sure the pick is (its interval and how often a new log would pick it)."""
        rec = self.decision.recommended
        return "" if rec is None else confidence_text(rec, self.recommendation.to_dicts())

    @property
    def rule_line(self) -> float:
        """The rule's least share of shaping off's resolve rate (the frontier's line)."""
        return min(self.rule.min_resolve_vs_off, self.rule.min_resolve_vs_off_long)

    @property
    def rule_text(self) -> str:
        """The rule in one sentence, with the thresholds this report was judged by."""
        return self.rule.summary_text()

    @property
    def bar_text(self) -> str:
        """The resolve bar the verdict used, from the rule it was judged by, at its horizon."""
        steps = self.summary[C.FORECAST_STEPS][0] if C.FORECAST_STEPS in self.summary else None
        return self.rule.bar_text(steps)

    @property
    def off_course(self) -> str | None:
        """Shaping off's course on long problems as the decision's config is compared with it:
        the pick's own twin (else the best trade's, else the first config's), named; None
        without a forecast."""
        summary = self.summary
        if C.F_RESOLVE_OFF_LONG not in summary.columns or summary.is_empty():
            return None
        d = self.decision
        chosen = [(d.recommended, "the pick"), (self.trade, "the best trade")]
        cid, whose = next(((r[S.CONFIG_ID], w) for r, w in chosen if r is not None), (None, ""))
        index = summary[S.CONFIG_ID].to_list().index(cid) if cid is not None else 0
        row = summary.row(index, named=True)
        whose = f"{whose or 'the first config'} '{row['label']}'"
        is_off = bool(shaping_off(summary)[index])
        twins = summary[C.F_RESOLVE_OFF_LONG].drop_nulls().n_unique()
        return off_course_text(row, whose, is_off, twins)

    @property
    def pick_warnings(self) -> list[tuple[str, str]]:
        """The hazards and warnings the findings say of the recommended config, as (severity,
        text): the decision says them with the pick, never only in the findings."""
        rec = self.decision.recommended
        found = self.findings
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
    advantages, deductions = {}, {}
    for cid in summary[S.CONFIG_ID]:
        advantages[cid] = trainable.filter(pl.col(S.CONFIG_ID) == cid)[S.ADVANTAGE]
        deductions[cid] = charged.filter(pl.col(S.CONFIG_ID) == cid)[S.DEDUCTION]
    first = summary[S.CONFIG_ID][0]
    train = rows.filter((pl.col(S.CONFIG_ID) == first) & (pl.col(S.SPLIT) != S.SPLIT_VALIDATION))
    return {"advantages": advantages, "deductions": deductions, "minutes": train[S.MINUTES]}
