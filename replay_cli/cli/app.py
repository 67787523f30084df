"""replay-cli: a thin Typer layer over the replay_cli library (parse -> config -> library call -> write)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer

from replay_cli import parameters
from replay_cli.cli import analysis as cli_analysis
from replay_cli.cli.lazy_import import lazy_module
from replay_cli.cli.options import (
    INJECTED,
    ChartsOpt,
    GroupSizeOpt,
    InputOptions,
    MapOpt,
    OutOpt,
    RunOptions,
    Sources,
    StrictOpt,
    TensorBoardOpt,
    WandbOpt,
    user_errors,
    with_parameters,
)

# The library (polars, numpy) loads on first use: `--help` stays fast.
api = lazy_module("replay_cli.api")
terminal = lazy_module("replay_cli.cli.terminal")

app = typer.Typer(
    help="Replay logged GRPO rollouts under any time-efficiency shaping and see what it does "
    "to the advantages.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    # Plain help: `replay-cli[tensorboard]` prints as written (Rich markup ate it), and --help
    # costs little more than the import (benchmarks/bench_startup.py).
    rich_markup_mode=None,
    context_settings={"max_content_width": 120},  # wider terminals get fewer wrapped lines
)


@app.callback()
def _root() -> None:
    """Replay logged rollouts under any time-efficiency reward shaping and recompute GRPO advantages
    exactly as NeMo-RL would; report advantage distributions and group-signal rates."""


def _report(
    sources: list[str],
    configs_of: Any,
    out: Path,
    opts: tuple[InputOptions, RunOptions],
    charts: bool,
    label: str,
) -> None:
    """Replay the configs `configs_of(base)` builds and print the report (replay and sweep)."""
    inputs, run = opts
    with user_errors():
        paths, base = inputs.layers(sources)
        configs = configs_of(base)
        with terminal.phases(label.format(n=len(configs))) as tick:
            result = api.replay_to_report(
                paths, configs, out, run.report_options(charts), progress=tick, **inputs.load_args()
            )
        terminal.print_report(result, out, run.tensorboard, run.wandb)


@app.command(rich_help_panel="Replay")
@with_parameters("replay")
def replay(
    sources: Sources,
    out: OutOpt,
    params: dict[str, Any],
    charts: ChartsOpt = False,
    inputs: InputOptions = INJECTED,
    run: RunOptions = INJECTED,
) -> None:
    """Replay one shaping config and write a report (rollouts, groups, steps, summary, findings,
    manifest, index.html).

    Precedence: flags > ++overrides > --config run.yaml > defaults.
    """
    configs_of = lambda base: parameters.expand({**base, **params}, {})
    _report(sources, configs_of, out, (inputs, run), charts, "1 config")


def _grid_configs(params: dict[str, Any], grid: Path | None) -> Any:
    """`configs_of(base)` of a sweep: the grid file's axes, points and base, then the flags (a
    flag with one value is a setting of every config, with several an axis of the grid)."""

    def configs_of(base: dict[str, Any]) -> list[Any]:
        axes: dict[str, list[Any]] = {}
        points: list[dict[str, Any]] = []
        if grid is not None:
            file_axes, points, file_base = parameters.read_grid(grid)
            base = {**base, **file_base}
            axes.update(file_axes)
        single = {name: values[0] for name, values in params.items() if len(values) == 1}
        axes.update({name: values for name, values in params.items() if len(values) > 1})
        for name in single:
            axes.pop(name, None)
        return parameters.expand({**base, **single}, axes, points)

    return configs_of


GridOpt = Annotated[
    Path | None,
    typer.Option(
        "--grid",
        help="YAML: grid (parameter -> list), configs (explicit points), base.",
        exists=True,
        dir_okay=False,
    ),
]


@app.command(rich_help_panel="Replay")
@with_parameters("sweep")
def sweep(
    sources: Sources,
    out: OutOpt,
    params: dict[str, Any],
    grid: GridOpt = None,
    charts: ChartsOpt = True,
    inputs: InputOptions = INJECTED,
    run: RunOptions = INJECTED,
) -> None:
    """Replay the Cartesian product of parameter lists in one pass and write one report, with
    the forecast of T steps of training under each config (--no-forecast skips it; there is no
    separate forecast command).

    Example: --lambda-time 0,1/120,1/60 --apply-to all,correct --floor none,0.05
    """
    configs_of = _grid_configs(params, grid)
    _report(sources, configs_of, out, (inputs, run), charts, "{n} configs")


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
        stats, notes, hazards = api.inspect_input(
            sources, mapping=map_, group_size=group_size, strict=strict
        )
        terminal.print_inspect(stats, notes, hazards)


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
    tensorboard: TensorBoardOpt = None,
    wandb: WandbOpt = None,
) -> None:
    """Synthesise realistic rollouts, replay a small sweep, write a report with charts: start here."""
    with user_errors(), tempfile.TemporaryDirectory() as tmp, terminal.phases("demo") as tick:
        options = api.report_options(tensorboard=tensorboard, wandb=wandb)
        result = api.run_demo(out, Path(tmp), options, progress=tick)
        terminal.print_report(result, out, tensorboard, wandb)
        typer.echo(terminal.demo_guide(out))


app.command(rich_help_panel="Analysis")(cli_analysis.report)
app.command(rich_help_panel="Analysis")(cli_analysis.plot)
app.command(rich_help_panel="Analysis")(cli_analysis.compare)
app.command(rich_help_panel="Analysis")(cli_analysis.explain)
app.command(rich_help_panel="Analysis")(cli_analysis.verify)
app.command("import", rich_help_panel="Data")(cli_analysis.import_)

export_app = typer.Typer(
    help="Export a written report to other tools.", no_args_is_help=True, rich_markup_mode=None
)
export_app.command("tensorboard")(cli_analysis.export_tensorboard)
export_app.command("wandb")(cli_analysis.export_wandb)
app.add_typer(export_app, name="export", rich_help_panel="Analysis")


def main() -> None:
    """Console-script entry point."""
    app()
