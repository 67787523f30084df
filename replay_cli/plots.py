"""Charts of a replay report; each function takes report tables and returns a matplotlib Figure."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from replay_cli import schema as S

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from replay_cli.engine import ReplayResult


def _figure(width: float = 7.0, height: float = 4.2, ncols: int = 1) -> tuple[Figure, Any]:
    """A Figure not tied to pyplot's global state (safe in threads and tests)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    return fig, fig.subplots(1, ncols)


def signal_vs_lambda(summary: pl.DataFrame) -> Figure:
    """Share of groups with a learning signal against lambda_time, one line per apply_to."""
    fig, ax = _figure()
    shaped = summary.filter(pl.col("enabled")).sort("lambda_time")
    for apply_to in shaped["apply_to"].unique(maintain_order=True):
        part = shaped.filter(pl.col("apply_to") == apply_to)
        ax.plot(
            part["lambda_time"] * 60,
            part["signal/group_rate"],
            marker="o",
            label=f"apply_to={apply_to}",
        )
    if summary.height:
        ax.axhline(
            summary["signal/group_rate_raw"][0], color="grey", linestyle="--", label="shaping off"
        )
    ax.set_title("Groups with a learning signal vs time penalty")
    ax.set_xlabel("lambda_time × 60 (reward cost of a 60-minute rollout)")
    ax.set_ylabel("share of groups with |advantage| > 1e-6")
    ax.set_ylim(0, 1.05)
    ax.legend()
    ax.grid(alpha=0.3)
    return fig


def inversion_vs_lambda(summary: pl.DataFrame) -> Figure:
    """Share of groups where a resolved rollout scores below an unresolved one."""
    fig, ax = _figure()
    shaped = summary.filter(pl.col("enabled")).sort("lambda_time")
    for label, part in shaped.group_by(["apply_to", "floor"], maintain_order=True):
        apply_to, floor = label
        ax.plot(
            part["lambda_time"] * 60,
            part["inversion/group_rate"],
            marker="o",
            label=f"{apply_to}, floor={floor}",
        )
    ax.set_title("Reward inversions vs time penalty")
    ax.set_xlabel("lambda_time × 60 (reward cost of a 60-minute rollout)")
    ax.set_ylabel("share of groups with an inversion")
    ax.legend()
    ax.grid(alpha=0.3)
    return fig


def advantage_distribution(rows: pl.DataFrame, summary: pl.DataFrame) -> Figure:
    """Histogram of trainable-row advantages per config, log-scaled counts."""
    fig, ax = _figure()
    trainable = rows.filter(pl.col(S.ADVANTAGE).is_not_null() & ~pl.col(S.MASKED))
    for config_id, label in summary.select(S.CONFIG_ID, "label").iter_rows():
        values = trainable.filter(pl.col(S.CONFIG_ID) == config_id)[S.ADVANTAGE].to_numpy()
        ax.hist(values, bins=80, histtype="step", label=label)
    ax.set_yscale("log")
    ax.set_title("Advantage distribution per config (trainable rows)")
    ax.set_xlabel("GRPO advantage (after clip)")
    ax.set_ylabel("rows (log scale)")
    ax.legend(fontsize="small")
    return fig


def minutes_and_deductions(rows: pl.DataFrame, summary: pl.DataFrame) -> Figure:
    """Agent minutes (input) and the deduction each config charged."""
    fig, (left, right) = _figure(11.0, 4.2, ncols=2)
    first = rows.filter(pl.col(S.CONFIG_ID) == summary[S.CONFIG_ID][0])
    left.hist(first[S.MINUTES].to_numpy(), bins=60, color="tab:blue")
    left.set_title("Agent wall time per rollout")
    left.set_xlabel("minutes")
    left.set_ylabel("rollouts")
    for config_id, label in (
        summary.filter(pl.col("enabled")).select(S.CONFIG_ID, "label").iter_rows()
    ):
        part = rows.filter((pl.col(S.CONFIG_ID) == config_id) & pl.col(S.CHARGED))
        right.hist(part[S.DEDUCTION].to_numpy(), bins=60, histtype="step", label=label)
    right.set_title("Deduction of charged rollouts")
    right.set_xlabel("deduction (reward units)")
    right.set_ylabel("rollouts")
    right.legend(fontsize="small")
    return fig


def render_all(result: ReplayResult, out_dir: Path) -> list[Path]:
    """Save every chart of a report as PNG and return the paths."""
    figures = {
        "signal_vs_lambda": signal_vs_lambda(result.summary),
        "inversion_vs_lambda": inversion_vs_lambda(result.summary),
        "advantage_distribution": advantage_distribution(result.rows, result.summary),
        "minutes_and_deductions": minutes_and_deductions(result.rows, result.summary),
    }
    paths = []
    for name, fig in figures.items():
        path = out_dir / f"{name}.png"
        fig.savefig(path, dpi=110)
        paths.append(path)
    return paths
