"""The analysis commands (plot, compare, explain); registered on the app in cli.py."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path
from typing import Annotated, Any

import typer

from replay_cli import parameters
from replay_cli.cli.lazy_import import lazy_module
from replay_cli.cli.options import (
    INJECTED,
    ForceOpt,
    HighlightOpt,
    IgnoreUnknownOpt,
    InputOptions,
    MapOpt,
    RunConfigOpt,
    Sources,
    highlight_ids,
    user_errors,
    with_parameters,
)
from replay_cli.errors import ConfigError
from replay_cli.io.importers import formats_help

# The library (polars, numpy) loads on first use: `--help` stays fast.
api = lazy_module("replay_cli.api")
terminal = lazy_module("replay_cli.cli.terminal")

ReportDir = Annotated[
    Path,
    typer.Argument(help="A report directory.", exists=True, file_okay=False, show_default=False),
]


def plot(report: ReportDir, highlight: HighlightOpt = None) -> None:
    """Re-render the charts of a report into REPORT/charts, and its index.html."""
    with user_errors():
        for path in api.plot_report(report, highlight_ids(highlight)):
            typer.echo(str(path))


def report(report: ReportDir) -> None:
    """Re-render REPORT/index.html (and findings.parquet) from the report's own tables."""
    with user_errors():
        typer.echo(str(api.render_report(report)))


def compare(
    reports: Annotated[
        list[Path],
        typer.Argument(
            help="Report directories.", exists=True, file_okay=False, show_default=False
        ),
    ],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Directory for the comparison tables and charts.")
    ],
    reference: Annotated[
        str | None,
        typer.Option(
            help="Reference config: config_id (or its prefix) or label; default: the first."
        ),
    ] = None,
    internal: Annotated[
        Path | None,
        typer.Option(
            help="Internal run metrics: a W&B run directory (wandb/run-*/, synced or offline, or "
            "the wandb/ folder of several), a TensorBoard log (a run's directory, a directory of "
            "runs or an event file), a W&B panel CSV export, or a step,metric,value CSV.",
            exists=True,
        ),
    ] = None,
    internal_run: Annotated[
        str | None,
        typer.Option(
            "--internal-run",
            help="The run to read when the W&B folder or TensorBoard log holds several (the error "
            "lists them; a W&B run by directory, id or name).",
        ),
    ] = None,
    config_id: Annotated[
        str | None,
        typer.Option(
            "--config-id", help="Config to set beside the internal run (default: the only one)."
        ),
    ] = None,
    force: ForceOpt = False,
) -> None:
    """Tables of metric deltas across configs and reports, and replayed vs internal-run curves."""
    with user_errors():
        deltas, joined = api.compare_reports(
            reports,
            out,
            reference=reference,
            internal=internal,
            internal_run=internal_run,
            config_id=config_id,
            force=force,
        )
        typer.echo(f"Report: {Path(out) / 'index.html'}")
        terminal.print_deltas(deltas)
        if joined is not None:
            terminal.print_internal(joined)
        typer.echo(f"Wrote {out}")


@with_parameters("explain")
def explain(
    sources: Sources,
    params: dict[str, Any],
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write attribution.parquet here.")
    ] = None,
    force: ForceOpt = False,
    inputs: InputOptions = INJECTED,
) -> None:
    """Attribute the nemo-rl vs internal difference to each numbered item (spec §3.3), one at a time."""
    with user_errors():
        paths, base = inputs.layers(sources)
        (config,) = parameters.expand({**base, **params}, {})
        table = api.explain(paths, config, out=out, force=force, **inputs.load_args())
        if out is not None:
            typer.echo(f"Report: {Path(out) / 'index.html'}")
        terminal.print_attribution(table)


PROGRESS_BYTES = 200 * 1024 * 1024
"""Imports of more than this many bytes show a progress bar (on a terminal)."""


def export_tensorboard(
    report: ReportDir,
    out: Annotated[
        Path,
        typer.Option("--out", "-o", help="Directory for the TensorBoard runs.", show_default=False),
    ],
    force: ForceOpt = False,
) -> None:
    """Write a report as TensorBoard runs: one per config, the trainer's tags at the trainer's steps,
    the replay's diagnostics under replay/, and an HParams view of the sweep."""
    with user_errors():
        runs = api.export_tensorboard(report, out, force=force)
        typer.echo(f"Wrote {len(runs)} TensorBoard runs to {out}")
        terminal.print_tensorboard(out)


def export_wandb(
    report: ReportDir,
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Directory for the W&B runs.", show_default=False)
    ],
    group: Annotated[
        str | None,
        typer.Option(help="The W&B group of the runs (default: the report directory's name)."),
    ] = None,
    force: ForceOpt = False,
) -> None:
    """Write a report as offline W&B runs: one per config, its parameters and launch overrides as
    config, the trainer's tags as history, the decision's numbers as summary, its role as a tag;
    `wandb sync` uploads them."""
    with user_errors():
        runs = api.export_wandb(report, out, force=force, group=group)
        typer.echo(f"Wrote {len(runs)} W&B runs to {out}")
        terminal.print_wandb(out)


