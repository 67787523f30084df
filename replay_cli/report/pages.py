"""The small pages of `compare`, `explain` and `verify`: their tables (the comparison as one row
per config first), and the charts their directory holds; a replay report's page is html.py's."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from replay_cli import catalogue as C
from replay_cli.io.files import atomic_path
from replay_cli.report.compare import delta_table
from replay_cli.report.html import final_path
from replay_cli.report.html_parts import INDEX, cell, page, png_image, section, table

TITLES = {
    "comparison": "Comparison across configs and reports",
    "internal_comparison": "Replayed vs internal run",
    "attribution": "nemo-rl vs internal, one item at a time",
    "candidates": "Estimator settings against the logged advantages",
    "steps": "Per step, the best setting",
    "differing_rows": "Rows the best setting does not reproduce",
}
"""Each table's section title (a table not named here is titled by its file)."""


def frame_table(frame: pl.DataFrame, limit: int = 500) -> str:
    """A sortable table of a frame's first `limit` rows."""
    shown = frame.head(limit)
    rows = [[cell(v, "text" if isinstance(v, str) else "") for v in r] for r in shown.rows()]
    text = [c for c, t in shown.schema.items() if t == pl.String]
    note = (
        f'<p class="muted">First {limit} of {frame.height} rows.</p>'
        if frame.height > limit
        else ""
    )
    body = table(shown.columns, rows, css="sortable", text_headers=text)
    return f'<div class="scroll">{body}</div>{note}'


def _delta_rows(frame: pl.DataFrame) -> str:
    """The headline deltas as one row per config, in the catalogue's labels and units (changes
    of shares in points, of minutes in minutes), each cell sorting by its exact value."""
    wide = delta_table(frame)
    metrics = [c for c in wide.columns if c not in ("report", "label")]
    rows = [
        [cell(r["report"], "text"), cell(r["label"], "text")]
        + [cell(r[m], shown=C.show_change(C.metric(m).unit, r[m])) for m in metrics]
        for r in wide.iter_rows(named=True)
    ]
    headers = ["report", "config", *(C.metric(m).label for m in metrics)]
    body = table(headers, rows, css="sortable", text_headers=("report", "config"))
    return f'<div class="scroll">{body}</div>'


def _long_rows(frame: pl.DataFrame) -> str:
    """Every metric's value, the reference's and the change, in the metric's label and unit."""
    rows = []
    for r in frame.iter_rows(named=True):
        metric = C.metric(r["metric"])
        rows.append(
            [cell(r["report"], "text"), cell(r["label"], "text"), cell(metric.label, "text")]
            + [cell(r[k], shown=metric.show(r[k])) for k in ("value", "reference")]
            + [cell(r["delta"], shown=C.show_change(metric.unit, r["delta"]))]
        )
    headers = ["report", "config", "metric", "value", "reference", "change"]
    body = table(headers, rows, css="sortable", text_headers=headers[:3])
    return f'<div class="scroll">{body}</div>'


def _comparison(frame: pl.DataFrame) -> str:
    """The headline deltas as one row per config, then the long table folded away."""
    return (
        '<p class="muted">Change of each headline metric from the reference config (shares in '
        "percentage points, times in minutes).</p>"
        + _delta_rows(frame)
        + "<details><summary>Every metric, value and reference</summary>"
        + _long_rows(frame)
        + "</details>"
    )


def render_tables_page(directory: Path, tables: dict[str, pl.DataFrame]) -> Path:
    """Write directory/index.html for a directory of tables (and its charts/*.png)."""
    sections, nav = [], []
    for name, frame in tables.items():
        body = _comparison(frame) if name == "comparison" else frame_table(frame)
        title = TITLES.get(name, f"{name}.parquet")
        sections.append(section(name, title, body))
        nav.append((name, title))
    charts = sorted((directory / "charts").glob("*.png"))
    if charts:
        figures = "".join(png_image(p, p.stem) for p in charts)
        sections.append(section("charts", "Charts", f'<div class="charts">{figures}</div>'))
        nav.append(("charts", "Charts"))
    what = ", ".join(f"{name}.parquet" for name in tables)
    title = f"replay report: {final_path(directory).name}"
    out = directory / INDEX
    with atomic_path(out) as tmp:
        tmp.write_text(page(title, what, nav, sections), encoding="utf-8")
    return out
