"""Charts of a replay report; each function takes report tables and returns a matplotlib Figure.

matplotlib is imported inside the functions so that `replay-cli --help` stays fast.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from replay_cli import schema as S

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from replay_cli.engine import ReplayResult

LAMBDA_AXIS = "lambda_time × 60 (reward cost of a 60-minute rollout)"
STEP_METRICS = (
    ("total_reward/mean", "shaped reward (mean)"),
    ("signal/group_rate", "groups with signal (share)"),
    ("advantages/max", "max advantage"),
    ("advantages/min", "min advantage"),
)


def _figure(
    width: float = 7.0, height: float = 4.2, nrows: int = 1, ncols: int = 1
) -> tuple[Figure, Any]:
    """A Figure not tied to pyplot's global state (safe in threads and tests)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    return fig, fig.subplots(nrows, ncols, squeeze=False)


def _series(summary: pl.DataFrame) -> Iterator[tuple[str, pl.DataFrame]]:
    """Shaped configs split into lines: one per setting of everything but lambda (the label minus λ)."""
    shaped = summary.filter(pl.col("enabled")).sort("lambda_time")
    series = pl.col("label").str.replace(r"^λ=\S+\s*", "").replace("", "λ only")
    for (name,), part in shaped.with_columns(series.alias("_series")).group_by(
        "_series", maintain_order=True
    ):
        yield str(name), part


def _vs_lambda(
    summary: pl.DataFrame, metric: str, title: str, ylabel: str, raw: str | None = None
) -> Figure:
    fig, axes = _figure()
    ax = axes[0][0]
    for label, part in _series(summary):
        ax.plot(part["lambda_time"] * 60, part[metric], marker="o", label=label)
    if raw is not None and summary.height:
        ax.axhline(summary[raw][0], color="grey", linestyle="--", label="shaping off")
    ax.set_title(title)
    ax.set_xlabel(LAMBDA_AXIS)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    return fig


def signal_vs_lambda(summary: pl.DataFrame) -> Figure:
    """Share of groups with a learning signal against lambda_time, with the shaping-off rate."""
    fig = _vs_lambda(
        summary,
        "signal/group_rate",
        "Groups with a learning signal vs time penalty",
        "share of groups with |advantage| > 1e-6",
        raw="signal/group_rate_raw",
    )
    fig.axes[0].set_ylim(0, 1.05)
    return fig


def inversion_vs_lambda(summary: pl.DataFrame) -> Figure:
    """Share of groups where a resolved rollout's shaped reward is below an unresolved one's."""
    return _vs_lambda(
        summary,
        "inversion/group_rate",
        "Reward inversions vs time penalty",
        "share of groups with an inversion",
    )


def explosion_vs_lambda(summary: pl.DataFrame) -> Figure:
    """Rows with |unclipped advantage| > 3 and rows changed by the clip."""
    fig, axes = _figure(11.0, 4.2, ncols=2)
    for ax, metric, title in (
        (axes[0][0], "adv/explosion_frac", "Advantage explosions (|A| > 3 before clip)"),
        (axes[0][1], "adv/clip_frac", "Rows changed by the clip"),
    ):
        for label, part in _series(summary):
            ax.plot(part["lambda_time"] * 60, part[metric], marker="o", label=label)
        ax.set_title(title)
        ax.set_xlabel(LAMBDA_AXIS)
        ax.set_ylabel("share of trainable rows")
        ax.grid(alpha=0.3)
    axes[0][1].legend(fontsize="small")
    return fig


def _symlog_bins(values: np.ndarray, linear: int = 20, per_decade: int = 8) -> np.ndarray:
    """Bin edges linear in [-1, 1] and logarithmic beyond, covering every value."""
    top = max(float(np.abs(values).max()) if values.size else 1.0, 1.0)
    decades = max(int(np.ceil(np.log10(top))), 1)
    outer = np.logspace(0, decades, decades * per_decade + 1)[1:]
    return np.concatenate([-outer[::-1], np.linspace(-1, 1, linear + 1), outer])


def estimators_vs_lambda(summary: pl.DataFrame) -> Figure:
    """Signal rate and largest |advantage| against lambda, one line per estimator (and setting)."""
    fig, axes = _figure(11.0, 4.2, ncols=2)
    left, right = axes[0]
    for label, part in _series(summary):
        name = label if part["estimator"][0] in label else f"grpo (NeMo-RL) {label}"
        left.plot(part["lambda_time"] * 60, part["signal/group_rate"], marker="o", label=name)
        right.plot(part["lambda_time"] * 60, part["adv/abs_max"], marker="o", label=name)
    left.set_ylim(0, 1.05)
    left.set_title("Groups with a learning signal by estimator")
    left.set_ylabel("share of groups with |advantage| > 1e-6")
    right.set_title("Largest |advantage| by estimator")
    right.set_ylabel("max |advantage| (log scale)")
    right.set_yscale("log")
    for ax in (left, right):
        ax.set_xlabel(LAMBDA_AXIS)
        ax.grid(alpha=0.3)
    fig.legend(*left.get_legend_handles_labels(), loc="outside right upper", fontsize="small")
    return fig


