"""Option types shared by the replay-cli commands, and the error boundary (exit code 2)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

from replay_cli.errors import ConfigError, ReplayError
from replay_cli.overrides import is_override, parse_overrides
from replay_cli.runconfig import read_run_config
from replay_cli.sweep import flatten, parse_list, parse_value

IN, SHAPE, ADV, OUT = "Input", "Shaping", "Advantages", "Output"


@contextmanager
def user_errors() -> Iterator[None]:
    """Bad input or usage: one readable message on stderr and exit code 2, no traceback."""
    try:
        yield
    except ReplayError as exc:
        typer.echo(f"Error: {exc}", err=True)
        raise typer.Exit(2) from None


# Parameters that take a value in both `replay` (one value) and `sweep` (a comma list).
VALUED: dict[str, tuple[str, str]] = {
    "lambda_time": ("Reward cost per agent minute; fractions ok (1/60: an hour costs 1.0).", SHAPE),
    "apply_to": ("all | correct: charge every rollout or only correct ones.", SHAPE),
    "floor": ("Lower clamp on the shaped reward, or none.", SHAPE),
    "lambda_call_bonus": ("Saturating tool-call bonus (0 = off).", SHAPE),
    "call_bonus_ref": ("Calls at which the bonus saturates, or none.", SHAPE),
    "semantics": ("nemo-rl (PR #4029) | internal (the earlier implementation).", SHAPE),
    "internal_items": (
        "Internal differences to switch on alone, joined by '+': 1+3 (spec §3.3).",
        SHAPE,
    ),
    "estimator": (
        (
            "grpo (NeMo-RL) | verl-grpo | verl-rloo | trl-grpo | openrlhf-group-norm"
            " | openrlhf-rloo | reinforce-pp-baseline | dr-grpo. reinforce-pp-baseline whitens"
            " over response_tokens when the input has that column, else one token per rollout"
            " (verl always weighs tokens)."
        ),
        ADV,
    ),
    "scale_rewards": ("trl-grpo: group | batch | none.", ADV),
    "filter": ("Dynamic-sampling filter: none | nemo-rl | verl | openrlhf.", ADV),
    "filter_on": ("What the filter looks at: reward | resolved.", ADV),
    "baseline": ("loo | mean: leave-one-out or group-mean baseline.", ADV),
    "std_guard": ("legacy (std > 0) | trivial (PR #4158, default).", ADV),
    "clip_low": ("grpo.advantage_clip_low, or none.", ADV),
    "clip_high": ("grpo.advantage_clip_high, or none.", ADV),
    "precision": ("float32 (emulates the trainer) | float64 (exact maths).", ADV),
    "metrics_by": ("group (async trainer) | batch (sync trainer).", OUT),
}
# Switches: replay has --no-X / --X flags, sweep takes true,false lists.
SWITCHES: dict[str, tuple[str, str]] = {
    "enabled": ("Shaping on (false = raw replay).", SHAPE),
    "mask_flagged": ("env.should_mask_flagged_samples.", SHAPE),
    "normalize": ("Divide by the group std where the guard passes.", ADV),
    "exclude_masked": ("Masked rows do not vote in the baseline (PR #4160).", ADV),
}

Sources = Annotated[
    list[str],
    typer.Argument(
        help="Parquet files, globs or directories; trainer overrides "
        "(++grpo.time_efficiency.lambda_time=0.0166) may follow.",
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
RunConfigOpt = Annotated[
    Path | None,
    typer.Option(
        "--config",
        help="NeMo-RL run config YAML (grpo.time_efficiency.*, adv_estimator.*, clip, mask).",
        exists=True,
        dir_okay=False,
        rich_help_panel=IN,
    ),
]
IgnoreUnknownOpt = Annotated[
    bool,
    typer.Option(
        "--ignore-unknown-overrides",
        help="Skip trainer overrides that do not affect the replay.",
        rich_help_panel=IN,
    ),
]
OutOpt = Annotated[
    Path, typer.Option("--out", "-o", help="Report directory to create.", rich_help_panel=OUT)
]
ForceOpt = Annotated[
    bool, typer.Option("--force", help="Replace an existing report directory.", rich_help_panel=OUT)
]


HighlightOpt = Annotated[
    str | None,
    typer.Option(
        "--highlight",
        help="Configs drawn step by step (config ids, id prefixes or labels, comma separated); "
        "default: shaping off plus the best and the worst by the frontier.",
        rich_help_panel=OUT,
        show_default=False,
    ),
]


def highlight_ids(value: str | None) -> list[str] | None:
    """The --highlight list, or None for the default choice."""
    if not value:
        return None
    return [v.strip() for v in value.split(",") if v.strip()]


def single_values(raw: dict[str, str | None]) -> dict[str, Any]:
    """Flags of `replay`: one value each (a comma list belongs to `sweep`)."""
    out = {}
    for name, text in raw.items():
        if text is None:
            continue
        if "," in text:
            flag = "--" + name.replace("_", "-")
            raise ConfigError(
                f"{flag} takes one value in `replay`; use `replay-cli sweep` for {text!r}."
            )
        out[name] = parse_value(name, text)
    return out


def list_values(raw: dict[str, str | None]) -> dict[str, list[Any]]:
    """Flags of `sweep`: comma lists, one grid axis each."""
    return {name: parse_list(name, text) for name, text in raw.items() if text is not None}


def base_layer(
    sources: list[str], run_config: Path | None, ignore_unknown: bool
) -> tuple[list[str], dict[str, Any]]:
    """Split paths from overrides; defaults < run config file < overrides (flat parameters)."""
    paths = [s for s in sources if not is_override(s)]
    overrides, ignored = parse_overrides(
        [s for s in sources if is_override(s)], ignore_unknown=ignore_unknown
    )
    if ignored:
        typer.echo(f"Ignored trainer overrides: {', '.join(ignored)}", err=True)
    base = flatten(read_run_config(run_config)) if run_config is not None else {}
    base.update(flatten(overrides))
    return paths, base


RowsOpt = Annotated[
    str,
    typer.Option(
        "--rows",
        help="Per-row table: all | sample (about 1 group in 20) | none.",
        rich_help_panel=OUT,
    ),
]
ChunkRowsOpt = Annotated[
    int,
    typer.Option(
        "--chunk-rows",
        min=1,
        help="Rows per chunk of whole steps (bounds memory).",
        rich_help_panel=IN,
    ),
]


def rows_mode(value: str) -> str:
    """Check a --rows value."""
    if value not in ("all", "sample", "none"):
        raise ConfigError(f"--rows expects all, sample or none, got {value!r}.")
    return value


EngineOpt = Annotated[
    str,
    typer.Option(
        "--engine",
        help="local | ray (tasks of whole steps x config batches on a Ray cluster).",
        rich_help_panel=IN,
    ),
]
RayAddressOpt = Annotated[
    str | None,
    typer.Option(
        "--ray-address",
        help="Ray cluster to join (default: start a local one).",
        rich_help_panel=IN,
    ),
]


def engine_name(value: str) -> str:
    """Check an --engine value."""
    if value not in ("local", "ray"):
        raise ConfigError(f"--engine expects local or ray, got {value!r}.")
    return value


_PY_NAMES = {"filter": "filter_"}  # parameters whose Python argument name differs


def command_values(args: dict[str, Any], names: Iterable[str]) -> dict[str, str | None]:
    """The named parameters' values among a command's arguments (pass `locals()`)."""
    return {n: args[_PY_NAMES.get(n, n)] for n in names if _PY_NAMES.get(n, n) in args}
