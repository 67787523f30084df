"""Charts across the configs of a sweep that stay readable at 100 configs: small multiples by the
categorical parameters (facets.py), a lambda x floor heatmap, advantage quantile bands and the
frontier. Each takes the summary table and returns a Figure."""

from __future__ import annotations

import itertools
import math
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from replay_cli import catalogue as C
from replay_cli import schema as S
from replay_cli.advice.frontier import frontier
from replay_cli.advice.rule import Rule
from replay_cli.advice.words import param_text
from replay_cli.config import lambda_text
from replay_cli.report.facets import Layout, describe, layout, varying
from replay_cli.report.roles import FRONTIER_Y, STYLES, point_groups

if TYPE_CHECKING:
    from matplotlib.figure import Figure

LAMBDA_AXIS = "λ (lambda_time: reward charged per minute)"
"""The x label of every chart against lambda; its ticks are the sweep's λ as written (1/60)."""
PANEL_COLS = 4
LEGEND_RIGHT_MAX = 14


def figure(width: float, height: float, nrows: int = 1, ncols: int = 1) -> tuple[Figure, Any]:
    """A Figure not tied to pyplot's global state (safe in threads and tests)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    return fig, fig.subplots(nrows, ncols, squeeze=False)


def colours(n: int) -> list[Any]:
    """n distinguishable colours (tab10, then tab20, then a continuous map)."""
    import matplotlib as mpl

    if n <= 10:
        return list(mpl.colormaps["tab10"].colors[:n])
    if n <= 20:
        return list(mpl.colormaps["tab20"].colors[:n])
    return [mpl.colormaps["viridis"](i / max(n - 1, 1)) for i in range(n)]


def legend(fig: Figure, handles: list[Any], labels: list[str]) -> None:
    """A figure legend that always fits: at the right when short, below in columns when long."""
    if not handles:
        return
    if len(handles) <= LEGEND_RIGHT_MAX:
        fig.legend(handles, labels, loc="outside right upper", fontsize="small")
    else:
        fig.legend(handles, labels, loc="outside lower center", fontsize="x-small", ncols=3)


def lambda_ticks(ax: Any, lambdas: list[float]) -> None:
    """Ticks at the sweep's λ values, written as everywhere else (1/60, not 0.01667); slanted
    where two sit close enough to overprint (1/120 beside 1/60 on an axis to 1/15)."""
    ax.set_xticks(lambdas, [lambda_text(lam) for lam in lambdas])
    span = (lambdas[-1] - lambdas[0]) if len(lambdas) > 1 else 0.0
    gaps = [b - a for a, b in itertools.pairwise(lambdas)]
    if len(lambdas) > 5 or (span > 0 and min(gaps) < 0.15 * span):
        ax.tick_params(axis="x", labelrotation=45, labelsize="x-small")


def _panel_axes(lay: Layout) -> tuple[Figure, list[Any]]:
    ncols = min(len(lay.panels), PANEL_COLS)
    nrows = math.ceil(len(lay.panels) / ncols)
    width, height = (7.5, 4.4) if len(lay.panels) == 1 else (4.2, 3.2)
    fig, axes = figure(width * ncols + 1.5, height * nrows + 0.6, nrows, ncols)
    flat = list(axes.flat)
    for ax in flat[len(lay.panels) :]:
        ax.set_visible(False)
    return fig, flat[: len(lay.panels)]


def vs_lambda(
    summary: pl.DataFrame,
    metric: str,
    title: str,
    ylabel: str,
    *,
    raw: str | None = None,
    dashed: str | None = None,
    dashed_label: str = "",
    ylim: tuple[float, float] | None = None,
    logy: bool = False,
) -> Figure:
    """One line per series against lambda in each panel; `raw` draws the shaping-off value as a
    grey dashed line, `dashed` a second metric in the series' colour."""
    from matplotlib.lines import Line2D

    lay = layout(summary)
    names = lay.names
    colour = dict(zip(names, colours(len(names)), strict=True))
    fig, axes = _panel_axes(lay)
    for ax, (panel_title, part) in zip(axes, lay.panels, strict=True):
        part = part.with_columns(
            pl.col(S.CONFIG_ID).replace_strict(lay.series, default="shaped").alias("_series")
        ).sort("lambda_time")
        for (name,), line in part.group_by("_series", maintain_order=True):
            x = line["lambda_time"]
            ax.plot(x, line[metric], marker="o", ms=4, color=colour[name])
            if dashed is not None:
                ax.plot(x, line[dashed], linestyle="--", marker=".", color=colour[name], alpha=0.7)
            if raw is not None:
                ax.plot(x, line[raw], linestyle=":", color="grey", linewidth=1)
        ax.set_title(panel_title or title, fontsize="small" if panel_title else "medium")
        lambda_ticks(ax, part["lambda_time"].unique().sort().to_list())
        ax.set_xlabel(LAMBDA_AXIS, fontsize="small")
        ax.set_ylabel(ylabel, fontsize="small")
        ax.grid(alpha=0.3)
        if ylim is not None:
            ax.set_ylim(*ylim)
        if logy:
            ax.set_yscale("symlog", linthresh=1.0)
    if len(lay.panels) > 1:
        fig.suptitle(f"{title} (one panel per {', '.join(lay.facets)})", x=0.02, ha="left")
    handles = [Line2D([], [], color=colour[n], marker="o") for n in names]
    labels = list(names)
    if raw is not None:
        handles.append(Line2D([], [], color="grey", linestyle=":"))
        labels.append("shaping off (same estimator)")
    if dashed is not None:
        handles.append(Line2D([], [], color="black", linestyle="--"))
        labels.append(dashed_label)
    legend(fig, handles, labels)
    return fig


