"""index.html: the report a person opens first, built only from the directory's own tables.

Top to bottom: the decision (the recommended config, the runner-up, what to avoid and why, the
overrides that launch it), findings, the summary table (sortable, filterable, hazards marked,
CSV download) with the frontier, what was replayed, charts, per-config detail, and comparison /
attribution tables when the directory holds them. One self-contained file: CSS, script and charts are inline.
"""

from __future__ import annotations

import base64
import json
from html import escape
from pathlib import Path
from typing import Any

import polars as pl

from replay_cli import schema as S
from replay_cli.advice.findings import PARAMS, findings
from replay_cli.advice.frontier import frontier, rated
from replay_cli.advice.recommendation import Rule, decision, recommend
from replay_cli.advice.top_groups import top_groups
from replay_cli.advice.words import fmt, param_text, push_text, share
from replay_cli.io.files import atomic_path
from replay_cli.maths.thresholds import EXPLOSION, FRAGILE_STD, SIGN_FLIP_CELL, TIME_ONLY_CELL
from replay_cli.report import facets
from replay_cli.report.compare import delta_table
from replay_cli.report.html_parts import cell, frontier_svg, page, png_image, table
from replay_cli.report.plots import CHARTS
from replay_cli.report.roles import STYLES, point_groups
from replay_cli.report.tensorboard import open_commands

INDEX = "index.html"
REPLAY_TABLES = ("rollouts", "groups", "steps", "summary", "findings", "recommendation")

SUMMARY_METRICS = (
    ("role", "role"),
    ("total_reward/mean", "reward"),
    ("push/minutes_pass", "solve-time push"),
    ("push/minutes_fail", "fail-time push"),
    ("push/resolve_vs_off", "resolve push vs off"),
    ("push/resolve_vs_off@long", "resolve push vs off, long"),
    ("signal/group_rate", "signal"),
    ("signal/group_rate_raw", "signal (off)"),
    ("signal/gained_rate", "signal gained"),
    ("signal/lost_rate", "signal lost"),
    ("signal/time_only_rate", "time-only"),
    ("signal/uncharged_only_rate", "uncharged-only"),
    ("inversion/introduced_group_rate", "inversions introduced"),
    ("inversion/group_rate", "inversions"),
    ("floor/tie_group_rate", "floor ties"),
    ("adv/abs_max", "max |adv|"),
    ("adv/explosion_trained_frac", "|adv|>3 trained"),
    ("adv/explosion_frac", "|adv|>3 unclipped"),
    ("adv/clip_frac", "clipped"),
    ("adv/fragile_std_frac", "fragile std"),
    ("adv/sign_flip_frac", "sign flips"),
    ("validation/total_reward/mean", "val. reward"),
)
SHARES = {
    "push/resolve_vs_off",
    "push/resolve_vs_off@long",
    *(m for m, _ in SUMMARY_METRICS if m.endswith(("_rate", "_frac", "_raw"))),
}
"""Summary columns shown as percentages (the cell keeps the exact value for sorting)."""


RULE = Rule()
"""The recommendation's default thresholds, which the summary table's marks follow."""


