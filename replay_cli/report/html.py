"""index.html of a replay report: a function of the `Report` (model.py), nothing read again.

Top to bottom: the decision (the recommended config, the runner-up, what to avoid and why, the
overrides that launch it), the forecast, findings, the summary table (column groups, sortable,
filterable, hazards marked, CSV download) with the frontier, what was replayed, charts, per-config
detail and how to read the page. One self-contained file: CSS, script and charts are inline (each
chart also links to its PNG beside the page)."""

from __future__ import annotations

import base64
from html import escape
from pathlib import Path
from typing import Any

import polars as pl

from replay_cli import catalogue as C
from replay_cli import schema as S
from replay_cli.advice.findings import PARAMS
from replay_cli.advice.verdict import pilot_lines
from replay_cli.advice.words import param_text
from replay_cli.io.files import atomic_path
from replay_cli.report import facets
from replay_cli.report import layouts as L
from replay_cli.report.html_parts import (
    INDEX,
    cell,
    frontier_svg,
    launch_block,
    page,
    png_image,
    section,
    table,
)
from replay_cli.report.model import Report
from replay_cli.report.plots import CHARTS
from replay_cli.report.roles import FRONTIER_Y, STYLES, point_groups
from replay_cli.report.tensorboard import open_commands

WON_TITLE = "share of bootstrap resamples in which the rule picks it"
"""The summary's `won` cells' hover text."""
AVOID_SHOWN = 12
"""Avoided configs listed open under the decision; the rest are one click away."""

GUIDE = (
    "<ul>"
    "<li><b>Decision</b>: the config the rule picks (or keep shaping off), how sure the pick is, "
    "and the overrides that launch it. The rule is stated under it, with its thresholds.</li>"
    "<li><b>Forecast</b>: what T training steps under each config do beside shaping off; the "
    "rule reads its outcome at the horizon T, at the low end of its interval.</li>"
    "<li><b>Summary</b>: one row per config. The rule's columns first, then the hazards (red: "
    "crosses a threshold, amber: needs a look; hover a cell for why), then context (folded). "
    "Shares and ratios in %, minutes negative when sooner than under shaping off.</li>"
    "<li><b>Frontier</b>: right keeps more resolve rate, up ends successes sooner; best is top "
    "right of the dashed line.</li>"
    "<li>Every number is in the directory's Parquet tables (fractions and seconds there).</li>"
    '</ul><p class="muted">The full guide is <code>docs/report.md</code> in the replay_cli '
    "repository (this page is offline and links nowhere).</p>"
)
"""How to read the page, in short: the page is offline, so docs/report.md is named, not linked."""


def _inputs(report: Report) -> str:
    """What was replayed: files (by name), sizes, rows, steps, groups, outcome shares, run times."""
    manifest, summary = report.manifest, report.result.summary
    file_rows = [
        [f'<td class="text">{escape(Path(f["path"]).name)}</td>', f["size"], f["sha256"][:12]]
        for f in manifest.get("inputs", [])
    ]
    files = table(["input file", "bytes", "sha256"], file_rows)
    parts = [f'<div class="scroll">{files}</div>'] if file_rows else []
    off = summary.filter(~pl.col("enabled")) if "enabled" in summary.columns else summary
    row = (off if off.height else summary).row(0, named=True)

    def shown(*names: str) -> str:
        return " / ".join(C.show(name, row.get(name)) for name in names)

    facts = [(what, shown(*names)) for what, names in L.INPUTS]
    items = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in facts)
    parts.append(f'<dl class="facts">{items}</dl>')
    parts += [f'<p class="muted">note: {escape(str(n))}</p>' for n in manifest.get("notes", [])]
    if manifest.get("resolved_derived_from_reward"):
        parts.append('<p class="muted">resolved was derived from reward &gt; 0.</p>')
    parts.append(
        f'<p class="muted">{summary.height} config(s); the run-time quantiles are over finite '
        "run times of the input.</p>"
    )
    return "".join(parts)


