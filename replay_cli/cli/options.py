"""Option types shared by the replay-cli commands, the parameter options derived from the registry
(parameters.py), and the error boundary (exit code 2).

`with_parameters(mode)` gives a command one option per replay parameter, generated from the pydantic
fields: `replay` and `explain` take one value (choices as enums, booleans as switches), `sweep`
takes comma lists. The command receives them as one flat dict, `params`."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum, StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from replay_cli import parameters as P
from replay_cli.errors import ReplayError

IN, OUT = "Input", "Output"
InOption = functools.partial(typer.Option, rich_help_panel=IN)
OutOption = functools.partial(typer.Option, rich_help_panel=OUT)
"""`typer.Option` in the Input or the Output panel of --help."""
INJECTED: Any = None
"""Default of the arguments with_parameters fills in (`params`, `inputs`, `run`)."""
Mode = Literal["replay", "sweep", "explain"]


@contextmanager
def user_errors() -> Iterator[None]:
    """Bad input or usage: one readable message on stderr and exit code 2, no traceback."""
    try:
        yield
    except ReplayError as exc:
        typer.echo(f"Error: {exc}", err=True)
        raise typer.Exit(2) from None


def _complete(choices: tuple[str, ...]) -> Callable[[str], list[str]]:
    """Shell completion of the last item of a comma list."""

    def complete(incomplete: str) -> list[str]:
        head, _, last = incomplete.rpartition(",")
        prefix = f"{head}," if head else ""
        return [prefix + c for c in choices if c.startswith(last)]

    return complete


def _default(p: P.Param) -> str:
    """The parameter's default for its --help line, unless the help already says it."""
    return "" if "default:" in p.help else f"  [default: {p.default_text}]"


def _option(p: P.Param, mode: Mode) -> tuple[Any, Any]:
    """(annotation, default) of one parameter's option in a command of this mode."""
    common = {"help": p.help, "rich_help_panel": p.panel, "show_default": False}
    if mode == "sweep":
        extra = " Comma list: true,false." if p.kind == "bool" else " Comma list."
        if p.choices:
            extra = f" Comma list of: {', '.join(p.choices)}."
            common["autocompletion"] = _complete(p.choices)
        option = typer.Option(p.flag, **{**common, "help": p.help + extra + _default(p)})
        return Annotated[str | None, option], None
    if p.kind == "bool":  # a switch, unset by default; its help says what passing it does
        option = typer.Option(p.switch, **{**common, "help": p.switch_help})
        return Annotated[bool, option], False
    common["help"] += _default(p)
    if p.kind == "choice":  # text, checked by the one parser (`sweep`'s message, did-you-mean)
        common["autocompletion"] = _complete(p.choices)
        option = typer.Option(p.flag, metavar=f"<{'|'.join(p.choices)}>", **common)
        return Annotated[str | None, option], None
    return Annotated[str | None, typer.Option(p.flag, **common)], None


def _params_for(mode: Mode) -> list[P.Param]:
    chosen = P.registry().values()
    if mode == "replay":
        return [p for p in chosen if p.replay]
    if mode == "explain":
        return [p for p in chosen if p.explain]
    return list(chosen)


def _translate(mode: Mode, given: dict[str, Any]) -> dict[str, Any]:
    """The options' values as flat parameters (only those given)."""
    if mode == "sweep":
        return P.list_values(given)
    params = P.registry()
    raw: dict[str, Any] = {}
    for name, value in given.items():
        if params[name].kind == "bool":
            raw[name] = (not params[name].default) if value else None
        else:
            raw[name] = value.value if isinstance(value, Enum) else value
    return P.single_values(raw)