def hazard(metric: str, value: Any, row: dict[str, Any]) -> tuple[str, str]:
    """(css class, why) for a summary cell that crosses a threshold, else ('', '')."""
    if value is None or not isinstance(value, int | float):
        return "", ""
    trained = row.get("adv/explosion_trained_frac") or 0.0
    introduced = row.get("inversion/introduced_group_rate") or 0.0
    rules: dict[str, tuple[bool, str, str]] = {
        "inversion/introduced_group_rate": (
            value > 0,
            "hazard",
            "shaping puts resolved rollouts below unresolved ones",
        ),
        "inversion/group_rate": (
            value > 0,
            "hazard" if introduced > 0 else "warn",
            "some introduced by shaping" if introduced > 0 else "present with shaping off too",
        ),
        "floor/tie_group_rate": (value > 0, "hazard", "successes tie failures on the floor"),
        "adv/abs_max": (
            value > EXPLOSION,
            "hazard",
            f"trained |advantage| above {EXPLOSION:g} (after the clip)",
        ),
        "adv/explosion_trained_frac": (
            value > 0,
            "hazard",
            f"trained |advantage| above {EXPLOSION:g}: no clip bounds them",
        ),
        "adv/explosion_frac": (
            value > 0,
            "hazard" if trained > 0 else "warn",
            "not all bounded by the clip" if trained > 0 else "bounded by the clip",
        ),
        "adv/fragile_std_frac": (
            value > 0,
            "warn",
            f"rows normalised by a std below {FRAGILE_STD:g}",
        ),
        "push/minutes_fail": (
            -value > RULE.max_fail_faster,
            "warn",
            "teaches failures to give up sooner",
        ),
        "push/resolve_vs_off": (
            value < RULE.min_resolve_vs_off,
            "warn",
            f"below {RULE.min_resolve_vs_off:.0%} of shaping off",
        ),
        "push/resolve_vs_off@long": (
            value < RULE.min_resolve_vs_off_long,
            "warn",
            f"below {RULE.min_resolve_vs_off_long:.0%} of shaping off on long problems",
        ),
        "signal/lost_rate": (value > 0, "warn", "groups that lose their signal to shaping"),
        "signal/uncharged_only_rate": (value > 0, "warn", "signal only from uncharged rows"),
        "signal/time_only_rate": (
            value > TIME_ONLY_CELL,
            "warn",
            f"over {TIME_ONLY_CELL:.0%} of groups: time only",
        ),
        "adv/sign_flip_frac": (
            value > SIGN_FLIP_CELL,
            "warn",
            f"over {SIGN_FLIP_CELL:.0%} of rows flip sign vs shaping off",
        ),
    }
    hit, css, why = rules.get(metric, (False, "", ""))
    return (css, why) if hit else ("", "")


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
    facts = [
        ("rollouts", row.get("input/rows")),
        ("validation rollouts", row.get("input/validation_rows")),
        ("training steps", row.get("input/steps")),
        ("training groups", row.get("input/groups")),
        ("resolved share (training)", row.get("input/resolved_frac")),
        ("loss-masked share (training)", row.get("input/masked_frac")),
        ("groups all fail / mixed / all pass", None),
        ("run time p50 / p90 / p99 / max (s)", None),
        ("run times missing / NaN-inf / negative", None),
    ]
    shares = " / ".join(fmt(row.get(f"groups/{k}")) for k in (S.ALL_FAIL, S.MIXED, S.ALL_PASS))
    times = " / ".join(fmt(row.get(f"input/run_time_{k}")) for k in ("p50", "p90", "p99", "max"))
    bad = " / ".join(fmt(row.get(f"input/run_time_{k}")) for k in ("null", "invalid", "negative"))
    extra = {facts[6][0]: shares, facts[7][0]: times, facts[8][0]: bad}
    items = "".join(
        f"<dt>{escape(k)}</dt><dd>{escape(extra.get(k, fmt(v)))}</dd>" for k, v in facts
    )
    parts.append(f'<dl class="facts">{items}</dl>')
    for note in manifest.get("notes", []):
        parts.append(f'<p class="muted">note: {escape(str(note))}</p>')
    if manifest.get("resolved_derived_from_reward"):
        parts.append('<p class="muted">resolved was derived from reward &gt; 0.</p>')
    parts.append(
        f'<p class="muted">{summary.height} config(s); the run-time quantiles are over finite '
        "run times of the input (seconds).</p>"
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


def _summary_table(summary: pl.DataFrame, verdict: pl.DataFrame) -> str:
    varying = facets.varying(summary, exclude=())
    roles = dict(verdict.select(S.CONFIG_ID, "role").rows())
    headers = ["#", "config", *(short for _, short in SUMMARY_METRICS), *varying]
    rows, ids = [], []
    for n, row in enumerate(summary.iter_rows(named=True), start=1):
        cells = [cell(n), cell(row["label"], "text config")]
        for metric, _ in SUMMARY_METRICS:
            if metric == "role":
                role = roles.get(row[S.CONFIG_ID], "")
                cells.append(cell(role, f"text role-{role}"))
                continue
            value = row.get(metric)
            css, why = hazard(metric, value, row)
            shown = (
                share(value)
                if metric in SHARES
                else push_text(value)
                if metric.startswith("push/") and value is not None
                else None
            )
            cells.append(cell(value, css, why, shown))
        cells += [cell(row[p], "text", "", param_text(p, row[p])) for p in varying]
        rows.append(cells)
        ids.append(f"row-{row[S.CONFIG_ID]}")
    filters = []
    for i, p in enumerate(varying, start=2 + len(SUMMARY_METRICS)):
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
        "cross a hazard threshold, amber ones need a look (hover for why). Shares are "
        f'percentages. <a download="summary.csv" href="data:text/csv;base64,{csv}">Download '
        "the summary as CSV</a>.</p>"
    )
    body = table(
        headers, rows, css="sortable", row_ids=ids, text_headers=["config", "role", *varying]
    ).replace('<table class="sortable">', '<table class="sortable" id="summary-table">', 1)
    return bar + count + f'<div class="scroll">{body}</div>'