def advantage_distribution(advantages: dict[str, pl.Series], summary: pl.DataFrame) -> Figure:
    """Histogram of trainable-row advantages per config: symlog x (tails visible), log counts."""
    import matplotlib as mpl

    fig, axes = _figure(11.0, 4.8)
    ax = axes[0][0]
    colors = mpl.colormaps["tab20"].colors
    labels = summary.select(S.CONFIG_ID, "label").rows()
    bins = _symlog_bins(np.concatenate([advantages[c].to_numpy() for c, _ in labels]))
    for i, (config_id, label) in enumerate(labels):
        values = advantages[config_id].to_numpy()
        ax.hist(values, bins=bins, histtype="step", label=label, color=colors[i % len(colors)])
    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_yscale("log")
    ax.set_title("Advantage distribution per config (trainable rows)")
    ax.set_xlabel("GRPO advantage after clip (linear in [-1, 1], log beyond)")
    ax.set_ylabel("rows (log scale)")
    ax.grid(alpha=0.3)
    fig.legend(*ax.get_legend_handles_labels(), loc="outside right upper", fontsize="small")
    return fig


def minutes_and_deductions(
    minutes: pl.Series, deductions: dict[str, pl.Series], summary: pl.DataFrame
) -> Figure:
    """Agent minutes (input) and the deduction each config charged."""
    fig, axes = _figure(11.0, 4.2, ncols=2)
    left, right = axes[0]
    left.hist(minutes.to_numpy(), bins=60, color="tab:blue")
    left.set_title("Agent wall time per rollout")
    left.set_xlabel("minutes")
    left.set_ylabel("rollouts")
    for config_id, label in (
        summary.filter(pl.col("enabled")).select(S.CONFIG_ID, "label").iter_rows()
    ):
        right.hist(deductions[config_id].to_numpy(), bins=60, histtype="step", label=label)
    right.set_title("Deduction of charged rollouts")
    right.set_xlabel("deduction (reward units)")
    right.set_ylabel("rollouts")
    right.legend(fontsize="x-small")
    return fig


def step_curves(steps: pl.DataFrame, summary: pl.DataFrame) -> Figure:
    """Per-step curves of the headline metrics, one line per config, as on a W&B panel."""
    import matplotlib as mpl
    from matplotlib.ticker import MaxNLocator

    fig, axes = _figure(13.0, 7.0, nrows=2, ncols=2)
    labels = summary.select(S.CONFIG_ID, "label").rows()
    colors = mpl.colormaps["tab20"].colors
    for ax, (metric, ylabel) in zip(axes.flat, STEP_METRICS, strict=True):
        for i, (config_id, label) in enumerate(labels):
            part = steps.filter(pl.col(S.CONFIG_ID) == config_id).sort(S.STEP)
            if metric in part.columns:
                ax.plot(part[S.STEP], part[metric], label=label, color=colors[i % len(colors)])
        ax.set_title(metric)
        ax.set_xlabel("training step")
        ax.set_ylabel(ylabel)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
    handles, names = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, names, loc="outside right upper", fontsize="small")
    return fig


def replayed_vs_internal(joined: pl.DataFrame) -> Figure:
    """Replayed per-step metrics beside an internal run's exported curves (columns step, metric, replayed, internal)."""
    from matplotlib.ticker import MaxNLocator

    metrics = joined["metric"].unique(maintain_order=True).to_list()
    ncols = min(2, max(len(metrics), 1))
    nrows = max((len(metrics) + ncols - 1) // ncols, 1)
    fig, axes = _figure(5.5 * ncols, 3.6 * nrows, nrows=nrows, ncols=ncols)
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


def report_figures(result: ReplayResult) -> dict[str, Figure]:
    """The charts that make sense for this report (lambda charts need two or more lambdas)."""
    summary = result.summary
    figures: dict[str, Figure] = {}
    lambdas = summary.filter(pl.col("enabled"))["lambda_time"].n_unique()
    if lambdas > 1:
        figures["signal_vs_lambda"] = signal_vs_lambda(summary)
        figures["inversion_vs_lambda"] = inversion_vs_lambda(summary)
        figures["explosion_vs_lambda"] = explosion_vs_lambda(summary)
        if summary["estimator"].n_unique() > 1:
            figures["estimators_vs_lambda"] = estimators_vs_lambda(summary)
    if result.advantages:  # a report written with --rows none has no per-row values to draw
        figures["advantage_distribution"] = advantage_distribution(result.advantages, summary)
    if result.minutes is not None and summary["enabled"].any():
        figures["minutes_and_deductions"] = minutes_and_deductions(
            result.minutes, result.deductions, summary
        )
    figures["step_curves"] = step_curves(result.steps, summary)
    return figures


def save(figures: dict[str, Figure], out_dir: Path) -> list[Path]:
    """Write figures as PNG files."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, fig in figures.items():
        path = out_dir / f"{name}.png"
        fig.savefig(path, dpi=110)
        paths.append(path)
    return paths


def render_all(result: ReplayResult, out_dir: Path) -> list[Path]:
    """Save every chart of a report as PNG and return the paths."""
    return save(report_figures(result), out_dir)
