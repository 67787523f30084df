"""The analysis commands (plot, compare, explain); registered on the app in cli.py."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from replay_cli import api, terminal
from replay_cli.cli_options import (
    ForceOpt,
    GroupSizeOpt,
    HighlightOpt,
    IgnoreUnknownOpt,
    MapOpt,
    RunConfigOpt,
    Sources,
    StrictOpt,
    base_layer,
    highlight_ids,
    single_values,
    user_errors,
)
from replay_cli.errors import ConfigError
from replay_cli.sweep import expand

ReportDir = Annotated[
    Path,
    typer.Argument(help="A report directory.", exists=True, file_okay=False, show_default=False),
]


def plot(report: ReportDir, highlight: HighlightOpt = None) -> None:
    """Re-render the charts of a report into REPORT/charts, and its index.html."""
    with user_errors():
        paths = api.plot_report(report, highlight_ids(highlight))
        for path in paths:
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
            help="Internal run metrics: W&B panel CSV export or step,metric,value CSV.",
            exists=True,
            dir_okay=False,
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
            reports, out, reference=reference, internal=internal, config_id=config_id, force=force
        )
        typer.echo(f"Report: {Path(out) / 'index.html'}")
        terminal.print_deltas(deltas)
        if joined is not None:
            terminal.print_internal(joined)
        typer.echo(f"Wrote {out}")


def explain(
    sources: Sources,
    lambda_time: Annotated[str | None, typer.Option(help="Reward cost per agent minute.")] = None,
    apply_to: Annotated[str | None, typer.Option(help="all | correct.")] = None,
    floor: Annotated[str | None, typer.Option(help="Lower clamp, or none.")] = None,
    lambda_call_bonus: Annotated[
        str | None, typer.Option(help="Tool-call bonus (0 = off).")
    ] = None,
    call_bonus_ref: Annotated[
        str | None, typer.Option(help="Calls at which the bonus saturates.")
    ] = None,
    no_mask_flagged: Annotated[
        bool, typer.Option("--no-mask-flagged", help="env.should_mask_flagged_samples=false.")
    ] = False,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write attribution.parquet here.")
    ] = None,
    force: ForceOpt = False,
    run_config: RunConfigOpt = None,
    map_: MapOpt = None,
    group_size: GroupSizeOpt = None,
    strict: StrictOpt = False,
    ignore_unknown_overrides: IgnoreUnknownOpt = False,
) -> None:
    """Attribute the nemo-rl vs internal difference to each numbered item (spec §3.3), one at a time."""
    with user_errors():
        paths, base = base_layer(sources, run_config, ignore_unknown_overrides)
        flags = single_values(
            {
                "lambda_time": lambda_time,
                "apply_to": apply_to,
                "floor": floor,
                "lambda_call_bonus": lambda_call_bonus,
                "call_bonus_ref": call_bonus_ref,
            }
        )
        if no_mask_flagged:
            flags["mask_flagged"] = False
        (config,) = expand({**base, **flags}, {})
        table = api.explain(
            paths,
            config,
            out=out,
            force=force,
            mapping=map_,
            group_size=group_size,
            strict=strict,
            argv=sys.argv,
        )
        terminal.print_attribution(table)


def import_(
    fmt: Annotated[
        str,
        typer.Argument(
            metavar="FORMAT",
            help="nemo-gym (rollout JSONL) | wandb-table (full_result table JSON).",
        ),
    ],
    sources: Annotated[list[Path], typer.Argument(help="Files to convert.", show_default=False)],
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
    force: Annotated[bool, typer.Option("--force", help="Replace an existing file.")] = False,
) -> None:
    """Convert NeMo-Gym rollouts or W&B full_result tables into the canonical rollout Parquet."""
    with user_errors():
        stats = api.import_logs(
            fmt,
            sources,
            out,
            force=force,
            step=step,
            group_size=group_size,
            skip_bad=skip_bad_lines,
        )
        typer.echo(f"Wrote {stats.rows} rollouts to {out}")
        if stats.bad_lines:
            typer.echo(f"Skipped {stats.bad_lines} bad lines, first:", err=True)
            for line in stats.first_bad:
                typer.echo(f"  {line}", err=True)


def verify(
    sources: Annotated[
        list[str] | None,
        typer.Argument(
            help="Optional: the run's rollouts (Parquet), replayed to check the logged rewards.",
            show_default=False,
            metavar="[SRC]...",
        ),
    ] = None,
    train_data: Annotated[
        list[Path] | None,
        typer.Option("--train-data", help="NeMo-RL train_data_step*.jsonl (repeatable)."),
    ] = None,
    group_size: Annotated[
        int | None,
        typer.Option("--group-size", help="Group by blocks of N rows instead of prompt tokens."),
    ] = None,
    clip_low: Annotated[
        str | None, typer.Option(help="The run's grpo.advantage_clip_low (default: inferred).")
    ] = None,
    clip_high: Annotated[
        str | None, typer.Option(help="The run's grpo.advantage_clip_high (default: inferred).")
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write the verification tables here.")
    ] = None,
    force: ForceOpt = False,
    run_config: RunConfigOpt = None,
    ignore_unknown_overrides: IgnoreUnknownOpt = False,
) -> None:
    """Recompute advantages from a run's logged rewards, diff them against its logged advantages, and
    say which settings (LOO, normalise, guard, masked rows, clip) reproduce the log."""
    from replay_cli.params import parse_number

    with user_errors():
        if not train_data:
            raise ConfigError("verify needs --train-data train_data_step*.jsonl.")
        clip = None
        if clip_low is not None or clip_high is not None:
            clip = (
                None if clip_low is None else parse_number(clip_low, "--clip-low", allow_none=True),
                None
                if clip_high is None
                else parse_number(clip_high, "--clip-high", allow_none=True),
            )
        result = api.verify_run(train_data, group_size=group_size, clip=clip, out=out, force=force)
        rewards = None
        if sources:
            paths, base = base_layer(sources, run_config, ignore_unknown_overrides)
            (config,) = expand(base, {})
            rewards = api.compare_logged_rewards(paths, train_data, config)
        terminal.print_verification(result, rewards)