def _finding_items(frame: pl.DataFrame) -> str:
    items = [
        f'<li class="{escape(r["severity"])}"><span class="badge {escape(r["severity"])}">'
        f"{escape(r['severity'])}</span>{escape(r['text'])}</li>"
        for r in frame.iter_rows(named=True)
    ]
    return f'<ul class="findings">{"".join(items)}</ul>' if items else ""


def _findings(found: pl.DataFrame) -> str:
    head = found.filter(pl.col("headline"))
    if head.is_empty():
        return '<p class="muted">Nothing to flag.</p>'
    more = found.height - head.height
    tail = (
        f'<p class="muted">{more} more per-config findings are under each config below and in '
        "findings.parquet.</p>"
        if more
        else ""
    )
    return _finding_items(head) + tail


def _summary_rows(report: Report, groups: list) -> tuple[list[list[str]], list[str]]:
    """The summary table's cells per config (number, label, role, won share, then each group's
    columns, hazards marked) and the rows' ids."""
    summary, rule = report.result.summary, report.verdict.rule
    verdict = report.verdict.recommendation
    roles = dict(verdict.select(S.CONFIG_ID, C.ROLE).rows())
    won = dict(verdict.select(S.CONFIG_ID, C.WON_SHARE).rows()) if C.WON_SHARE in verdict else {}
    rows, ids = [], []
    for row in summary.iter_rows(named=True):
        cid = row[S.CONFIG_ID]
        role, share = roles.get(cid, ""), won.get(cid)
        cells = [
            cell(report.numbers[cid]),
            cell(row["label"], "text config"),
            cell(role, f"text role-{role}"),
            cell(share, "", WON_TITLE, C.show_value("share", share)),
        ]
        for key, _, names in groups:
            for name in names:
                value = row.get(name)
                if key == "params":
                    cells.append(cell(value, f"text g-{key}", "", param_text(name, value)))
                    continue
                css, why = C.hazard(name, value, row, rule.bars())
                title = why or C.metric(name).description
                cells.append(cell(value, f"{css} g-{key}".strip(), title, C.show(name, value)))
        rows.append(cells)
        ids.append(f"row-{cid}")
    return rows, ids


def _summary_controls(summary: pl.DataFrame, groups: list, varying: list[str], first: int) -> str:
    """The column groups' checkboxes and a filter per varying parameter (its column `first` on)."""
    filters = []
    for i, p in enumerate(varying, start=first):
        values = sorted({param_text(p, v) for v in summary[p].to_list()})
        options = "".join(f'<option value="{escape(v)}">{escape(v)}</option>' for v in values)
        filters.append(
            f'<label>{escape(p)} <select data-filter="{i}"><option value="*">all</option>'
            f"{options}</select></label>"
        )
    toggles = "".join(
        f'<label><input type="checkbox" id="show-{key}"{"" if key == "context" else " checked"}>'
        f" {escape(title)} ({len(names)})</label>"
        for key, title, names in groups
    )
    bar = f'<div class="filters"><span class="muted">columns:</span>{toggles}</div>'
    if filters:
        bar += f'<div class="filters">{"".join(filters)}</div>'
    return bar