LAMBDA_CHARTS: dict[str, dict[str, Any]] = {
    "signal_vs_lambda": {
        "metric": C.SIGNAL,
        "title": "Groups with a learning signal vs time penalty",
        "ylabel": "share of groups with |adv| > 1e-6",
        "raw": C.SIGNAL_RAW,
        "ylim": (0, 1.05),
    },
    "inversion_vs_lambda": {
        "metric": C.INVERSIONS,
        "title": "Reward inversions vs time penalty",
        "ylabel": "share of groups with an inversion",
    },
    "explosion_vs_lambda": {
        "metric": C.EXPLOSION_UNCLIPPED,
        "title": "Advantage explosions (|A| > 3 before clip)",
        "ylabel": "share of trainable rows",
        "dashed": C.CLIP_FRAC,
        "dashed_label": "dashed: rows changed by the clip",
    },
    "estimators_vs_lambda": {
        "metric": C.ABS_MAX,
        "title": "Largest |advantage| by estimator",
        "ylabel": "max |advantage| (symlog)",
        "logy": True,
    },
}
"""`vs_lambda`'s arguments per chart: the signal rate (with shaping off's), the inversion rate,
rows with |unclipped advantage| > 3 (dashed: rows the clip changes), the largest |advantage| per
estimator."""


def lambda_chart(summary: pl.DataFrame, stem: str) -> Figure:
    """The chart against lambda that LAMBDA_CHARTS names `stem` (`signal_vs_lambda`, ...)."""
    return vs_lambda(summary, **LAMBDA_CHARTS[stem])


def has_heatmap(summary: pl.DataFrame) -> bool:
    """A lambda x floor heatmap needs two or more values of each among the shaped configs."""
    shaped = summary.filter(pl.col("enabled"))
    return shaped["lambda_time"].n_unique() > 1 and shaped["floor"].n_unique() > 1


