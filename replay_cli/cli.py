"""replay-cli: a thin Typer layer over the replay_cli library (parse -> config -> library call -> write)."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from replay_cli import api, terminal
from replay_cli.errors import ReplayError
from replay_cli.overrides import is_override, parse_overrides
from replay_cli.params import merge_layers, parse_number

app = typer.Typer(
    help="Replay logged GRPO rollouts under any time-efficiency shaping and see what it does to the advantages.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

IN, SHAPE, ADV, OUT = "Input", "Shaping", "Advantages", "Output"


class ApplyTo(StrEnum):
    all = "all"
    correct = "correct"


class Semantics(StrEnum):
    nemo_rl = "nemo-rl"
    internal = "internal"


class Baseline(StrEnum):
    loo = "loo"
    mean = "mean"


class Guard(StrEnum):
    legacy = "legacy"
    trivial = "trivial"


class Precision(StrEnum):
    float32 = "float32"
    float64 = "float64"


class MetricsBy(StrEnum):
    group = "group"
    batch = "batch"


@contextmanager
def user_errors() -> Iterator[None]:
    """Bad input or usage: one readable message on stderr and exit code 2, no traceback."""
    try:
        yield
    except ReplayError as exc:
        typer.echo(f"Error: {exc}", err=True)
        raise typer.Exit(2) from None


@app.callback()
def _root() -> None:
    """Replay logged rollouts under any time-efficiency reward shaping and recompute GRPO advantages
    exactly as NeMo-RL would; report advantage distributions and group-signal rates."""


Sources = Annotated[
    list[str],
    typer.Argument(
        help="Parquet files, globs or directories; trainer overrides (++grpo.time_efficiency.lambda_time=0.0166) may follow.",
        show_default=False,
        metavar="SRC...",
    ),
]
MapOpt = Annotated[
    list[str] | None,
    typer.Option("--map", help="Rename a column: SRC=DST (repeatable).", rich_help_panel=IN),
]
GroupSizeOpt = Annotated[
    int | None,
    typer.Option(
        "--group-size", help="No group column: N consecutive rows form a group.", rich_help_panel=IN
    ),
]
StrictOpt = Annotated[
    bool,
    typer.Option("--strict", help="NaN or infinite run times are an error.", rich_help_panel=IN),
]


def _shaping_flags(
    lambda_time: str | None,
    apply_to: ApplyTo | None,
    floor: str | None,
    lambda_call_bonus: str | None,
    call_bonus_ref: str | None,
    semantics: Semantics | None,
    no_mask_flagged: bool,
    internal_items: str | None,
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if lambda_time is not None:
        out["lambda_time"] = parse_number(lambda_time, "--lambda-time")
    if apply_to is not None:
        out["apply_to"] = apply_to.value
    if floor is not None:
        out["floor"] = parse_number(floor, "--floor", allow_none=True)
    if lambda_call_bonus is not None:
        out["lambda_call_bonus"] = parse_number(lambda_call_bonus, "--lambda-call-bonus")
    if call_bonus_ref is not None:
        out["call_bonus_ref"] = parse_number(call_bonus_ref, "--call-bonus-ref", allow_none=True)
    if semantics is not None:
        out["semantics"] = semantics.value
    if no_mask_flagged:
        out["mask_flagged"] = False
    if internal_items is not None:
        out["internal_items"] = api.parse_items(internal_items)
    return out


def _advantage_flags(
    baseline: Baseline | None,
    no_normalize: bool,
    std_guard: Guard | None,
    exclude_masked: bool,
    clip_low: str | None,
    clip_high: str | None,
    precision: Precision | None,
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if baseline is not None:
        out["baseline"] = baseline.value
    if no_normalize:
        out["normalize"] = False
    if std_guard is not None:
        out["std_guard"] = std_guard.value
    if exclude_masked:
        out["exclude_masked"] = True
    if clip_low is not None:
        out["clip_low"] = parse_number(clip_low, "--clip-low", allow_none=True)
    if clip_high is not None:
        out["clip_high"] = parse_number(clip_high, "--clip-high", allow_none=True)
    if precision is not None:
        out["precision"] = precision.value
    return out


@app.command(rich_help_panel="Replay")
def replay(
    sources: Sources,
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Report directory to create.", rich_help_panel=OUT)
    ],
    lambda_time: Annotated[
        str | None,
        typer.Option(
            help="Reward cost per agent minute (1/60: an hour costs 1.0).", rich_help_panel=SHAPE
        ),
    ] = None,
    apply_to: Annotated[
        ApplyTo | None,
        typer.Option(help="Charge all rollouts or only correct ones.", rich_help_panel=SHAPE),
    ] = None,
    floor: Annotated[
        str | None,
        typer.Option(help="Lower clamp on the shaped reward, or none.", rich_help_panel=SHAPE),
    ] = None,
    lambda_call_bonus: Annotated[
        str | None,
        typer.Option(help="Saturating tool-call bonus (0 = off).", rich_help_panel=SHAPE),
    ] = None,
    call_bonus_ref: Annotated[
        str | None, typer.Option(help="Calls at which the bonus saturates.", rich_help_panel=SHAPE)
    ] = None,
    semantics: Annotated[
        Semantics | None,
        typer.Option(help="nemo-rl (PR #4029) or internal (earlier code).", rich_help_panel=SHAPE),
    ] = None,
    no_mask_flagged: Annotated[
        bool,
        typer.Option(
            "--no-mask-flagged",
            help="env.should_mask_flagged_samples=false.",
            rich_help_panel=SHAPE,
        ),
    ] = False,
    internal_items: Annotated[
        str | None,
        typer.Option(
            help="Switch single internal differences on, e.g. 1,3 (spec §3.3).",
            rich_help_panel=SHAPE,
        ),
    ] = None,
    baseline: Annotated[
        Baseline | None,
        typer.Option(help="Leave-one-out or group-mean baseline.", rich_help_panel=ADV),
    ] = None,
    no_normalize: Annotated[
        bool,
        typer.Option("--no-normalize", help="Do not divide by the group std.", rich_help_panel=ADV),
    ] = False,
    std_guard: Annotated[
        Guard | None,
        typer.Option(
            help="Normalisation guard: legacy (std>0) or trivial (PR #4158).", rich_help_panel=ADV
        ),
    ] = None,
    exclude_masked: Annotated[
        bool,
        typer.Option(
            "--exclude-masked",
            help="Masked rows do not vote in the baseline (PR #4160).",
            rich_help_panel=ADV,
        ),
    ] = False,
    clip_low: Annotated[
        str | None, typer.Option(help="grpo.advantage_clip_low (none = off).", rich_help_panel=ADV)
    ] = None,
    clip_high: Annotated[
        str | None, typer.Option(help="grpo.advantage_clip_high (none = off).", rich_help_panel=ADV)
    ] = None,
    precision: Annotated[
        Precision | None,
        typer.Option(
            help="float32 emulates the trainer; float64 for exact maths.", rich_help_panel=ADV
        ),
    ] = None,
    metrics_by: Annotated[
        MetricsBy | None,
        typer.Option(help="group: async trainer; batch: sync trainer.", rich_help_panel=OUT),
    ] = None,
    force: Annotated[
        bool,
        typer.Option("--force", help="Replace an existing report directory.", rich_help_panel=OUT),
    ] = False,
    charts: Annotated[
        bool,
        typer.Option("--charts/--no-charts", help="Also render PNG charts.", rich_help_panel=OUT),
    ] = False,
    map_: MapOpt = None,
    group_size: GroupSizeOpt = None,
    strict: StrictOpt = False,
    ignore_unknown_overrides: Annotated[
        bool,
        typer.Option(
            "--ignore-unknown-overrides",
            help="Skip trainer overrides that do not affect the replay.",
            rich_help_panel=IN,
        ),
    ] = False,
) -> None:
    """Replay one shaping config and write a report (rollouts, groups, steps, summary, manifest)."""
    with user_errors():
        paths = [s for s in sources if not is_override(s)]
        overrides, ignored = parse_overrides(
            [s for s in sources if is_override(s)], ignore_unknown=ignore_unknown_overrides
        )
        flags = {
            "shaping": _shaping_flags(
                lambda_time,
                apply_to,
                floor,
                lambda_call_bonus,
                call_bonus_ref,
                semantics,
                no_mask_flagged,
                internal_items,
            ),
            "advantage": _advantage_flags(
                baseline, no_normalize, std_guard, exclude_masked, clip_low, clip_high, precision
            ),
        }
        config = merge_layers(
            overrides, flags, metrics_by=None if metrics_by is None else metrics_by.value
        )
        if ignored:
            typer.echo(f"Ignored trainer overrides: {', '.join(ignored)}", err=True)
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
        )
        terminal.print_summary(result, out)


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
    """Write a seeded synthetic SWE-like rollout table (difficulty per task, log-normal run times, masked timeouts)."""
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
        terminal.print_summary(result, out)
        typer.echo(terminal.demo_guide(out))


def main() -> None:
    """Console-script entry point."""
    app()