def _summary_table(report: Report) -> str:
    """The summary in column groups (the rule's, the hazards, context folded, the parameters),
    each group's visibility a checkbox; sortable, filterable, with a CSV download."""
    summary = report.result.summary
    varying = facets.varying(summary, exclude=())
    groups = [
        (key, title, [m for m in names if m in summary.columns])
        for key, title, names in L.SUMMARY_GROUPS
    ]
    groups = [g for g in groups if g[2]]
    if varying:
        groups.append(("params", "parameters", varying))
    lead = ["#", "config", C.ROLE, "won"]
    heads = [*lead]
    head_css = [""] * len(lead)
    for key, _, names in groups:
        heads += [C.metric(m).label if key != "params" else m for m in names]
        head_css += [f"g-{key}"] * len(names)
    rows, ids = _summary_rows(report, groups)
    first = len(lead) + sum(len(n) for k, _, n in groups if k != "params")
    bar = _summary_controls(summary, groups, varying, first)
    csv = base64.b64encode(summary.write_csv().encode()).decode("ascii")
    count = (
        f'<p class="muted"><span id="shown-count">{summary.height}</span> of {summary.height} '
        "configs shown (filters apply to the frontier too). Click a header to sort; red cells "
        "cross a hazard threshold, amber ones need a look (hover for why and for what a column "
        "means). Shares and ratios are in %; the rule's columns are the outcome after T "
        "training steps (minutes: negative is sooner than under shaping off), the first step's "
        "columns a diagnostic of its direction; the CSV keeps fractions. "
        f'<a download="summary.csv" href="data:text/csv;base64,{csv}">Download the summary as '
        "CSV</a>.</p>"
    )
    spans = "".join(
        f'<th colspan="{len(names)}" class="g-{key} group">{escape(title)}</th>'
        for key, title, names in groups
    )
    text = ["config", C.ROLE, *varying]
    body = table(
        heads, rows, css="sortable summary", row_ids=ids, head_css=head_css, text_headers=text
    )
    body = body.replace(
        '<table class="sortable summary">', '<table class="sortable summary" id="summary-table">', 1
    )
    group_row = f'<tr class="groups"><th colspan="{len(lead)}"></th>{spans}</tr>'
    body = body.replace("<thead>", f"<thead>{group_row}", 1)
    return bar + count + f'<div class="scroll">{body}</div>'


def _frontier(report: Report) -> str:
    front = report.frontier
    if front is None:
        return '<p class="muted">No frontier: replayed without the forecast (--no-forecast).</p>'
    points = point_groups(front, "kept", "gain")
    hollow = frozenset(front.filter(pl.col("other").fill_null(False))[S.CONFIG_ID].to_list())
    line = report.rule_line

    def shown(axis: str, value: float) -> str:
        # y is `gain` (minutes sooner, up); written as solve Δ, negative = sooner, as everywhere.
        # The rule's line is its bar, written as every sentence writes a threshold (95%).
        if axis == "rule":
            return C.pct(value)
        return C.show_value("ratio", value) if axis == "x" else C.show(C.F_SOLVE_VS_OFF, -value)

    chart = frontier_svg(
        points,
        x="kept",
        y="gain",
        xlabel="resolve rate kept after T steps (low end)",
        ylabel=FRONTIER_Y,
        title="Frontier on the rule's axes",
        vline=line,
        hollow=hollow,
        shown=shown,
    )
    legend = "".join(
        f'<span class="key"><i style="background:{colour}"></i>{escape(name)}</span>'
        for name, colour in STYLES.values()
    )
    return (
        f'<div class="frontier">{chart}</div><p class="muted">One point per config (configs that '
        "coincide share a point), numbered as in the table; hover for the labels, click to open "
        "its detail. Right: the resolve rate a config keeps after T steps against shaping off's "
        "(the low end of its interval, the lower of overall and long problems); up: its solve Δ "
        "then, the minutes a success takes minus under shaping off (negative = sooner, so up is "
        f"sooner). The dashed line is the rule's {C.pct(line)}; a hollow point is avoided for "
        "another criterion (an inversion, an explosion, ...) wherever it sits. Best is top right. "
        f"{legend} The same chart as a PNG for slides: charts/frontier.png.</p>"
    )


def _tensorboard(where: str) -> str:
    """How to open the runs written beside this report, and upload them to W&B."""
    commands = "\n".join(open_commands(where))
    return (
        f"<p>One run per config in <code>{escape(where)}</code>: the trainer's tags "
        "(<code>train/…</code>, <code>validation/…</code>) at the trainer's steps, so they overlay "
        "the real run's curves, the replay's diagnostics under <code>replay/</code>, and the "
        "HParams view of the sweep.</p>"
        f'<pre class="overrides"><code>{escape(commands)}</code></pre>'
    )