def heatmap_lambda_floor(summary: pl.DataFrame) -> Figure:
    """Signal rate (colour) over lambda x floor, with the inversion rate written in each cell;
    one panel per setting of the other varying parameters (up to 12)."""
    shaped = summary.filter(pl.col("enabled"))
    others = varying(shaped, exclude=("enabled", "lambda_time", "floor"))
    keyed = shaped.with_columns(
        pl.struct(others).alias("_panel") if others else pl.lit("").alias("_panel")
    )
    panels = keyed.partition_by("_panel", maintain_order=True)
    shown = panels[:12]
    lambdas = sorted(shaped["lambda_time"].unique().to_list())
    floors = sorted(shaped["floor"].unique().to_list(), key=lambda f: (f is not None, f or 0))
    ncols = min(len(shown), 2)
    nrows = math.ceil(len(shown) / ncols)
    width = max(3.6, 0.8 * len(lambdas) + 1.4)
    height = max(2.6, 0.5 * len(floors) + 1.3)
    fig, axes = figure(width * ncols + 1.2, height * nrows + 0.5, nrows, ncols)
    flat = list(axes.flat)
    image = None
    for ax, part in zip(flat, shown, strict=False):
        grid = np.full((len(floors), len(lambdas)), np.nan)
        cells = {}
        for row in part.iter_rows(named=True):
            i, j = floors.index(row["floor"]), lambdas.index(row["lambda_time"])
            grid[i, j] = row[C.SIGNAL]
            cells[i, j] = f"{row[C.SIGNAL]:.2f}\ninv {row[C.INVERSIONS]:.2f}"
        image = ax.imshow(grid, vmin=0, vmax=1, cmap="viridis", aspect="auto", origin="lower")
        for (i, j), words in sorted(cells.items()):
            colour = "white" if grid[i, j] < 0.6 else "black"
            ax.text(j, i, words, ha="center", va="center", fontsize="x-small", color=colour)
        ax.set_xticks(range(len(lambdas)), [lambda_text(lam) for lam in lambdas])
        ax.set_yticks(range(len(floors)), [param_text("floor", f) for f in floors])
        ax.set_xlabel(LAMBDA_AXIS, fontsize="small")
        ax.set_ylabel("floor")
        first = part.row(0, named=True)
        ax.set_title(describe(first, others) if others else "signal rate", fontsize="small")
    for ax in flat[len(shown) :]:
        ax.set_visible(False)
    more = f" (first 12 of {len(panels)} settings)" if len(panels) > 12 else ""
    title = f"Signal rate over lambda × floor; 'inv' = inversion rate{more}"
    fig.suptitle(title, x=0.02, ha="left")
    if image is not None:
        fig.colorbar(image, ax=flat[: len(shown)], label="share of groups with signal", shrink=0.8)
    return fig


def advantage_bands(summary: pl.DataFrame) -> Figure:
    """Per config, the trainable-row advantage quantiles from the summary: min-max whisker,
    p01-p99 and p05-p95 bands and the median, on a symlog axis (tails stay visible)."""
    n = summary.height
    fig, axes = figure(11.0, 1.3 + 0.3 * n)
    ax = axes[0][0]
    y = np.arange(n)[::-1]
    col = {k: summary[name].cast(pl.Float64).to_numpy() for k, name in C.ADV_BANDS.items()}
    ax.hlines(y, col["min"], col["max"], color="#9aa3b5", linewidth=1, label="min – max")
    ax.hlines(y, col["p01"], col["p99"], color="#7aa6e0", linewidth=6, label="p01 – p99")
    ax.hlines(y, col["p05"], col["p95"], color="#2859a8", linewidth=6, label="p05 – p95")
    ax.plot(col["p50"], y, "|", color="white", markersize=9, markeredgewidth=2)
    ax.plot(col["p50"], y, "|", color="black", markersize=6, label="median")
    ax.axvspan(-3, 3, color="#e8f3e8", zorder=0, label="|A| ≤ 3")
    labels = [f"#{i} {label}" for i, label in enumerate(summary["label"], start=1)]
    ax.set_yticks(y, labels, fontsize="x-small" if n > 30 else "small")
    ax.set_ylim(-0.7, n - 0.3)
    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_xlabel("advantage of trainable rows after clip (linear in [-1, 1], log beyond)")
    ax.set_title("Advantage distribution per config")
    ax.set_ylabel("config (# as in index.html)")
    ax.grid(alpha=0.3, axis="x")
    if n > 20:  # a tall figure: the scale at the top too
        ax.tick_params(labeltop=True, top=True)
    legend(fig, *ax.get_legend_handles_labels())
    return fig