def _frontier(front: pl.DataFrame) -> str:
    points = point_groups(front, "harm", "useful")
    chart = frontier_svg(
        points,
        x="harm",
        y="useful",
        xlabel="harm: introduced inversions + trained |A| > 3",
        ylabel="useful push (solve faster)",
        title="Frontier: useful push against harm",
    )
    legend = "".join(
        f'<span class="key"><i style="background:{colour}"></i>{escape(name)}</span>'
        for name, colour in STYLES.values()
    )
    return (
        f'<div class="frontier">{chart}</div><p class="muted">One point per config (configs that '
        "coincide share a point), numbered as in the table; hover for the labels, click to open "
        "its detail. Useful push: -push/minutes_pass, how strongly the update teaches solving "
        "faster. Best is top left. "
        f"{legend}</p>"
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


def _decision(verdict: pl.DataFrame, summary: pl.DataFrame) -> str:
    """What to launch, the runner-up, what to avoid and why, and the overrides that launch it."""
    numbers = {cid: n for n, cid in enumerate(summary[S.CONFIG_ID], start=1)}
    d = decision(verdict)

    def name(r: dict[str, Any]) -> str:
        return (
            f'<a href="#cfg-{escape(r[S.CONFIG_ID])}">#{numbers[r[S.CONFIG_ID]]} '
            f"{escape(r['label'])}</a>"
        )

    parts = []
    rec, runner = d["recommended"], d["runner_up"]
    if d["unrated"]:
        return f'<p class="verdict">No recommendation: this report was {escape(d["unrated"])}.</p>'
    if rec is None:
        misses = "".join(
            f"<li>{name(m)}: fails {escape(', '.join(m['failed']))} — {escape(m['reasons'])}</li>"
            for m in d["near_misses"]
        )
        parts.append(
            '<p class="verdict avoid">No config passes the recommendation rule. The nearest '
            f"misses and what each fails:</p><ul>{misses}</ul>"
        )
    else:
        keep = rec["reasons"].startswith("shaping off")
        what = "Keep shaping off" if keep else "Recommended"
        parts.append(
            f'<p class="verdict recommended"><b>{what}:</b> {name(rec)}</p>'
            f"<p>{escape(rec['reasons'])}.</p>"
            '<p class="muted">Launch it with these trainer overrides:</p>'
            f'<pre class="overrides"><code>{escape(rec["overrides"])}</code></pre>'
        )
        if runner is not None:
            parts.append(
                f'<p class="verdict"><b>Runner-up:</b> {name(runner)} — '
                f"{escape(runner['reasons'])}.</p>"
            )
    if d["avoid"]:
        items = "".join(f"<li>{name(r)}: {escape(r['reasons'])}</li>" for r in d["avoid"])
        parts.append(
            f"<details><summary>Avoid: {len(d['avoid'])} config(s) and why</summary>"
            f"<ul>{items}</ul></details>"
        )
    parts.append(
        '<p class="muted">The rule (docs/report.md): no inversion that shaping introduces, no '
        "|advantage| above 3 left after the clip, resolve push at least 95% of shaping off's "
        "overall and on long problems, no fail-faster push, little signal from uncharged rows; "
        "among those, the strongest solve-faster push wins, ties to the smaller λ.</p>"
    )
    return "".join(parts)


def _charts(directory: Path) -> str:
    charts = sorted((directory / "charts").glob("*.png"))
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
            f"<dt>{escape(p)}</dt><dd>{escape(fmt(row[p]))}</dd>" for p in PARAMS if p in row
        )
        values = [[f'<td class="text">{escape(m)}</td>', row[m]] for m in metrics]
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
    manifest_path = directory / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    summary = _read(directory, "summary")
    groups_path = directory / "groups.parquet"
    groups = pl.scan_parquet(groups_path) if groups_path.exists() else None
    sections, nav = [], []

    def add(anchor: str, title: str, body: str) -> None:
        sections.append(_section(anchor, title, body))
        nav.append((anchor, title))

    if summary is not None:
        found = _read(directory, "findings")
        if found is None:
            found = findings(summary, groups if groups is not None else pl.LazyFrame(), top)
        verdict = _read(directory, "recommendation")
        if verdict is None:
            verdict = recommend(summary)
        add("decision", "Decision", _decision(verdict, summary))
        add("findings", "Findings", _findings(found))
        add(
            "summary",
            "Summary",
            _summary_table(summary, verdict)
            + (
                _frontier(frontier(summary, verdict))
                if rated(summary)
                else '<p class="muted">No frontier: the report predates its columns.</p>'
            ),
        )
        add("replayed", "What was replayed", _inputs(manifest, summary))
        if manifest.get("tensorboard"):
            add("tensorboard", "TensorBoard runs", _tensorboard(manifest["tensorboard"]))
        add("charts", "Charts", _charts(directory))
        add("configs", "Per-config detail", _details(summary, groups, found, top))
    known = {
        "comparison": "Comparison across configs and reports",
        "internal_comparison": "Replayed vs internal run",
        "attribution": "nemo-rl vs internal, one item at a time",
    }
    others = sorted(p.stem for p in directory.glob("*.parquet") if p.stem not in REPLAY_TABLES)
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
