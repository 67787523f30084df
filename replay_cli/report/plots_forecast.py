"""The forecast chart: per config, the resolve rate on long problems and the minutes of a
successful rollout against the simulated training step, shaping off marked (replay_cli/forecast/).
matplotlib is imported inside (via plots_sweep.figure) so `--help` stays fast."""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from replay_cli import catalogue as C
from replay_cli import schema as S
from replay_cli.advice.frontier import highlights
from replay_cli.advice.rule import shaping_off
from replay_cli.report.plots_sweep import colours, figure, legend

if TYPE_CHECKING:
    from matplotlib.figure import Figure

ALL_COLOURED = 12
"""Up to this many configs every line has its colour and label; beyond, the highlighted ones."""
PANELS = (
    ("long", C.T_RESOLVE, "resolve rate on long problems", 100.0, "%"),
    ("all", C.T_SOLVE, "minutes of a resolved rollout", 1.0, "min"),
)
"""(bucket, metric, title, scale, unit) of each panel."""
OFF_LINE = {"color": "black", "linestyle": "--", "lw": 1.6, "zorder": 4}
"""Shaping off's line, drawn over every config's (zorder 3; the grey ones 1)."""


def default_budget(forecast: pl.DataFrame) -> float:
    """The forecast's own budget among those it ran (half, own, twice: the middle one)."""
    budgets = sorted(forecast["budget"].unique().to_list())
    return budgets[len(budgets) // 2] if budgets else 0.0


def forecast_chart(
    forecast: pl.DataFrame,
    summary: pl.DataFrame,
    verdict: pl.DataFrame | None = None,
    highlight: list[str] | None = None,
) -> Figure:
    """Each config's forecast at the default budget, one line per config, in colour with its band
    over seeds (beyond ALL_COLOURED configs only the highlighted ones: shaping off, the
    recommended, the runner-up, the best trade, or `highlight`; the others thin and grey);
    shaping off's trajectory dashed and black, the one line and legend name of every config that
    leaves the rewards as they are (disabled, or λ 0 with no bonus and no floor)."""
    data = forecast.filter(pl.col("budget") == default_budget(forecast))
    ids = summary[S.CONFIG_ID].to_list()
    off_ids = set(summary.filter(shaping_off(summary))[S.CONFIG_ID].to_list())
    chosen = ids if len(ids) <= ALL_COLOURED else highlights(summary, highlight, verdict)
    chosen = [c for c in chosen if c not in off_ids]
    labels = dict(summary.select(S.CONFIG_ID, "label").rows())
    fig, axes = figure(13.0, 4.6, ncols=2)
    palette = dict(zip(chosen, colours(max(len(chosen), 1)), strict=False))
    for ax, (bucket, metric, title, scale, unit) in zip(axes[0], PANELS, strict=True):
        part = data.filter(pl.col("bucket") == bucket).sort(S.CONFIG_ID, "step")
        off_drawn = False
        for cid in summary[S.CONFIG_ID]:
            mine = part.filter(pl.col(S.CONFIG_ID) == cid)
            own = mine.filter(pl.col("metric") == metric)
            if own.is_empty():
                continue
            if not off_drawn:
                off = mine.filter(pl.col("metric") == f"{metric}_off")
                ax.plot(off["step"], off["mean"] * scale, label="shaping off", **OFF_LINE)
                off_drawn = True
            if cid in off_ids:  # drawn as shaping off's line: no second name for it
                continue
            if cid in palette:
                colour = palette[cid]
                line = {"color": colour, "lw": 1.8, "label": labels[cid], "zorder": 3}
                ax.plot(own["step"], own["mean"] * scale, **line)
                band = (own["low"] * scale, own["high"] * scale)
                ax.fill_between(own["step"], *band, color=colour, alpha=0.15, lw=0)
            else:
                ax.plot(own["step"], own["mean"] * scale, color="#b8bec9", lw=0.8, zorder=1)
        ax.set_title(title)
        ax.set_xlabel("simulated training step")
        ax.set_ylabel(unit)
        ax.grid(alpha=0.3)
    fig.suptitle("Forecast at the step budget (bands: lowest to highest seed)")
    legend(fig, *axes[0][0].get_legend_handles_labels())
    return fig