def with_parameters(mode: Mode) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Replace a command's `params` argument by one option per replay parameter."""

    def wrap(func: Callable[..., None]) -> Callable[..., None]:
        hints = typing.get_type_hints(func, include_extras=True)
        own = [
            p.replace(annotation=hints.get(p.name, p.annotation))
            for p in inspect.signature(func).parameters.values()
        ]
        at = next(i for i, p in enumerate(own) if p.name == "params")
        chosen = _params_for(mode)
        generated = []
        for p in chosen:
            annotation, default = _option(p, mode)
            generated.append(
                inspect.Parameter(
                    p.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
                )
            )
        bundles = {p.name: BUNDLES[p.name] for p in own if p.name in BUNDLES}
        keyword = [
            p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
            for p in own[at + 1 :]
            if p.name not in bundles
        ]
        injected = [q for cls in bundles.values() for q in _bundle_parameters(cls)]
        signature = inspect.Signature([*own[:at], *generated, *keyword, *injected])
        names = {p.name for p in chosen}

        @functools.wraps(func)
        def command(*args: Any, **kwargs: Any) -> None:
            given = {n: kwargs.pop(n) for n in list(kwargs) if n in names}
            for arg, cls in bundles.items():
                values = {f.name: kwargs.pop(f.name) for f in dataclasses.fields(cls)}
                kwargs[arg] = cls(**values)
            with user_errors():
                flat = _translate(mode, given)
            func(*args, params=flat, **kwargs)

        del command.__wrapped__  # Typer must read the generated signature, not the original
        command.__signature__ = signature  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in signature.parameters.values()}
        return command

    return wrap


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
    list[str] | None, InOption("--map", help="Rename a column: SRC=DST (repeatable).")
]
GroupSizeOpt = Annotated[
    int | None, InOption("--group-size", help="No group column: N consecutive rows form a group.")
]
StrictOpt = Annotated[bool, InOption("--strict", help="NaN or infinite run times are an error.")]
RunConfigOpt = Annotated[
    Path | None,
    InOption(
        "--config",
        help="NeMo-RL run config YAML (grpo.time_efficiency.*, adv_estimator.*, clip, mask).",
        exists=True,
        dir_okay=False,
    ),
]
IgnoreUnknownOpt = Annotated[
    bool,
    InOption(
        "--ignore-unknown-overrides", help="Skip trainer overrides that do not affect the replay."
    ),
]
OutOpt = Annotated[Path, OutOption("--out", "-o", help="Report directory to create.")]
ForceOpt = Annotated[bool, OutOption("--force", help="Replace an existing report directory.")]
TensorBoardOpt = Annotated[
    Path | None,
    OutOption(
        "--tensorboard",
        help="Also write one TensorBoard run per config here (trainer tags, replay/ diagnostics, "
        "HParams); needs the extra replay-cli[tensorboard].",
        show_default=False,
        file_okay=False,
    ),
]
WandbOpt = Annotated[
    Path | None,
    OutOption(
        "--wandb",
        help="Also write one offline W&B run per config here (config = the parameters and launch "
        "overrides, history = the trainer's tags, summary = the decision's numbers, the role as a "
        "tag, one group per report); `wandb sync` uploads them. Needs the extra replay-cli[wandb].",
        show_default=False,
        file_okay=False,
    ),
]
HighlightOpt = Annotated[
    str | None,
    OutOption(
        "--highlight",
        help="Configs drawn step by step (config ids, id prefixes or labels, comma separated); "
        "default: shaping off, the recommended and the runner-up configs.",
        show_default=False,
    ),
]
Rows = StrEnum("Rows", ["all", "sample", "none"])
"""--rows: how much of the per-row table to write."""
EngineName = StrEnum("EngineName", ["local", "ray"])
"""--engine: where the work runs."""
RowsOpt = Annotated[
    Rows, OutOption("--rows", help="Per-row table: all, a sample (about 1 group in 20) or none.")
]
ChunkRowsOpt = Annotated[
    int, InOption("--chunk-rows", min=1, help="Rows per chunk of whole steps (bounds memory).")
]
EngineOpt = Annotated[
    EngineName,
    InOption(
        "--engine", help="local, or ray (tasks of whole steps x config batches on a Ray cluster)."
    ),
]
RayAddressOpt = Annotated[
    str | None, InOption("--ray-address", help="Ray cluster to join (default: start a local one).")
]


StepKlOpt = Annotated[
    float,
    typer.Option(
        "--step-kl",
        min=1e-9,
        help="The step budget of the effort model (the first-step diagnostic and each forecast step): mean KL per problem (nats) of one step, the "
        "same for every config.",
        rich_help_panel="Decision",
    ),
]
ResamplesOpt = Annotated[
    int,
    typer.Option(
        "--resamples",
        min=0,
        help="Bootstrap resamples over problems for the intervals (0: none).",
        rich_help_panel="Decision",
    ),
]


ForecastOpt = Annotated[
    bool,
    typer.Option(
        "--forecast/--no-forecast",
        help="Forecast T steps of training under each config: the outcome the rule reads "
        "(forecast.parquet, a chart, a section of index.html). --no-forecast is faster, and the "
        "verdict then does not judge resolve rate.",
        rich_help_panel="Decision",
    ),
]
StepsOpt = Annotated[
    int,
    typer.Option(
        "--steps",
        min=1,
        help="The horizon T: the training steps you plan; the rule reads the outcome after them.",
        rich_help_panel="Decision",
    ),
]
SeedsOpt = Annotated[
    int,
    typer.Option(
        "--seeds",
        min=1,
        help="Forecast: seeds, each with its own problem sample and draws.",
        rich_help_panel="Decision",
    ),
]
FitOpt = Annotated[
    bool,
    typer.Option(
        "--fit/--no-fit",
        help="Forecast: fit what effort buys, skill and the step's size to the logged shaping-off "
        "run where it identifies them (a run's log naming its problems over many steps; not a "
        "log from a fixed checkpoint, whose flat steps it would misread), instead of the "
        "cautious reading; the backtest then checks the fit.",
        rich_help_panel="Decision",
    ),
]
PilotOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--pilot",
        help="A run trained with shaping on, as evidence: LOG::SETTINGS, its rollout log and the "
        "config it was trained with (a run config YAML and/or ++ overrides, space separated), "
        "e.g. 'pilot.parquet::++grpo.time_efficiency.lambda_time=1/30 "
        "++grpo.time_efficiency.apply_to=correct'. The forecast of that config from the pilot's "
        "start is backtested on its last third, beside your log's. Repeatable.",
        rich_help_panel="Decision",
        show_default=False,
    ),
]
ProblemsOpt = Annotated[
    int,
    typer.Option(
        "--problems",
        min=1,
        help="Forecast: problems sampled per length bucket and seed (all where fewer).",
        rich_help_panel="Decision",
    ),
]