def _wandb(where: str) -> str:
    """How to upload the offline W&B runs written beside this report."""
    from replay_cli.report.wandb_runs import sync_command

    return (
        f"<p>One offline run per config in <code>{escape(where)}</code>, in one group: the "
        "config's parameters and launch overrides as <code>config</code>, the trainer's tags as "
        "history, the decision's numbers as summary and its role as a tag. Upload them with:</p>"
        f'<pre class="overrides"><code>{escape(sync_command(where))}</code></pre>'
    )


def _decision(report: Report) -> str:
    """What to launch (or to keep shaping off, with the best trade), how sure the pick is, the
    runner-up, what to avoid and why, and the overrides and YAML that launch it."""
    d = report.verdict.decision

    def name(r: dict[str, Any]) -> str:
        cid = r[S.CONFIG_ID]
        return f'<a href="#cfg-{escape(cid)}">#{report.numbers[cid]} {escape(r["label"])}</a>'

    parts = []
    rec, runner = d.recommended, d.runner_up
    if d.unrated:  # the avoided configs (a failure that needs no forecast) are still listed
        parts.append(f'<p class="verdict">No recommendation: {escape(d.unrated)}.</p>')
    elif rec is None:
        misses = "".join(
            f"<li>{name(m)}: fails {escape(', '.join(m[C.FAILED]))} — {escape(m[C.REASONS])}</li>"
            for m in d.near_misses
        )
        parts.append(
            '<p class="verdict avoid">No config passes the recommendation rule: keep shaping off '
            "(every config is measured against it). The nearest misses and what each fails:</p>"
            f"<ul>{misses}</ul>"
        )
    else:
        what = "Keep shaping off" if d.keep_off else "Recommended"
        parts.append(f'<p class="verdict recommended"><b>{what}:</b> {name(rec)}</p>')
        parts.append(f"<p>{escape(report.why)}.</p>")
        for severity, text in report.pick_warnings:
            parts.append(
                f'<p class="verdict avoid"><b>{severity.capitalize()}:</b> {escape(text)}</p>'
            )
        parts.append(f'<p class="muted">The bar: {escape(report.bar_text)}.</p>')
        parts.append(f'<p class="muted">{escape(report.confidence)}</p>')
        parts.append('<p class="muted">Launch it with these trainer overrides:</p>')
        parts.append(launch_block(rec[C.OVERRIDES], C.OVERRIDES))
        parts.append('<p class="muted">or this block of the trainer\'s config file:</p>')
        parts.append(launch_block(rec[C.YAML], "YAML block"))
        if runner is not None:
            parts.append(
                f'<p class="verdict"><b>Runner-up:</b> {name(runner)} — '
                f"{escape(runner[C.REASONS])}.</p>"
            )
    trade = report.trade
    if trade is not None:
        parts.append(
            f'<p class="verdict"><b>Best trade:</b> {name(trade)} — {escape(trade[C.TRADE])}. '
            "Launch it knowingly with:</p>"
        )
        parts.append(launch_block(trade[C.OVERRIDES], "overrides of the trade"))
    if d.avoid:
        items = [f"<li>{name(r)}: {escape(r[C.REASONS])}</li>" for r in d.avoid]
        parts.append(f"<p><b>Avoid:</b> {len(d.avoid)} config(s), and why:</p>")
        parts.append(f'<ul class="avoid">{"".join(items[:AVOID_SHOWN])}</ul>')
        if len(items) > AVOID_SHOWN:
            parts.append(
                f"<details><summary>{len(items) - AVOID_SHOWN} more avoided configs</summary>"
                f'<ul class="avoid">{"".join(items[AVOID_SHOWN:])}</ul></details>'
            )
    parts.append(
        f'<p class="muted">The rule (docs/report.md): {escape(report.verdict.rule.summary_text())}.</p>'
    )
    return "".join(parts)


