"""index.html: the report a person opens first, built only from the directory's own tables.

Top to bottom: the decision (the recommended config, the runner-up, what to avoid and why, the
overrides that launch it), findings, the summary table (sortable, filterable, hazards marked,
CSV download) with the frontier, what was replayed, charts, per-config detail, and comparison /
attribution tables when the directory holds them. One self-contained file: CSS, script and charts are inline.
"""

from __future__ import annotations

import base64
from html import escape
from pathlib import Path
from typing import Any

import polars as pl

from replay_cli import catalogue as C
from replay_cli import schema as S
from replay_cli.advice.findings import PARAMS
from replay_cli.advice.frontier import frontier, rated
from replay_cli.advice.recommendation import Rule
from replay_cli.advice.verdict import Verdict, confidence_text, keep_off_text
from replay_cli.advice.words import param_text
from replay_cli.io.files import atomic_path
from replay_cli.maths.top_groups import top_groups
from replay_cli.report import facets
from replay_cli.report.compare import delta_table
from replay_cli.report.html_parts import cell, frontier_svg, launch_block, page, png_image, table
from replay_cli.report.plots import CHARTS
from replay_cli.report.read import read_manifest, verdict_of
from replay_cli.report.roles import FRONTIER_Y, STYLES, point_groups
from replay_cli.report.tensorboard import open_commands

INDEX = "index.html"

SUMMARY_METRICS = (
    C.F_RESOLVE_VS_OFF_LONG,
    C.F_RESOLVE_VS_OFF_LOW_LONG,
    C.F_RESOLVE_VS_OFF,
    C.F_RESOLVE_VS_OFF_LOW,
    C.F_SOLVE_VS_OFF,
    C.F_FAIL_VS_OFF,
    C.RESOLVE_VS_OFF,
    C.SOLVE_VS_OFF,
    C.TIME_ONLY_SHARE,
    C.INTRODUCED,
    C.INVERSIONS,
    C.FLOOR_TIES,
    C.ABS_MAX,
    C.EXPLOSION_TRAINED,
    C.EXPLOSION_UNCLIPPED,
    C.CLIP_FRAC,
    C.FRAGILE_STD,
    C.SIGN_FLIPS,
    C.SIGNAL,
    C.TIME_ONLY_GROUPS,
    C.UNCHARGED_ONLY,
    C.LOST,
    C.SOLVE_PUSH,
    C.RESOLVE_PUSH_VS_OFF,
    C.TOTAL_REWARD,
    C.VALIDATION_REWARD,
)
"""The summary table's metric columns after the role, in the order a user decides in: what the
rule reads, what disqualifies, then context (labels, units and hazards from the catalogue)."""


def _read(directory: Path, name: str) -> pl.DataFrame | None:
    path = directory / f"{name}.parquet"
    return pl.read_parquet(path) if path.exists() else None


def _section(anchor: str, title: str, body: str) -> str:
    return f'<section id="{anchor}"><h2>{escape(title)}</h2>{body}</section>'


def _inputs(manifest: dict[str, Any], summary: pl.DataFrame) -> str:
    """What was replayed: files, sizes, rows, steps, groups, outcome shares, run times."""
    files = manifest.get("inputs", [])
    file_rows = [
        [f'<td class="text">{escape(str(f["path"]))}</td>', f["size"], f["sha256"][:12]]
        for f in files
    ]
    files = table(["input file", "bytes", "sha256"], file_rows)
    parts = [f'<div class="scroll">{files}</div>'] if file_rows else []
    off = summary.filter(~pl.col("enabled")) if "enabled" in summary.columns else summary
    row = (off if off.height else summary).row(0, named=True)

    def shown(name: str) -> str:
        return C.show(name, row.get(name))

    facts = [
        ("rollouts", shown(C.ROWS)),
        ("validation rollouts", shown(C.VALIDATION_ROWS)),
        ("training steps", shown(C.STEPS)),
        ("training groups", shown(C.GROUPS)),
        ("resolved share (training)", shown(C.RESOLVED_FRAC)),
        ("loss-masked share (training)", shown(C.MASKED_FRAC)),
        ("groups all fail / mixed / all pass", None),
        ("run time p50 / p90 / p99 / max", None),
        ("run times missing / NaN-inf / negative", None),
    ]
    shares = " / ".join(shown(name) for name in C.GROUP_SHARES)
    times = " / ".join(shown(name) for name in C.RUN_TIMES)
    bad = " / ".join(shown(name) for name in C.BAD_RUN_TIMES)
    extra = {facts[6][0]: shares, facts[7][0]: times, facts[8][0]: bad}
    items = "".join(
        f"<dt>{escape(k)}</dt><dd>{escape(extra.get(k, v or ''))}</dd>" for k, v in facts
    )
    parts.append(f'<dl class="facts">{items}</dl>')
    for note in manifest.get("notes", []):
        parts.append(f'<p class="muted">note: {escape(str(note))}</p>')
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


