"""Charts of a replay report; each function takes report tables and returns a matplotlib Figure.

The charts across configs live in plots_sweep.py; here are the per-config ones (drawn for the
highlighted configs only: `--highlight`, default shaping off plus the best and worst by the
frontier), the internal-run comparison, and the set a report renders. matplotlib is imported inside
the functions so that `replay-cli --help` stays fast."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from replay_cli import schema as S
from replay_cli.advice.frontier import highlights
from replay_cli.progress import Tick
from replay_cli.report import layouts as L
from replay_cli.report.plots_forecast import forecast_chart
from replay_cli.report.plots_sweep import (
    advantage_bands,
    colours,
    figure,
    frontier_chart,
    has_heatmap,
    heatmap_lambda_floor,
    lambda_chart,
    legend,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from replay_cli.report.model import Report


def _chosen(
    summary: pl.DataFrame, highlight: list[str] | None, verdict: pl.DataFrame | None = None
) -> pl.DataFrame:
    """The highlighted configs' (config_id, label) rows, in summary order."""
    ids = highlights(summary, highlight, verdict)
    return summary.filter(pl.col(S.CONFIG_ID).is_in(ids)).select(S.CONFIG_ID, "label")


def minutes_and_deductions(
    minutes: pl.Series,
    deductions: dict[str, pl.Series],
    summary: pl.DataFrame,
    highlight: list[str] | None = None,
    verdict: pl.DataFrame | None = None,
) -> Figure:
    """Agent minutes (input) and the deductions the highlighted shaped configs charged."""
    fig, axes = figure(12.0, 4.2, ncols=2)
    left, right = axes[0]
    left.hist(minutes.to_numpy(), bins=60, color="tab:blue")
    left.set_title("Agent wall time per rollout")
    left.set_xlabel("minutes")
    left.set_ylabel("rollouts")
    chosen = _chosen(summary.filter(pl.col("enabled")), highlight, verdict)
    for (config_id, label), colour in zip(chosen.rows(), colours(chosen.height), strict=True):
        values = deductions.get(config_id)
        if values is not None:
            right.hist(values.to_numpy(), bins=60, histtype="step", label=label, color=colour)
    right.set_title("Deductions charged (highlighted)")
    right.set_xlabel("deduction (reward units)")
    right.set_ylabel("rollouts")
    legend(fig, *right.get_legend_handles_labels())
    return fig


def step_curves(
    steps: pl.DataFrame,
    summary: pl.DataFrame,
    highlight: list[str] | None = None,
    verdict: pl.DataFrame | None = None,
) -> Figure:
    """Per-step curves of the headline metrics for the highlighted configs, as on a W&B panel."""
    from matplotlib.ticker import MaxNLocator

    fig, axes = figure(13.0, 7.0, nrows=2, ncols=2)
    labels = _chosen(summary, highlight, verdict).rows()
    palette = colours(len(labels))
    for ax, (metric, ylabel) in zip(axes.flat, L.STEP_CHART, strict=True):
        for i, (config_id, label) in enumerate(labels):
            part = steps.filter(pl.col(S.CONFIG_ID) == config_id).sort(S.STEP)
            if metric in part.columns:
                ax.plot(part[S.STEP], part[metric], label=label, color=palette[i])
        ax.set_title(metric)
        ax.set_xlabel("training step")
        ax.set_ylabel(ylabel)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
    legend(fig, *axes[0][0].get_legend_handles_labels())
    return fig


