"""What the CLI prints: the headline table after a run, input summaries and the demo guide."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import polars as pl
import typer
from rich.console import Console
from rich.progress import Progress, TaskID
from rich.table import Table

from replay_cli import catalogue as C
from replay_cli import schema as S
from replay_cli.advice.verdict import pilot_lines
from replay_cli.advice.words import sooner_than_off
from replay_cli.analysis.verify import DESCRIBED, rewards_match
from replay_cli.progress import Progress as PhaseProgress
from replay_cli.report import layouts as L
from replay_cli.report.compare import delta_table, internal_summary
from replay_cli.report.model import Report
from replay_cli.report.tensorboard import open_commands


def terminal_width() -> int:
    """The terminal's width (COLUMNS or the terminal itself; 160 in a pipe or file)."""
    return shutil.get_terminal_size((160, 24)).columns


def _console() -> Console:
    return Console(soft_wrap=False, width=terminal_width())


LABEL_MAX = 44
"""Config labels longer than this (or than a third of the terminal) are cut with an ellipsis in
the terminal; the page shows them whole."""


def label_width(labels: Sequence[str], width: int) -> int:
    """The config column's width: the longest label, at most LABEL_MAX and a third of the
    terminal (at least 16)."""
    return min(max((len(x) for x in labels), default=6), max(16, min(LABEL_MAX, width // 3)))


def fit_columns(
    labels: Sequence[str],
    cells: dict[str, list[str]],
    width: int,
    header: Callable[[str], str] = lambda name: C.metric(name).brief,
    other: int = len("recommended") + 3,
    kept: Sequence[str] = (),
) -> list[str]:
    """The metric columns that fit beside the config column and `other` characters of other
    columns (the role's) in `width` characters, one line per row, in `cells`' order: `kept`
    (those present) are taken first, then the others in order; the rest are dropped."""
    label = label_width(labels, width)
    used = 4 + label + 3 + other  # borders, config, the other columns
    first = [name for name in kept if name in cells]
    chosen = set()
    for name in first + [name for name in cells if name not in first]:
        need = max(len(header(name)), *(len(v) for v in cells[name])) + 3
        if used + need > width:
            break
        chosen.add(name)
        used += need
    return [name for name in cells if name in chosen]


def print_summary(report: Report, out: Path) -> None:
    """One line per config: its role, then the measures the rule reads and what disqualifies,
    as many columns as the terminal's width holds (never wrapping a row)."""
    roles = dict(report.verdict.recommendation.select(S.CONFIG_ID, C.ROLE).rows())
    summary = report.result.summary
    names = [m for m in L.TERMINAL if m in summary.columns]
    cells = {m: [C.show(m, v) for v in summary[m].to_list()] for m in names}
    width = terminal_width()
    shown = fit_columns(summary["label"].to_list(), cells, width, kept=L.TERMINAL_KEPT)
    table = Table(title=f"replay report: {out}", title_justify="left")
    label = label_width(summary["label"].to_list(), width)
    table.add_column("config", no_wrap=True, overflow="ellipsis", max_width=label)
    table.add_column(C.ROLE, no_wrap=True)
    for name in shown:
        table.add_column(C.metric(name).brief, justify="right", no_wrap=True)
    for i, (cid, label) in enumerate(summary.select(S.CONFIG_ID, "label").rows()):
        table.add_row(label, roles.get(cid, ""), *(cells[m][i] for m in shown))
    _console().print(table)
    if len(shown) < len(names):
        dropped = ", ".join(C.metric(m).brief for m in names if m not in shown)
        typer.echo(f"(narrow terminal: {dropped} left out; every column is in index.html)")


def print_decision(report: Report) -> None:
    """The verdict first: what to launch (or why shaping off is kept, and the best trade), how
    sure the pick is, the overrides, the runner-up, what to avoid."""
    if report.verdict.recommendation.is_empty():
        return
    d = report.verdict.decision
    rec, runner = d.recommended, d.runner_up
    if d.unrated:
        typer.echo(f"No recommendation: {d.unrated}.")
    elif rec is None:
        typer.echo(
            "No config passes the recommendation rule: keep shaping off (every config is measured "
            "against it). Nearest misses:"
        )
        for m in d.near_misses:
            typer.echo(f"  {m['label']}: {m[C.REASONS]}")
        typer.echo(f"  bar: {report.bar_text}")
    else:
        typer.echo(f"{'Keep shaping off' if d.keep_off else 'Recommended'}: {rec['label']}")
        typer.echo(f"  why: {report.why}")
        for severity, text in report.pick_warnings:
            typer.echo(f"  {severity}: {text}")
        typer.echo(f"  bar: {report.bar_text}")
        typer.echo(f"  confidence: {report.confidence}")
        typer.echo(f"  launch: {rec[C.OVERRIDES]}")
    trade = report.trade
    if trade is not None:
        typer.echo(f"Best trade: {trade[C.TRADE]}")
        typer.echo(f"  launch it knowingly: {trade[C.OVERRIDES]}")
    if runner is not None:
        gain = sooner_than_off(runner.get(C.F_SOLVE_VS_OFF) or 0.0)
        steps = f"{runner.get(C.FORECAST_STEPS) or 0:.0f}"
        typer.echo(f"Runner-up: {runner['label']} (successes end {gain} after {steps} steps)")
    if d.avoid:
        typer.echo(
            f"Avoid: {len(d.avoid)} config(s); the reasons are in index.html and "
            "recommendation.parquet."
        )


FINDINGS_SHOWN = 4
"""Headline hazards and warnings the terminal prints (index.html shows every finding)."""


def print_forecast(report: Report) -> None:
    """The forecast in a few lines: shaping off's trajectory on long problems, where the pick (or
    the best trade) ends after T steps, and whether the verdict holds at other budgets."""
    summary, verdict = report.result.summary, report.verdict
    if report.result.forecast is None or C.FORECAST_STEPS not in summary.columns:
        typer.echo("No forecast (--no-forecast): the verdict did not judge resolve rate.")
        return
    row = summary.row(0, named=True)
    steps = int(row[C.FORECAST_STEPS] or 0)
    sample = (
        f"{int(row.get(C.FORECAST_PROBLEMS) or 0):,} of "
        f"{int(row.get(C.FORECAST_PROBLEMS_TOTAL) or 0):,} problems per seed"
    )
    budget = row.get(C.FORECAST_BUDGET)
    size = "" if budget is None else f", a step budget of KL {float(budget):g} per step"
    typer.echo(f"Forecast (horizon T = {steps} steps{size}, {sample}):")
    # The twin of the config the decision names, never another row's; too little data is said
    # once, in the decision ("not enough data to decide").
    typer.echo(f"  {report.off_course}.")
    for label, name in (("Reading", C.FORECAST_FIT), ("Backtest", C.FORECAST_BACKTEST)):
        if row.get(name):
            typer.echo(f"  {label}: {row[name]}.")
    for line in pilot_lines(report.result.pilots):
        typer.echo(f"  {line}.")
    # Where the pick (or the best trade) ends is in its reason above: not said twice.
    checked = verdict.recommendation.filter(pl.col(C.ROLE) == "recommended")[C.BUDGET_CHECK]
    if checked.len() and checked[0]:
        typer.echo(f"  Checks: {checked[0]}.")


def print_findings(found: pl.DataFrame | None, out: Path | None = None) -> None:
    """The first headline hazards and warnings in the order a user decides in, one line each
    (the terminal wraps them), and where the rest are; the verdict is `print_decision`'s."""
    if found is None or found.is_empty():
        return
    head = found.filter(pl.col("headline") & pl.col("severity").is_in(["hazard", "warning"]))
    head = head.head(FINDINGS_SHOWN)
    if not head.is_empty():
        typer.echo("Findings:")
    for row in head.iter_rows(named=True):
        typer.echo(f"  [{row['severity']}] {row['text']}")
    more = found.height - head.height
    if more:
        where = f"{out}/findings.parquet" if out is not None else "findings.parquet"
        typer.echo(f"  ... and {more} more findings in index.html and {where}")


def print_report(
    report: Report, out: Path, tensorboard: Path | None = None, wandb: Path | None = None
) -> None:
    """After a replay: the page to open, the decision, the summary table, then the findings (and
    how to open the TensorBoard and W&B runs, when written)."""
    typer.echo(f"Report: {Path(out) / 'index.html'}")
    r = report.result
    for prefix, lines in (("Warning", r.notes), ("Note", r.input_notes), ("Note", r.computed_by)):
        for line in lines:
            typer.echo(f"{prefix}: {line}", err=True)
    print_decision(report)
    print_forecast(report)
    print_summary(report, out)
    print_findings(report.verdict.findings, out)
    if tensorboard is not None:
        print_tensorboard(tensorboard)
    if wandb is not None:
        print_wandb(wandb)


def print_tensorboard(out: Path) -> None:
    """The commands that open the written runs in TensorBoard and upload them to W&B."""
    typer.echo(f"TensorBoard runs: {out}")
    for command in open_commands(out):
        typer.echo(f"  {command}")


def print_wandb(out: Path) -> None:
    """The command that uploads the written offline W&B runs."""
    from replay_cli.report.wandb_runs import sync_command

    typer.echo(f"W&B runs (offline): {out}")
    typer.echo(f"  {sync_command(out)}")


def print_inspect(
    stats: dict[str, object], notes: Sequence[str], hazards: Sequence[str] = ()
) -> None:
    """An input's description (api.inspect_input) in the units of every other surface (shares
    in %, run times in minutes), its loading notes, and the values the trainer would coerce:
    an input with any loads, but is not called valid for shaping."""
    from replay_cli.analysis.describe import shown

    table = Table(title="rollout input", show_header=False, title_justify="left")
    for key, value in shown(stats).items():
        table.add_row(key, value)
    console = _console()
    console.print(table)
    for note in notes:
        console.print(f"note: {note}")
    for hazard in hazards:
        console.print(hazard)
    if any(h.startswith("hazard") for h in hazards):
        console.print(
            "NOT VALID FOR SHAPING: the input loads, but the values above would be read as the "
            "trainer reads them (fix them, or see `--strict`)."
        )
    else:
        console.print("OK: the input is valid.")


def demo_guide(out: Path) -> str:
    """Where to look after `replay-cli demo`: the page, the charts and every table it wrote (read
    from `out`, the summary first)."""
    names = sorted((p.stem for p in Path(out).glob("*.parquet")), key=lambda n: (n != "summary", n))
    tables = ", ".join(names)
    return (
        f"\nOpen {out}/index.html first: the decision, findings, the sortable summary, the frontier "
        "and every chart.\n"
        f"Charts: {out}/charts/*.png. Tables: {out}/*.parquet ({tables}; summary: one row per "
        "config)."
    )


@contextmanager
def progress(description: str) -> Iterator[Callable[[int, int], None]]:
    """A progress callback: a bar on a terminal, silent when stderr is a pipe or file."""
    if not sys.stderr.isatty():
        yield lambda done, total: None
        return
    with Progress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(description, total=None)

        def tick(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield tick


@contextmanager
def phases(description: str) -> Iterator[PhaseProgress]:
    """A phase-aware progress callback (replay_cli.progress): one bar line per phase, each
    finished one ticked full, so the bar never sits at 100% while charts or TensorBoard are
    written; silent when stderr is a pipe or file."""
    if not sys.stderr.isatty():
        yield lambda name, done, total: None
        return
    with Progress(console=Console(stderr=True), transient=True) as bar:
        tasks: dict[str, TaskID] = {}

        def report(name: str, done: int, total: int | None) -> None:
            if name not in tasks:
                for task in tasks.values():  # the earlier phases are over
                    size = bar.tasks[task].total or 1
                    bar.update(task, total=size, completed=size)
                tasks[name] = bar.add_task(f"{description}: {name}", total=total)
            bar.update(tasks[name], completed=done, total=total)

        yield report


def print_deltas(deltas: pl.DataFrame) -> None:
    """Headline metrics of every config as changes from the reference config, in the units the
    sweep's table uses (shares as percentage points, minutes as minutes), as many columns as
    the terminal holds (all of them in comparison.parquet)."""
    wide = delta_table(deltas)
    metrics = [c for c in wide.columns if c not in ("report", "label")]
    several = wide["report"].n_unique() > 1
    labels = [
        f"{Path(r).name}: {label}" if several else label
        for r, label in wide.select("report", "label").rows()
    ]
    cells = {m: [C.show_change(C.metric(m).unit, v) for v in wide[m].to_list()] for m in metrics}
    width = terminal_width()
    shown = fit_columns(labels, cells, width, other=0)
    title = "change from the reference config (--reference; shares in points, times in minutes)"
    table = Table(title=title, title_justify="left")
    label = label_width(labels, width)
    table.add_column("config", no_wrap=True, overflow="ellipsis", max_width=label)
    for metric in shown:
        table.add_column(C.metric(metric).brief, justify="right", no_wrap=True)
    for i, label in enumerate(labels):
        table.add_row(label, *(cells[m][i] for m in shown))
    _console().print(table)
    if len(shown) < len(metrics):
        dropped = ", ".join(C.metric(m).brief for m in metrics[len(shown) :])
        typer.echo(f"(narrow terminal: {dropped} left out; every column is in comparison.parquet)")


def print_internal(joined: pl.DataFrame) -> None:
    """Per metric: steps compared, both means and the largest |replayed - internal|, in the
    metric's units."""
    stats = internal_summary(joined)
    table = Table(title="replayed vs internal run", title_justify="left")
    for column in stats.columns:
        table.add_column(column, justify="left" if column == "metric" else "right")
    for row in stats.iter_rows(named=True):
        metric = row["metric"]
        means = [C.show(metric, row[k]) for k in ("replayed mean", "internal mean")]
        change = C.show_change(C.metric(metric).unit, row["max |delta|"]).removeprefix("+")
        table.add_row(metric, f"{row['steps']:,}", *means, change)
    _console().print(table)


def print_attribution(frame: pl.DataFrame) -> None:
    """How each internal item changes the attributed metrics relative to nemo-rl: the reference
    row's values, then each item's changes, in the catalogue's labels and units."""
    names = [c.removeprefix("delta ") for c in frame.columns if c.startswith("delta ")]
    title = "internal vs nemo-rl, one item at a time (change from nemo-rl)"
    table = Table(title=title, title_justify="left")
    table.add_column("step", no_wrap=True)
    table.add_column("what")
    for name in names:
        table.add_column(C.metric(name).brief, justify="right")
    for i, row in enumerate(frame.iter_rows(named=True)):
        if i == 0:  # the reference row: absolute values
            cells = [C.show(name, row[name]) for name in names]
        else:
            cells = [C.show_change(C.metric(n).unit, row[f"delta {n}"]) for n in names]
        table.add_row(row["step"], row["description"] + (" (values)" if i == 0 else ""), *cells)
    _console().print(table)


def print_verification(result, rewards: pl.DataFrame | None = None) -> None:  # type: ignore[no-untyped-def]
    """The settings that best reproduce the logged advantages, per step, and the reward check."""
    console = _console()
    best = result.best
    verdict = "reproduces" if best["differing_rows"] == 0 else "does NOT reproduce"
    setting = ", ".join(f"{k}={v}" for k, v in best.items() if k in DESCRIBED)
    console.print(f"Groups rebuilt from {result.grouping}.")
    console.print(
        f"Best setting ({setting}) {verdict} the log: {best['differing_rows']} of {best['rows']} rows differ, "
        f"max |difference| {best['max_abs_diff']:.3g}."
    )
    table = Table(title="per step, best setting", title_justify="left")
    for column in result.steps.columns:
        table.add_column(column, justify="right")
    for row in result.steps.iter_rows():
        table.add_row(*(f"{v:.3g}" if isinstance(v, float) else str(v) for v in row))
    console.print(table)
    matching = result.candidates.filter(pl.col("differing_rows") == 0)
    if matching.height > 1:
        console.print(
            f"{matching.height} settings reproduce the log equally well (they differ only where the data cannot tell)."
        )
    if rewards is not None:
        ok, worst = rewards_match(rewards)
        console.print(
            f"Logged rewards vs the replayed shaped rewards: {'match' if ok else 'differ'} "
            f"(max |difference| per step up to {worst})."
        )