def _summary_table(summary: pl.DataFrame, verdict: pl.DataFrame, rule: Rule) -> str:
    varying = facets.varying(summary, exclude=())
    roles = dict(verdict.select(S.CONFIG_ID, "role").rows())
    won = (
        dict(verdict.select(S.CONFIG_ID, "won_share").rows())
        if "won_share" in verdict.columns
        else {}
    )
    metrics = [m for m in SUMMARY_METRICS if m in summary.columns]
    headers = ["#", "config", "role", "won", *(C.metric(m).label for m in metrics), *varying]
    rows, ids = [], []
    for n, row in enumerate(summary.iter_rows(named=True), start=1):
        role = roles.get(row[S.CONFIG_ID], "")
        share = won.get(row[S.CONFIG_ID])
        cells = [
            cell(n),
            cell(row["label"], "text config"),
            cell(role, f"text role-{role}"),
            cell(
                share,
                "",
                "share of bootstrap resamples in which the rule picks it",
                C.show_value("share", share),
            ),
        ]
        for metric in metrics:
            value = row.get(metric)
            css, why = C.hazard(metric, value, row, rule)
            cells.append(
                cell(value, css, why or C.metric(metric).description, C.show(metric, value))
            )
        cells += [cell(row[p], "text", "", param_text(p, row[p])) for p in varying]
        rows.append(cells)
        ids.append(f"row-{row[S.CONFIG_ID]}")
    filters = []
    for i, p in enumerate(varying, start=4 + len(metrics)):
        values = sorted({param_text(p, v) for v in summary[p].to_list()})
        options = "".join(f'<option value="{escape(v)}">{escape(v)}</option>' for v in values)
        filters.append(
            f'<label>{escape(p)} <select data-filter="{i}"><option value="*">all</option>'
            f"{options}</select></label>"
        )
    bar = f'<div class="filters">{"".join(filters)}</div>' if filters else ""
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
    body = table(
        headers, rows, css="sortable", row_ids=ids, text_headers=["config", "role", *varying]
    ).replace('<table class="sortable">', '<table class="sortable" id="summary-table">', 1)
    return bar + count + f'<div class="scroll">{body}</div>'


def _frontier(front: pl.DataFrame, rule: Rule) -> str:
    points = point_groups(front, "kept", "gain")
    hollow = frozenset(front.filter(pl.col("other").fill_null(False))[S.CONFIG_ID].to_list())
    line = min(rule.min_resolve_vs_off, rule.min_resolve_vs_off_long)

    def shown(axis: str, value: float) -> str:
        # y is `gain` (minutes sooner, up); written as solve Δ, negative = sooner, as everywhere.
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
        "sooner). The dashed line is the "
        "rule's "
        f"{C.show_value('ratio', line)}; a hollow point is avoided for another criterion "
        f"(an inversion, an explosion, ...) wherever it sits. Best is top right. {legend}</p>"
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


