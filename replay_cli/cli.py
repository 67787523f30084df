"""replay-cli: a thin Typer layer over the replay_cli library (parse -> config -> library call -> write)."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer

from replay_cli import api, cli_analysis, terminal
from replay_cli.cli_options import (
    SWITCHES,
    VALUED,
    ChunkRowsOpt,
    EngineOpt,
    ForceOpt,
    GroupSizeOpt,
    HighlightOpt,
    IgnoreUnknownOpt,
    MapOpt,
    OutOpt,
    RayAddressOpt,
    RowsOpt,
    RunConfigOpt,
    Sources,
    StrictOpt,
    base_layer,
    command_values,
    engine_name,
    highlight_ids,
    list_values,
    rows_mode,
    single_values,
    user_errors,
)
from replay_cli.engine import DEFAULT_CHUNK_ROWS
from replay_cli.sweep import expand, read_grid

app = typer.Typer(
    help="Replay logged GRPO rollouts under any time-efficiency shaping and see what it does "
    "to the advantages.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _v(name: str, *decls: str) -> Any:
    help_text, panel = VALUED[name]
    return typer.Option(*decls, help=help_text, rich_help_panel=panel, show_default=False)


def _s(name: str) -> Any:
    help_text, panel = SWITCHES[name]
    return typer.Option(
        help=help_text + " Comma list: true,false.", rich_help_panel=panel, show_default=False
    )


Opt = str | None


@app.callback()
def _root() -> None:
    """Replay logged rollouts under any time-efficiency reward shaping and recompute GRPO advantages
    exactly as NeMo-RL would; report advantage distributions and group-signal rates."""


@app.command(rich_help_panel="Replay")
def replay(
    sources: Sources,
    out: OutOpt,
    lambda_time: Annotated[Opt, _v("lambda_time")] = None,
    apply_to: Annotated[Opt, _v("apply_to")] = None,
    floor: Annotated[Opt, _v("floor")] = None,
    lambda_call_bonus: Annotated[Opt, _v("lambda_call_bonus")] = None,
    call_bonus_ref: Annotated[Opt, _v("call_bonus_ref")] = None,
    semantics: Annotated[Opt, _v("semantics")] = None,
    internal_items: Annotated[Opt, _v("internal_items")] = None,
    no_mask_flagged: Annotated[
        bool,
        typer.Option(
            "--no-mask-flagged",
            help="env.should_mask_flagged_samples=false.",
            rich_help_panel="Shaping",
        ),
    ] = False,
    estimator: Annotated[Opt, _v("estimator")] = None,
    scale_rewards: Annotated[Opt, _v("scale_rewards")] = None,
    filter_: Annotated[Opt, _v("filter", "--filter")] = None,
    filter_on: Annotated[Opt, _v("filter_on")] = None,
    baseline: Annotated[Opt, _v("baseline")] = None,
    no_normalize: Annotated[
        bool,
        typer.Option(
            "--no-normalize", help="Do not divide by the group std.", rich_help_panel="Advantages"
        ),
    ] = False,
    std_guard: Annotated[Opt, _v("std_guard")] = None,
    exclude_masked: Annotated[
        bool,
        typer.Option(
            "--exclude-masked",
            help="Masked rows do not vote in the baseline (PR #4160).",
            rich_help_panel="Advantages",
        ),
    ] = False,
    clip_low: Annotated[Opt, _v("clip_low")] = None,
    clip_high: Annotated[Opt, _v("clip_high")] = None,
    precision: Annotated[Opt, _v("precision")] = None,
    metrics_by: Annotated[Opt, _v("metrics_by")] = None,
    force: ForceOpt = False,
    rows: RowsOpt = "all",
    chunk_rows: ChunkRowsOpt = DEFAULT_CHUNK_ROWS,
    engine: EngineOpt = "local",
    ray_address: RayAddressOpt = None,
    highlight: HighlightOpt = None,
    charts: Annotated[
        bool,
        typer.Option(
            "--charts/--no-charts", help="Also render PNG charts.", rich_help_panel="Output"
        ),
    ] = False,
    run_config: RunConfigOpt = None,
    map_: MapOpt = None,
    group_size: GroupSizeOpt = None,
    strict: StrictOpt = False,
    ignore_unknown_overrides: IgnoreUnknownOpt = False,
) -> None:
    """Replay one shaping config and write a report (rollouts, groups, steps, summary, manifest).

    Precedence: flags > ++overrides > --config run.yaml > defaults.
    """
    arguments = locals()
    with user_errors():
        paths, base = base_layer(sources, run_config, ignore_unknown_overrides)
        flags = single_values(command_values(arguments, VALUED))
        switches = {
            "mask_flagged": False if no_mask_flagged else None,
            "normalize": False if no_normalize else None,
        }
        switches["exclude_masked"] = True if exclude_masked else None
        flags.update({k: v for k, v in switches.items() if v is not None})
        (config,) = expand({**base, **flags}, {})
        result = api.replay_to_report(
            paths,
            [config],
            out,
            force=force,
            charts=charts,
            mapping=map_,
            group_size=group_size,
            strict=strict,
            argv=sys.argv,
            rows=rows_mode(rows),  # type: ignore[arg-type]
            chunk_rows=chunk_rows,
            engine=engine_name(engine),  # type: ignore[arg-type]
            ray_address=ray_address,
            highlight=highlight_ids(highlight),
        )
        terminal.print_report(result, out)


@app.command(rich_help_panel="Replay")
def sweep(
    sources: Sources,
    out: OutOpt,
    grid: Annotated[
        Path | None,
        typer.Option(
            "--grid",
            help="YAML: grid (parameter -> list), configs (explicit points), base.",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    lambda_time: Annotated[Opt, _v("lambda_time")] = None,
    apply_to: Annotated[Opt, _v("apply_to")] = None,
    floor: Annotated[Opt, _v("floor")] = None,
    lambda_call_bonus: Annotated[Opt, _v("lambda_call_bonus")] = None,
    call_bonus_ref: Annotated[Opt, _v("call_bonus_ref")] = None,
    semantics: Annotated[Opt, _v("semantics")] = None,
    internal_items: Annotated[Opt, _v("internal_items")] = None,
    enabled: Annotated[Opt, _s("enabled")] = None,
    mask_flagged: Annotated[Opt, _s("mask_flagged")] = None,
    estimator: Annotated[Opt, _v("estimator")] = None,
    scale_rewards: Annotated[Opt, _v("scale_rewards")] = None,
    filter_: Annotated[Opt, _v("filter", "--filter")] = None,
    filter_on: Annotated[Opt, _v("filter_on")] = None,
    baseline: Annotated[Opt, _v("baseline")] = None,
    normalize: Annotated[Opt, _s("normalize")] = None,
    std_guard: Annotated[Opt, _v("std_guard")] = None,
    exclude_masked: Annotated[Opt, _s("exclude_masked")] = None,
    clip_low: Annotated[Opt, _v("clip_low")] = None,
    clip_high: Annotated[Opt, _v("clip_high")] = None,
    precision: Annotated[Opt, _v("precision")] = None,
    metrics_by: Annotated[Opt, _v("metrics_by")] = None,
    force: ForceOpt = False,
    rows: RowsOpt = "all",
    chunk_rows: ChunkRowsOpt = DEFAULT_CHUNK_ROWS,
    engine: EngineOpt = "local",
    ray_address: RayAddressOpt = None,
    highlight: HighlightOpt = None,
    charts: Annotated[
        bool,
        typer.Option("--charts/--no-charts", help="Render PNG charts.", rich_help_panel="Output"),
    ] = True,
    run_config: RunConfigOpt = None,
    map_: MapOpt = None,
    group_size: GroupSizeOpt = None,
    strict: StrictOpt = False,
    ignore_unknown_overrides: IgnoreUnknownOpt = False,
) -> None:
    """Replay the Cartesian product of parameter lists in one pass and write one report.

    Example: --lambda-time 0,1/120,1/60 --apply-to all,correct --floor none,0.05
    """
    arguments = locals()
    with user_errors():
        paths, base = base_layer(sources, run_config, ignore_unknown_overrides)
        axes: dict[str, list[Any]] = {}
        points: list[dict[str, Any]] = []
        if grid is not None:
            file_axes, points, file_base = read_grid(grid)
            base.update(file_base)
            axes.update(file_axes)
        axes.update(list_values(command_values(arguments, [*VALUED, *SWITCHES])))
        configs = expand(base, axes, points)
        with terminal.progress(f"replaying {len(configs)} configs") as tick:
            result = api.replay_to_report(
                paths,
                configs,
                out,
                force=force,
                charts=charts,
                mapping=map_,
                group_size=group_size,
                strict=strict,
                argv=sys.argv,
                progress=tick,
                rows=rows_mode(rows),  # type: ignore[arg-type]
                chunk_rows=chunk_rows,
                engine=engine_name(engine),  # type: ignore[arg-type]
                ray_address=ray_address,
                highlight=highlight_ids(highlight),
            )
        terminal.print_report(result, out)


@app.command(rich_help_panel="Data")
def inspect(
    sources: Annotated[
        list[str],
        typer.Argument(
            help="Parquet files, globs or directories.", show_default=False, metavar="SRC..."
        ),
    ],
    map_: MapOpt = None,
    group_size: GroupSizeOpt = None,
    strict: StrictOpt = False,
) -> None:
    """Validate an input and summarise it (sizes, group shapes, outcomes, run times)."""
    with user_errors():
        terminal.print_inspect(sources, mapping=map_, group_size=group_size, strict=strict)


@app.command(rich_help_panel="Data")
def synth(
    out: Annotated[Path, typer.Argument(help="Parquet file to write.", show_default=False)],
    steps: Annotated[int, typer.Option(min=1, help="Training steps.")] = 8,
    groups: Annotated[int, typer.Option(min=1, help="Prompt groups per step.")] = 32,
    group_size: Annotated[int, typer.Option(min=1, help="Rollouts per group.")] = 8,
    validation_groups: Annotated[
        int, typer.Option(min=0, help="Validation rollouts per step.")
    ] = 0,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 0,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing file.")] = False,
) -> None:
    """Write a seeded synthetic SWE-like rollout table (difficulty per task, log-normal run times,
    masked timeouts)."""
    with user_errors():
        rows = api.write_synth(
            out,
            steps=steps,
            groups_per_step=groups,
            group_size=group_size,
            validation_groups=validation_groups,
            seed=seed,
            force=force,
        )
        typer.echo(f"Wrote {rows} rollouts to {out}")


@app.command(rich_help_panel="Replay")
def demo(
    out: Annotated[
        Path,
        typer.Option(
            "--out", "-o", help="Report directory (replaced if it holds an earlier report)."
        ),
    ] = Path("replay-demo"),
) -> None:
    """Synthesise realistic rollouts, replay a small sweep, write a report with charts: start here."""
    with (
        user_errors(),
        tempfile.TemporaryDirectory() as tmp,
        terminal.progress("replaying demo configs") as tick,
    ):
        result = api.run_demo(out, Path(tmp), argv=sys.argv, progress=tick)
        terminal.print_report(result, out)
        typer.echo(terminal.demo_guide(out))


app.command(rich_help_panel="Analysis")(cli_analysis.report)
app.command(rich_help_panel="Analysis")(cli_analysis.plot)
app.command(rich_help_panel="Analysis")(cli_analysis.compare)
app.command(rich_help_panel="Analysis")(cli_analysis.explain)
app.command(rich_help_panel="Analysis")(cli_analysis.verify)
app.command("import", rich_help_panel="Data")(cli_analysis.import_)


def main() -> None:
    """Console-script entry point."""
    app()