def replayed_vs_internal(joined: pl.DataFrame) -> Figure:
    """Replayed per-step metrics beside an internal run's exported curves (columns step, metric, replayed, internal)."""
    from matplotlib.ticker import MaxNLocator

    metrics = joined["metric"].unique(maintain_order=True).to_list()
    ncols = min(2, max(len(metrics), 1))
    nrows = max((len(metrics) + ncols - 1) // ncols, 1)
    fig, axes = figure(5.5 * ncols, 3.6 * nrows, nrows=nrows, ncols=ncols)
    flat = list(axes.flat)
    for ax, metric in zip(flat, metrics, strict=False):
        part = joined.filter(pl.col("metric") == metric).sort("step")
        ax.plot(part["step"], part["replayed"], marker=".", label="replayed")
        ax.plot(part["step"], part["internal"], marker=".", linestyle="--", label="internal run")
        ax.set_title(metric)
        ax.set_xlabel("training step")
        ax.set_ylabel("value")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
    for ax in flat[len(metrics) :]:
        ax.set_visible(False)
    return fig


@dataclass(frozen=True)
class Chart:
    """A chart of the report: its caption on the page, whether this report has it, and how it is
    drawn (`draw` None: drawn by another command, e.g. `compare`)."""

    caption: str
    draw: Callable[[Report, list[str]], Figure] | None = None
    """(report, the highlighted config ids) -> the figure."""
    shown: Callable[[Report], bool] = lambda report: True


def _lambdas(report: Report) -> int:
    return report.result.summary.filter(pl.col("enabled"))["lambda_time"].n_unique()


CHARTS: dict[str, Chart] = {
    "frontier": Chart(
        "The rule's own axes: solve Δ after T steps (minutes vs shaping off, negative = "
        "sooner, drawn up) against the resolve rate kept then (low end of the interval); the "
        "dashed line is the rule's bar.",
        lambda r, _: frontier_chart(r.result.summary, r.verdict.recommendation, r.verdict.rule),
        lambda r: r.result.summary.height > 1 and r.frontier is not None,
    ),
    "forecast": Chart(
        "The forecast: the resolve rate on long problems and the minutes of a resolved rollout "
        "over simulated training steps, per config; shaping off dashed.",
        lambda r, chosen: forecast_chart(
            r.result.forecast, r.result.summary, r.verdict.recommendation, chosen
        ),
        lambda r: r.result.forecast is not None and not r.result.forecast.is_empty(),
    ),
    "signal_vs_lambda": Chart(
        "Share of groups with a learning signal against the time penalty.",
        lambda r, _: lambda_chart(r.result.summary, "signal_vs_lambda"),
        lambda r: _lambdas(r) > 1,
    ),
    "heatmap_lambda_floor": Chart(
        "Signal rate (colour) and inversion rate over lambda × floor.",
        lambda r, _: heatmap_lambda_floor(r.result.summary),
        lambda r: _lambdas(r) > 1 and has_heatmap(r.result.summary),
    ),
    "inversion_vs_lambda": Chart(
        "Share of groups where a resolved rollout ends below an unresolved one.",
        lambda r, _: lambda_chart(r.result.summary, "inversion_vs_lambda"),
        lambda r: _lambdas(r) > 1,
    ),
    "explosion_vs_lambda": Chart(
        "Rows whose unclipped |advantage| exceeds 3, and rows the clip changed.",
        lambda r, _: lambda_chart(r.result.summary, "explosion_vs_lambda"),
        lambda r: _lambdas(r) > 1,
    ),
    "estimators_vs_lambda": Chart(
        "Signal rate and largest |advantage| per estimator.",
        lambda r, _: lambda_chart(r.result.summary, "estimators_vs_lambda"),
        lambda r: _lambdas(r) > 1 and r.result.summary["estimator"].n_unique() > 1,
    ),
    "advantage_distribution": Chart(
        "Advantage quantiles per config (p01-p99, p05-p95, median).",
        lambda r, _: advantage_bands(r.result.summary),
    ),
    "minutes_and_deductions": Chart(
        "Agent minutes of the input and the deductions charged.",
        lambda r, chosen: minutes_and_deductions(
            r.result.minutes,
            r.result.deductions,
            r.result.summary,
            chosen,
            r.verdict.recommendation,
        ),
        lambda r: r.result.minutes is not None and r.result.summary["enabled"].any(),
    ),
    "step_curves": Chart(
        "Per-step trainer metrics of the highlighted configs, as on a W&B panel.",
        lambda r, chosen: step_curves(
            r.result.steps, r.result.summary, chosen, r.verdict.recommendation
        ),
    ),
    "replayed_vs_internal": Chart("Replayed per-step metrics beside the internal run's curves."),
}
"""Every chart by its file stem, in page order: a new chart is a drawing function and one entry."""


def report_figures(report: Report, highlight: list[str] | None = None) -> dict[str, Figure]:
    """The charts that make sense for this report (lambda charts need two or more lambdas)."""
    chosen = report.highlighted(highlight)
    return {
        name: chart.draw(report, chosen)
        for name, chart in CHARTS.items()
        if chart.draw is not None and chart.shown(report)
    }


def save(figures: dict[str, Figure], out_dir: Path) -> list[Path]:
    """Write figures as PNG files."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, fig in figures.items():
        fig.savefig(out_dir / f"{name}.png", dpi=110)
    return [out_dir / f"{name}.png" for name in figures]


def render_all(
    report: Report, out_dir: Path, highlight: list[str] | None = None, tick: Tick | None = None
) -> list[Path]:
    """Save every chart of a report as PNG (replacing the old ones) and return the paths; one
    chart in memory at a time, `tick(done, total)` after each. `highlight`: the configs drawn
    step by step (default: those the report was written with, else the verdict's)."""
    if out_dir.is_dir():
        for old in out_dir.glob("*.png"):
            if old.stem != "replayed_vs_internal":
                old.unlink()
    shown = {n: c.draw for n, c in CHARTS.items() if c.draw is not None and c.shown(report)}
    chosen = report.highlighted(highlight)
    paths = []
    for done, (name, draw) in enumerate(shown.items(), start=1):
        paths += save({name: draw(report, chosen)}, out_dir)
        if tick is not None:
            tick(done, len(shown))
    return paths