def import_(
    fmt: Annotated[str, typer.Argument(metavar="FORMAT", help=formats_help())],
    sources: Annotated[
        list[Path],
        typer.Argument(
            help="Files to convert (table: also a saved datasets directory or a Hub name).",
            show_default=False,
        ),
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="Canonical Parquet file to write.")],
    step: Annotated[
        int | None,
        typer.Option(help="Training step of every row (wandb-table: default from the file name)."),
    ] = None,
    group_size: Annotated[
        int | None,
        typer.Option("--group-size", help="No _ng_task_index: N consecutive rows form a group."),
    ] = None,
    skip_bad_lines: Annotated[
        bool, typer.Option("--skip-bad-lines", help="Skip and count bad lines instead of stopping.")
    ] = False,
    map_: MapOpt = None,
    split: Annotated[
        str | None, typer.Option(help="table: the split of a saved DatasetDict or a Hub dataset.")
    ] = None,
    durations: Annotated[
        bool,
        typer.Option(
            "--durations",
            help="table: read run times written as durations ('12m', '1h02m', '00:12:00', "
            "'720s') into seconds. Without it such values are counted: a replay reads them "
            "as 0 minutes, as the trainer's float() does.",
        ),
    ] = False,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing file.")] = False,
) -> None:
    """Convert NeMo-Gym rollouts, W&B full_result tables (files or a run directory) or rollout
    tables (CSV, JSONL, Arrow, Hugging Face datasets) into the canonical rollout Parquet."""
    with user_errors():
        big = sum(p.stat().st_size for p in sources if p.is_file()) > PROGRESS_BYTES
        with terminal.progress("importing") if big else nullcontext(None) as tick:
            stats = api.import_logs(
                fmt,
                sources,
                out,
                force=force,
                step=step,
                group_size=group_size,
                skip_bad=skip_bad_lines,
                progress=tick,
                mapping=map_,
                split=split,
                durations=durations,
            )
        typer.echo(f"Wrote {stats.rows} rollouts to {out}")
        for note in stats.notes:
            typer.echo(f"Note: {note}")
        if stats.mask_sources:
            from replay_cli.io.gym import mask_note

            typer.echo(mask_note(stats.mask_sources))
        if stats.bad_lines:
            typer.echo(f"Skipped {stats.bad_lines} bad lines, first:", err=True)
            for line in stats.first_bad:
                typer.echo(f"  {line}", err=True)


@with_parameters("replay")
def verify(
    sources: Annotated[
        list[str] | None,
        typer.Argument(
            help="Optional: the run's rollouts (Parquet), replayed to check the logged rewards.",
            show_default=False,
            metavar="[SRC]...",
        ),
    ] = None,
    params: dict[str, Any] = INJECTED,
    train_data: Annotated[
        list[Path] | None,
        typer.Option(
            "--train-data",
            help="NeMo-RL train_data_step*.jsonl dumps, or a directory of them; the shell's "
            "expansion of train_data_step*.jsonl after one flag works too (repeatable).",
        ),
    ] = None,
    group_size: Annotated[
        int | None,
        typer.Option("--group-size", help="Group by blocks of N rows instead of prompt tokens."),
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write the verification tables here.")
    ] = None,
    force: ForceOpt = False,
    run_config: RunConfigOpt = None,
    ignore_unknown_overrides: IgnoreUnknownOpt = False,
) -> None:
    """Recompute advantages from a run's logged rewards, diff them against its logged advantages, and
    say which settings (LOO, normalise, guard, masked rows, clip) reproduce the log.

    --clip-low/--clip-high give the run's clip (default: inferred from the logged extremes); with
    SRC, the run's rollouts are replayed under the given parameters to check the logged rewards."""
    with user_errors():
        # `--train-data train_data_step*.jsonl` reaches us as one option value and the rest of the
        # shell's expansion as positionals: the dumps go where they belong.
        sources, train_data = api.split_train_data(sources or [], train_data or [])
        if not train_data:
            raise ConfigError("verify needs --train-data train_data_step*.jsonl.")
        clip = None
        if "clip_low" in params or "clip_high" in params:  # else inferred from the logged extremes
            clip = (params.get("clip_low"), params.get("clip_high"))
        result = api.verify_run(train_data, group_size=group_size, clip=clip, out=out, force=force)
        rewards = None
        if sources:
            paths, base, ignored = parameters.base_layer(
                sources, run_config, ignore_unknown_overrides
            )
            if ignored:
                typer.echo(f"Ignored trainer overrides: {', '.join(ignored)}", err=True)
            (config,) = parameters.expand({**base, **params}, {})
            rewards = api.compare_logged_rewards(paths, train_data, config)
        terminal.print_verification(result, rewards)