def highlight_ids(value: str | None) -> list[str] | None:
    """The --highlight list, or None for the default choice."""
    if not value:
        return None
    return [v.strip() for v in value.split(",") if v.strip()]


ChartsOpt = Annotated[bool, OutOption("--charts/--no-charts", help="Render PNG charts.")]


@dataclass(frozen=True)
class InputOptions:
    """Where the inputs and the parameter layers below the flags come from (injected by
    with_parameters into a command that takes `inputs`)."""

    run_config: Path | None
    map_: list[str] | None
    group_size: int | None
    strict: bool
    ignore_unknown_overrides: bool

    def layers(self, sources: list[str]) -> tuple[list[str], dict[str, Any]]:
        """(paths, flat parameters: run config < overrides); reports ignored overrides."""
        paths, base, ignored = P.base_layer(sources, self.run_config, self.ignore_unknown_overrides)
        if ignored:
            typer.echo(f"Ignored trainer overrides: {', '.join(ignored)}", err=True)
        return paths, base

    def load_args(self) -> dict[str, Any]:
        """Keyword arguments of api.load and the commands that load."""
        return {"mapping": self.map_, "group_size": self.group_size, "strict": self.strict}


@dataclass(frozen=True)
class RunOptions:
    """The output, engine and measure options `replay` and `sweep` share (injected into `run`)."""

    force: bool
    rows: Rows
    chunk_rows: int
    engine: EngineName
    ray_address: str | None
    highlight: str | None
    tensorboard: Path | None
    wandb: Path | None
    step_kl: float
    resamples: int
    forecast: bool
    steps: int
    seeds: int
    problems: int
    fit: bool
    pilot: list[str] | None

    def pilots(self) -> tuple[Any, ...]:
        """The `--pilot` runs, each with the config it was trained with (`config.Pilot`)."""
        from replay_cli.config import Pilot

        read = [P.read_pilot(text) for text in self.pilot or ()]
        return tuple(Pilot(path=path, config=P.to_config(flat)) for path, flat in read)

    def report_options(self, charts: bool) -> Any:
        """The report's `ReportOptions` (imported here: `--help` loads no pydantic models)."""
        from replay_cli.config import EffortSettings, ForecastSettings
        from replay_cli.report.options import ReportOptions

        ahead = None
        if self.forecast:
            ahead = ForecastSettings(
                steps=self.steps, seeds=self.seeds, problems=self.problems, fit=self.fit
            )

        return ReportOptions(
            force=self.force,
            charts=charts,
            rows=self.rows.value,
            chunk_rows=self.chunk_rows,
            engine=self.engine.value,
            ray_address=self.ray_address,
            highlight=tuple(highlight_ids(self.highlight) or ()),
            tensorboard=self.tensorboard,
            wandb=self.wandb,
            effort=EffortSettings(step_kl=self.step_kl, resamples=self.resamples),
            forecast=ahead,
            pilots=self.pilots(),
        )


def _option_types() -> dict[str, tuple[Any, Any]]:
    """Annotation and default of every injected option."""
    from replay_cli import defaults as D

    return {
        "force": (ForceOpt, False),
        "rows": (RowsOpt, Rows.all),
        "chunk_rows": (ChunkRowsOpt, D.DEFAULT_CHUNK_ROWS),
        "engine": (EngineOpt, EngineName.local),
        "ray_address": (RayAddressOpt, None),
        "highlight": (HighlightOpt, None),
        "tensorboard": (TensorBoardOpt, None),
        "wandb": (WandbOpt, None),
        "step_kl": (StepKlOpt, D.STEP_KL),
        "resamples": (ResamplesOpt, D.RESAMPLES),
        "forecast": (ForecastOpt, True),
        "steps": (StepsOpt, D.STEPS),
        "seeds": (SeedsOpt, D.SEEDS),
        "problems": (ProblemsOpt, D.PROBLEMS),
        "fit": (FitOpt, D.FIT),
        "pilot": (PilotOpt, None),
        "run_config": (RunConfigOpt, None),
        "map_": (MapOpt, None),
        "group_size": (GroupSizeOpt, None),
        "strict": (StrictOpt, False),
        "ignore_unknown_overrides": (IgnoreUnknownOpt, False),
    }


BUNDLES: dict[str, type] = {"run": RunOptions, "inputs": InputOptions}
"""Argument name -> the dataclass whose fields become injected options."""


def _bundle_parameters(cls: type) -> list[inspect.Parameter]:
    types = _option_types()
    return [
        inspect.Parameter(
            f.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=types[f.name][1],
            annotation=types[f.name][0],
        )
        for f in dataclasses.fields(cls)
    ]