def _forecast(report: Report, directory: Path) -> str:
    """What T steps of training under each config do, beside shaping off: a table per config
    at the last step, whether the verdict holds at half and twice the budget and the horizon, and
    the chart."""
    summary = report.result.summary
    settings = report.manifest.get("forecast") or {}
    row = summary.row(0, named=True)
    steps = int(row.get(C.FORECAST_STEPS) or 0)
    course = report.off_course or ""
    roles = report.verdict.recommendation
    checked = roles.filter(pl.col(C.ROLE) == "recommended")[C.BUDGET_CHECK].to_list()
    sampled = int(row.get(C.FORECAST_PROBLEMS) or 0)
    budget = row.get(C.FORECAST_BUDGET)
    size = "" if budget is None else f" (KL {float(budget):g} per step, the step budget)"
    total = int(row.get(C.FORECAST_PROBLEMS_TOTAL) or 0)
    intro = (
        f"<p>The outcome the rule reads: {steps} simulated training steps (the horizon T, "
        f"--steps) of a fixed-size step{size}, {settings.get('seeds', '?')} seeds, each on "
        f"{sampled:,} of the input's {total:,} problems (a sample stratified by length bucket); "
        "effort moves, each level's success as the reading below says. Intervals: a paired "
        "bootstrap over the problems; the chart's bands are the seeds' range "
        f'(docs/report.md, "The forecast"). {escape(course[:1].upper() + course[1:])}.</p>'
    )
    for label, name in (("Reading", C.FORECAST_FIT), ("Backtest", C.FORECAST_BACKTEST)):
        if row.get(name):
            intro += f"<p><b>{label}</b>: {escape(str(row[name]))}.</p>"
    for line in pilot_lines(report.result.pilots):
        head, _, rest = line.partition(": ")
        intro += f"<p><b>{escape(head)}</b>: {escape(rest)}.</p>"
    if checked and checked[0]:
        intro += f'<p class="muted">Checks: {escape(checked[0])}.</p>'
    columns = [c for c in L.FORECAST if c in summary.columns]
    rows = []
    for r in summary.iter_rows(named=True):
        cells = [cell(report.numbers[r[S.CONFIG_ID]]), cell(r["label"], "text config")]
        for name in columns:
            css, why = C.hazard(name, r.get(name), r, report.verdict.rule.bars())
            cells.append(
                cell(r.get(name), css, why or C.metric(name).description, C.show(name, r.get(name)))
            )
        rows.append(cells)
    headers = ["#", "config", *(C.metric(c).label for c in columns)]
    body = table(headers, rows, css="sortable", text_headers=["config"])
    return intro + f'<div class="scroll">{body}</div>' + _figure(directory, "forecast")


def _figure(directory: Path, stem: str, caption: str = "") -> str:
    """A chart inline, linked to its PNG (full size on a phone), with its caption."""
    path = directory / "charts" / f"{stem}.png"
    if not path.exists():
        return ""
    title = f"<figcaption><b>{escape(path.name)}</b> — {escape(caption)}</figcaption>"
    return (
        f'<figure>{title if caption else ""}<div class="chart-box">'
        f'<a href="charts/{escape(path.name)}" title="open the full image">'
        f"{png_image(path, stem)}</a></div></figure>"
    )


SHOWN_ELSEWHERE = ("forecast", "frontier")
"""Charts the page shows in their own section (the forecast) or as the SVG (the frontier)."""


def _charts(directory: Path, rated: bool) -> str:
    skip = SHOWN_ELSEWHERE if rated else SHOWN_ELSEWHERE[:1]
    stems = {p.stem for p in (directory / "charts").glob("*.png")} - set(skip)
    if not stems:
        return (
            '<p class="muted">No charts were drawn for this report: run '
            f"<code>replay-cli plot {escape(str(final_path(directory)))}</code> to draw them.</p>"
        )
    order = list(CHARTS)
    ordered = sorted(stems, key=lambda s: (order.index(s) if s in order else len(order), s))
    figures = [_figure(directory, s, CHARTS[s].caption if s in CHARTS else "") for s in ordered]
    return (
        '<p class="muted">Click a chart for its full-size image (charts/ beside this page).</p>'
        f'<div class="charts">{"".join(figures)}</div>'
    )