def place_labels(ax: Any, points: list[dict[str, Any]], x: str, y: str, scale: float = 1.0) -> None:
    """Each point's numbers beside it, nudged up in steps of a line until no two labels share a
    spot (in axes fractions), so close points stay readable."""
    xs = [p[x] * scale for p in points]
    ys = [p[y] for p in points]
    x_span = (max(xs) - min(xs)) or 1.0
    y_span = (max(ys) - min(ys)) or 1.0
    taken: list[tuple[float, float]] = []
    for p, px, py in sorted(zip(points, xs, ys, strict=True), key=lambda t: (t[2], t[1])):
        fx, fy = (px - min(xs)) / x_span, (py - min(ys)) / y_span
        lift = 0
        while any(abs(fx - tx) < 0.08 and abs(fy + lift * 0.045 - ty) < 0.04 for tx, ty in taken):
            lift += 1
        taken.append((fx, fy + lift * 0.045))
        arrow = {"arrowstyle": "-", "color": "#bbb", "lw": 0.5} if lift else None
        where = {"xytext": (4, 3 + 9 * lift), "textcoords": "offset points", "fontsize": "x-small"}
        ax.annotate(",".join(map(str, p["n"])), (px, py), arrowprops=arrow, **where)


def frontier_chart(summary: pl.DataFrame, verdict: pl.DataFrame, rule: Rule) -> Figure:
    """index.html's frontier as a PNG: solve Δ after T steps (drawn upward: up is sooner) against
    the resolve rate kept then, coloured by role, hollow where avoided for another criterion,
    coincident configs one numbered point, and the line at the bars of the verdict's `rule`."""
    front = frontier(summary, verdict)
    points = point_groups(front, "kept", "gain")
    others = set(front.filter(pl.col("other").fill_null(False))[S.CONFIG_ID].to_list())
    fig, axes = figure(8.0, 5.0)
    ax = axes[0][0]
    seen = set()
    for p in points:
        name, colour = STYLES[p[C.ROLE]]
        hollow = p[C.ROLE] == "avoid" and all(i in others for i in p["ids"])
        label = "avoid (another criterion)" if hollow else name
        size = 70 if p[C.ROLE] in ("recommended", "runner-up") else 34
        face, edge = ("none", colour) if hollow else (colour, "white")
        shown = {"label": None if label in seen else label, "linewidths": 1.2, "zorder": 3}
        ax.scatter(p["kept"] * 100, p["gain"], s=size, facecolors=face, edgecolors=edge, **shown)
        seen.add(label)
    bar = min(rule.min_resolve_vs_off, rule.min_resolve_vs_off_long)
    ax.axvline(bar * 100, color="#555", linestyle="--", linewidth=1, label=f"rule: {C.pct(bar)}")
    ax.axhline(0, color="#999", linewidth=0.8)
    if len(points) <= 40:
        place_labels(ax, points, "kept", "gain", scale=100)
    ax.set_xlabel("resolve rate after T steps, % of shaping off's (low end of the interval)")
    ax.set_ylabel(FRONTIER_Y)
    # Up is sooner, written as everywhere: a solve Δ, negative = sooner (the tick of y is −y).
    ax.yaxis.set_major_formatter(lambda y, _: C.show(C.F_SOLVE_VS_OFF, -y).removesuffix(" min"))
    ax.grid(alpha=0.3)
    ax.set_title("Frontier on the rule's axes: best configs sit top right of the line")
    legend(fig, *ax.get_legend_handles_labels())
    return fig
