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
    IgnoreUnknownOpt,
    MapOpt,
    RunConfigOpt,
    Sources,
    StrictOpt,
    base_layer,
    single_values,
    user_errors,
)
from replay_cli.sweep import expand

ReportDir = Annotated[
    Path,
    typer.Argument(help="A report directory.", exists=True, file_okay=False, show_default=False),
]


def plot(report: ReportDir) -> None:
    """Re-render the charts of a report into REPORT/charts."""
    with user_errors():
        paths = api.plot_report(report)
        for path in paths:
            typer.echo(str(path))


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