def _details(report: Report) -> str:
    """Each config folded: its findings, parameters, metrics and the groups of its largest
    unclipped |advantage|."""
    summary, found, worst = report.result.summary, report.verdict.findings, report.top_groups
    top: dict[str, pl.DataFrame] = {}
    if worst is not None:
        top = {k[0]: v for k, v in worst.partition_by(S.CONFIG_ID, as_dict=True).items()}
    metrics = [c for c in summary.columns if c not in (*PARAMS, S.CONFIG_ID, "label")]
    out = []
    for row in summary.iter_rows(named=True):
        cid = row[S.CONFIG_ID]
        params = "".join(
            f"<dt>{escape(p)}</dt><dd>{escape(param_text(p, row[p]))}</dd>"
            for p in PARAMS
            if p in row
        )
        values = [
            [
                cell(m, "text", C.metric(m).label),
                cell(row[m], "", C.metric(m).description, C.show(m, row[m])),
            ]
            for m in metrics
        ]
        mine = found.filter(pl.col(S.CONFIG_ID) == cid)
        parts = [
            (
                f'<details id="cfg-{escape(cid)}"><summary>#{report.numbers[cid]} '
                f'{escape(row["label"])} <span class="muted">({escape(cid)})</span></summary>'
            ),
            _finding_items(mine),
            f'<div class="frontier"><dl class="facts">{params}</dl>',
            f'<div class="scroll">{table(["metric", "value"], values)}</div></div>',
        ]
        if cid in top:
            g = top[cid].drop(S.CONFIG_ID)
            parts.append("<h3>Groups with the largest unclipped |advantage|</h3>")
            parts.append(f'<div class="scroll">{table(g.columns, g.rows())}</div>')
        parts.append("</details>")
        out.append("".join(parts))
    return "".join(out)


def final_path(directory: Path) -> Path:
    """The report's own path when `directory` is its staging directory (`.name.tmp-xxxx`)."""
    name = directory.name
    if name.startswith(".") and ".tmp-" in name:  # rendered in the staged directory of a report
        return directory.parent / name[1:].rsplit(".tmp-", 1)[0]
    return directory


def subtitle(manifest: dict[str, Any]) -> str:
    """The header's line: when, which version, and the command as typed (the program by its
    name, not the absolute path of the script that ran it)."""
    argv = [str(a) for a in manifest.get("command_line", [])]
    command = " ".join([Path(argv[0]).name, *argv[1:]]) if argv else ""
    parts = (manifest.get("created_utc", ""), f"replay_cli {manifest.get('version', '')}", command)
    return " · ".join(p for p in parts if p.strip())


def render_page(report: Report, directory: str | Path) -> Path:
    """Write directory/index.html of `report` (its charts are directory/charts/*.png); returns
    its path."""
    directory = Path(directory)
    manifest = report.manifest
    sections, nav = [], []

    def add(anchor: str, title: str, body: str) -> None:
        sections.append(section(anchor, title, body))
        nav.append((anchor, title))

    add("decision", "Decision", _decision(report))
    if report.result.forecast is not None and C.FORECAST_STEPS in report.result.summary.columns:
        add("forecast", "Forecast", _forecast(report, directory))
    add("findings", "Findings", _findings(report.verdict.findings))
    add("summary", "Summary", _summary_table(report) + _frontier(report))
    add("replayed", "What was replayed", _inputs(report))
    if manifest.get("tensorboard"):
        add("tensorboard", "TensorBoard runs", _tensorboard(manifest["tensorboard"]))
    if manifest.get("wandb"):
        add("wandb", "W&B runs", _wandb(manifest["wandb"]))
    add("charts", "Charts", _charts(directory, report.frontier is not None))
    add("configs", "Per-config detail", _details(report))
    add("guide", "How to read this report", GUIDE)
    name = final_path(directory).name
    html = page(f"replay report: {name}", subtitle(manifest), nav, sections)
    out = directory / INDEX
    with atomic_path(out) as tmp:
        tmp.write_text(html, encoding="utf-8")
    return out