def _decision(verdict: Verdict, summary: pl.DataFrame) -> str:
    """What to launch (or to keep shaping off, with the best trade), how sure the pick is, the
    runner-up, what to avoid and why, and the overrides and YAML that launch it."""
    numbers = {cid: n for n, cid in enumerate(summary[S.CONFIG_ID], start=1)}
    d = verdict.decision

    def name(r: dict[str, Any]) -> str:
        return (
            f'<a href="#cfg-{escape(r[S.CONFIG_ID])}">#{numbers[r[S.CONFIG_ID]]} '
            f"{escape(r['label'])}</a>"
        )

    if d.unrated:
        return f'<p class="verdict">No recommendation: {escape(d.unrated)}.</p>'
    parts = []
    rec, runner = d.recommended, d.runner_up
    if rec is None:
        misses = "".join(
            f"<li>{name(m)}: fails {escape(', '.join(m['failed']))} — {escape(m['reasons'])}</li>"
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
        if d.keep_off:
            parts.append(f"<p>{escape(keep_off_text(d, verdict.rule))}.</p>")
        else:
            parts.append(f"<p>{escape(rec['reasons'])}.</p>")
        parts.append(f'<p class="muted">{escape(confidence_text(rec))}</p>')
        parts.append('<p class="muted">Launch it with these trainer overrides:</p>')
        parts.append(launch_block(rec["overrides"], "overrides"))
        parts.append('<p class="muted">or this block of the trainer\'s config file:</p>')
        parts.append(launch_block(rec["yaml"], "YAML block"))
        if runner is not None:
            parts.append(
                f'<p class="verdict"><b>Runner-up:</b> {name(runner)} — '
                f"{escape(runner['reasons'])}.</p>"
            )
    trade = d.best_trade if d.keep_off or rec is None else None
    if trade is not None and trade.get("trade"):
        parts.append(
            f'<p class="verdict"><b>Best trade:</b> {name(trade)} — {escape(trade["trade"])}. '
            "Launch it knowingly with:</p>"
        )
        parts.append(launch_block(trade["overrides"], "overrides of the trade"))
    if d.avoid:
        items = "".join(f"<li>{name(r)}: {escape(r['reasons'])}</li>" for r in d.avoid)
        parts.append(
            f"<details><summary>Avoid: {len(d.avoid)} config(s) and why</summary>"
            f"<ul>{items}</ul></details>"
        )
    parts.append(
        f'<p class="muted">The rule (docs/report.md): {escape(verdict.rule.summary_text())}.</p>'
    )
    return "".join(parts)


FORECAST_COLUMNS = (
    C.F_RESOLVE_LONG,
    C.F_RESOLVE_VS_OFF_LONG,
    C.F_RESOLVE_VS_OFF_LOW_LONG,
    C.at_budget(C.F_RESOLVE_VS_OFF_LOW_LONG, "half"),
    C.at_budget(C.F_RESOLVE_VS_OFF_LOW_LONG, "twice"),
    C.F_FAIL_LONG,
    C.F_SOLVE_VS_OFF,
    C.F_GIVE_UP_VS_OFF_LONG,
)
"""The forecast's columns the page shows per config (labels and units from the catalogue)."""


def _forecast(
    summary: pl.DataFrame, verdict: Verdict, manifest: dict[str, Any], directory: Path
) -> str:
    """What T steps of training under each config do, beside shaping off: a table per config
    at the last step, whether the verdict holds at half and twice the budget, and the chart."""
    settings = manifest.get("forecast") or {}
    row = summary.row(0, named=True)
    steps = int(row.get(C.FORECAST_STEPS) or 0)
    start, off = row.get(C.F_RESOLVE_START_LONG), row.get(C.F_RESOLVE_OFF_LONG)
    roles = verdict.recommendation
    checked = roles.filter(pl.col("role") == "recommended")["budget_check"].to_list()
    sampled = int(row.get(C.FORECAST_PROBLEMS) or 0)
    total = int(row.get(C.FORECAST_PROBLEMS_TOTAL) or 0)
    intro = (
        f"<p>The outcome the rule reads: {steps} simulated training steps (the horizon T, "
        f"--steps) of a fixed-size step, {settings.get('seeds', '?')} seeds, each on "
        f"{sampled:,} of the input's {total:,} problems (a sample stratified by length bucket); "
        "each level keeps its logged success rate, effort moves. Intervals: a paired bootstrap "
        "over the problems; the chart's bands are the seeds' range "
        f'(docs/report.md, "The forecast"). Shaping off takes long problems from '
        f"{escape(C.show(C.F_RESOLVE_START_LONG, start))} to "
        f"{escape(C.show(C.F_RESOLVE_OFF_LONG, off))} resolved.</p>"
    )
    if checked and checked[0]:
        intro += f'<p class="muted">Budget: {escape(checked[0])}.</p>'
    columns = [c for c in FORECAST_COLUMNS if c in summary.columns]
    rows = []
    for n, r in enumerate(summary.iter_rows(named=True), start=1):
        cells = [cell(n), cell(r["label"], "text config")]
        for name in columns:
            css, why = C.hazard(name, r.get(name), r, verdict.rule)
            cells.append(
                cell(r.get(name), css, why or C.metric(name).description, C.show(name, r.get(name)))
            )
        rows.append(cells)
    headers = ["#", "config", *(C.metric(c).label for c in columns)]
    body = table(headers, rows, css="sortable", text_headers=["config"])
    chart = directory / "charts" / "forecast.png"
    picture = png_image(chart, "forecast") if chart.exists() else ""
    return intro + f'<div class="scroll">{body}</div>' + picture


def _charts(directory: Path) -> str:
    # The forecast's chart is shown in its own section, not twice.
    charts = sorted(p for p in (directory / "charts").glob("*.png") if p.stem != "forecast")
    if not charts:
        return (
            '<p class="muted">No charts were drawn for this report: run '
            f"<code>replay-cli plot {escape(str(final_path(directory)))}</code> to draw them.</p>"
        )
    order = list(CHARTS)
    charts.sort(key=lambda p: (order.index(p.stem) if p.stem in order else len(order), p.stem))
    figures = [
        f"<figure><figcaption><b>{escape(p.name)}</b> — "
        f"{escape(CHARTS[p.stem].caption if p.stem in CHARTS else '')}</figcaption>{png_image(p, p.stem)}</figure>"
        for p in charts
    ]
    return f'<div class="charts">{"".join(figures)}</div>'


def _details(
    summary: pl.DataFrame,
    groups: pl.LazyFrame | None,
    found: pl.DataFrame,
    worst: pl.DataFrame | None = None,
) -> str:
    """Each config folded: its findings, parameters, metrics and the groups of its largest
    unclipped |advantage| (`worst`: `top_groups`, computed from `groups` when not given)."""
    top: dict[str, pl.DataFrame] = {}
    has_top = groups is not None and S.G_MAX_ABS_ADVANTAGE_UNCLIPPED in groups.collect_schema()
    if worst is None and has_top:
        worst = top_groups(groups)
    if worst is not None:
        top = {k[0]: v for k, v in worst.partition_by(S.CONFIG_ID, as_dict=True).items()}
    metrics = [c for c in summary.columns if c not in (*PARAMS, S.CONFIG_ID, "label")]
    out = []
    for n, row in enumerate(summary.iter_rows(named=True), start=1):
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
                f'<details id="cfg-{escape(cid)}"><summary>#{n} {escape(row["label"])} '
                f'<span class="muted">({escape(cid)})</span></summary>'
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


def _frame_table(frame: pl.DataFrame, limit: int = 500) -> str:
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


def _comparison(frame: pl.DataFrame) -> str:
    """The headline deltas as one row per config, then the long table folded away."""
    wide = delta_table(frame)
    return (
        '<p class="muted">Change of each headline metric from the reference config.</p>'
        + _frame_table(wide)
        + "<details><summary>Every metric, value and reference</summary>"
        + _frame_table(frame)
        + "</details>"
    )


def final_path(directory: Path) -> Path:
    """The report's own path when `directory` is its staging directory (`.name.tmp-xxxx`)."""
    name = directory.name
    if name.startswith(".") and ".tmp-" in name:  # rendered in the staged directory of a report
        return directory.parent / name[1:].rsplit(".tmp-", 1)[0]
    return directory


def render_index(directory: str | Path, top: pl.DataFrame | None = None) -> Path:
    """Write directory/index.html from the tables found there; returns its path. `top` is
    `top_groups` of the groups table when the caller has it (the replay keeps it)."""
    directory = Path(directory)
    manifest = read_manifest(directory)
    summary = _read(directory, "summary")
    groups_path = directory / "groups.parquet"
    groups = pl.scan_parquet(groups_path) if groups_path.exists() else None
    sections, nav = [], []

    def add(anchor: str, title: str, body: str) -> None:
        sections.append(_section(anchor, title, body))
        nav.append((anchor, title))

    if summary is not None:
        verdict = verdict_of(directory, summary)
        found, table_of_roles = verdict.findings, verdict.recommendation
        add("decision", "Decision", _decision(verdict, summary))
        ahead = _read(directory, "forecast")
        if ahead is not None and C.FORECAST_STEPS in summary.columns:
            add("forecast", "Forecast", _forecast(summary, verdict, manifest, directory))
        add("findings", "Findings", _findings(found))
        add(
            "summary",
            "Summary",
            _summary_table(summary, table_of_roles, verdict.rule)
            + (
                _frontier(frontier(summary, table_of_roles), verdict.rule)
                if rated(summary)
                else '<p class="muted">No frontier: the report predates its columns.</p>'
            ),
        )
        add("replayed", "What was replayed", _inputs(manifest, summary))
        if manifest.get("tensorboard"):
            add("tensorboard", "TensorBoard runs", _tensorboard(manifest["tensorboard"]))
        if manifest.get("wandb"):
            add("wandb", "W&B runs", _wandb(manifest["wandb"]))
        add("charts", "Charts", _charts(directory))
        add("configs", "Per-config detail", _details(summary, groups, found, top))
    known = {
        "comparison": "Comparison across configs and reports",
        "internal_comparison": "Replayed vs internal run",
        "attribution": "nemo-rl vs internal, one item at a time",
    }
    others = sorted(p.stem for p in directory.glob("*.parquet") if p.stem not in S.REPORT_TABLES)
    for name in sorted(
        others, key=lambda n: (n not in known, list(known).index(n) if n in known else 0)
    ):
        frame = _read(directory, name)
        if frame is not None:
            body = _comparison(frame) if name == "comparison" else _frame_table(frame)
            add(name, known.get(name, f"{name}.parquet"), body)
    if summary is None and (directory / "charts").is_dir():
        add("charts", "Charts", _charts(directory))
    command = " ".join(map(str, manifest.get("command_line", [])))
    subtitle = (
        f"{manifest.get('created_utc', '')} · replay_cli {manifest.get('version', '')} · {command}"
    )
    name = final_path(directory).name
    html = page(f"replay report: {name}", subtitle.strip(" ·"), nav, sections)
    out = directory / INDEX
    with atomic_path(out) as tmp:
        tmp.write_text(html, encoding="utf-8")
    return out
