"""Every replay parameter, read once from the pydantic fields of config.py, and every way a value
arrives: CLI text (one value or a comma list), the trainer's `++` overrides, a NeMo-RL run config
and a grid file. Each becomes a flat dict {name: value}; `to_config` and `expand` turn flat dicts
into ReplayConfigs. Adding a parameter means declaring its field in config.py, nothing here."""

from __future__ import annotations

import dataclasses
import difflib
import itertools
import shlex
import types
import typing
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from replay_cli import param_snapshot
from replay_cli.defaults import lambda_text
from replay_cli.errors import ConfigError
from replay_cli.io.run_config import lookup, read_tree, read_yaml, resolve

if TYPE_CHECKING:
    from pydantic.fields import FieldInfo

    from replay_cli.config import ReplayConfig

Kind = Literal["number", "optional_number", "bool", "choice", "items"]
NONE_WORDS = {"none", "null", "off", ""}
_TRUE, _FALSE = {"true", "yes", "on", "1"}, {"false", "no", "off", "0"}


@dataclass(frozen=True)
class Param:
    """One parameter as the field declares it: where it lives, how its text parses, its flags."""

    name: str
    section: str  # "shaping", "advantage" or "" (top level of ReplayConfig)
    kind: Kind
    default: Any
    help: str
    panel: str
    choices: tuple[str, ...]
    trainer: tuple[str, ...]
    replay: bool
    explain: bool
    label: str | None
    off: str | None = None

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def switch(self) -> str:
        """`replay`'s flag for a boolean: the one that leaves the default."""
        return f"--no-{self.name.replace('_', '-')}" if self.default else self.flag

    @property
    def switch_help(self) -> str:
        """`replay`'s help for a boolean's switch: what passing it does. A switch that leaves a
        true default turns the setting off, so it says so, not what the default does."""
        return self.off if self.default and self.off is not None else self.help

    @property
    def default_text(self) -> str:
        """The default as --help shows it, written the way the option takes it (1/60, none)."""
        if self.default is None:
            return "none"
        if self.kind == "bool":
            return "true" if self.default else "false"
        if self.name == "lambda_time":
            return lambda_text(self.default)
        if isinstance(self.default, float):
            return f"{self.default:g}"
        return str(self.default)


def _kind(annotation: Any) -> tuple[Kind, tuple[str, ...]]:
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is Literal:
        return "choice", tuple(args)
    if annotation is bool:
        return "bool", ()
    if annotation is float:
        return "number", ()
    if isinstance(annotation, types.UnionType) and float in args:
        return "optional_number", ()
    return "items", ()


PANELS = {"shaping": "Shaping", "advantage": "Advantages", "": "Output"}
"""The CLI help panel of each section's options."""


def _param(name: str, section: str, field: FieldInfo) -> Param:
    extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
    kind, choices = _kind(field.annotation)
    return Param(
        name=name,
        section=section,
        kind=kind,
        default=field.default,
        help=field.description or "",
        panel=PANELS[section],
        choices=choices,
        trainer=tuple(extra.get("trainer", ())),  # type: ignore[arg-type]
        replay=bool(extra.get("replay", True)),
        explain=bool(extra.get("explain", True)),
        label=extra.get("label"),  # type: ignore[arg-type]
        off=extra.get("off"),  # type: ignore[arg-type]
    )


@cache
def registry() -> dict[str, Param]:
    """Every parameter by name, in declaration order (shaping, advantage, then metrics_by).

    Read from param_snapshot.py while config.py is the file it was written from (its hash):
    building the pydantic models costs about as much as importing typer and pydantic, and
    `--help` needs only these fields. After an edit of config.py the fields are read from the
    models until `python -m replay_cli.parameters` rewrites the snapshot."""
    if config_sha256() == param_snapshot.CONFIG_SHA256:
        return {fields["name"]: Param(**fields) for fields in param_snapshot.PARAMS}
    return derived_registry()


def config_sha256() -> str | None:
    """The hash of config.py's text (None where it cannot be read, e.g. from a zip)."""
    import hashlib

    try:
        return hashlib.sha256(Path(__file__).with_name("config.py").read_bytes()).hexdigest()
    except OSError:
        return None


def derived_registry() -> dict[str, Param]:
    """`registry` read from the pydantic fields of config.py, the source of truth."""
    from replay_cli.config import AdvantageParams, ReplayConfig, ShapingParams

    out: dict[str, Param] = {}
    for section, model in (("shaping", ShapingParams), ("advantage", AdvantageParams)):
        for name, field in model.model_fields.items():
            out[name] = _param(name, section, field)
    out["metrics_by"] = _param("metrics_by", "", ReplayConfig.model_fields["metrics_by"])
    return out


def snapshot_source() -> str:
    """The text of param_snapshot.py for the fields of config.py as they are now
    (`python -m replay_cli.parameters` rewrites the file)."""
    lines = [
        '"""Generated by `python -m replay_cli.parameters` from the fields of config.py; do not edit.',
        'tests/test_parameters.py fails when it falls behind them."""',
        "",
        f"CONFIG_SHA256 = {config_sha256()!r}",
        "",
        "PARAMS = (",
    ]
    for param in derived_registry().values():
        lines.append(f"    {dataclasses.asdict(param)!r},")
    lines.append(")")
    return "\n".join(lines) + "\n"


def trainer_keys() -> dict[str, str]:
    """Trainer key -> parameter name (the `++` override table and the run-config reader)."""
    return {key: p.name for p in registry().values() for key in p.trainer}


# ---- text -> values ------------------------------------------------------------------------


def parse_number(text: str, name: str, *, allow_none: bool = False) -> float | None:
    """A float, a fraction like `1/60`, or (when allowed) `none`."""
    value = text.strip()
    if allow_none and value.lower() in NONE_WORDS:
        return None
    try:
        return float(Fraction(value)) if "/" in value else float(value)
    except (ValueError, ZeroDivisionError):
        expected = "a number, a fraction like 1/60" + (" or none" if allow_none else "")
        raise ConfigError(f"{name} expects {expected}, got {text!r}.") from None


def parse_value(name: str, value: Any) -> Any:
    """One value from text or YAML: numbers and fractions, none, booleans, item sets (1+3)."""
    params = registry()
    if name not in params:
        raise ConfigError(
            f"Unknown sweep parameter {name!r}.\n\nKnown: {', '.join(sorted(params))}"
        )
    p = params[name]
    if p.kind in ("number", "optional_number"):
        if value is None or (isinstance(value, int | float) and not isinstance(value, bool)):
            return None if value is None else float(value)
        return parse_number(str(value), p.flag, allow_none=p.kind == "optional_number")
    if p.kind == "bool":
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in _TRUE | _FALSE:
            return text in _TRUE
        raise ConfigError(f"{p.flag} expects true or false, got {value!r}.")
    if p.kind == "choice":
        text = str(value).strip()
        if text not in p.choices:
            close = difflib.get_close_matches(text, p.choices, n=1, cutoff=0.5)
            hint = f" Did you mean {close[0]}?" if close else ""
            raise ConfigError(
                f"{p.flag} expects one of {', '.join(p.choices)}, got {value!r}.{hint}"
            )
        return text
    if p.kind == "items":
        if value is None or str(value).strip().lower() in NONE_WORDS:
            return None
        if isinstance(value, list | tuple):
            return tuple(int(v) for v in value)
        try:
            return tuple(int(v) for v in str(value).replace(" ", "").split("+") if v)
        except ValueError:
            raise ConfigError(
                f"{p.flag} expects item numbers joined by '+', got {value!r}."
            ) from None
    return str(value).strip()


def parse_list(name: str, text: str) -> list[Any]:
    """`--lambda-time 0,1/120,1/60` -> [0.0, 0.00833, 0.01667]."""
    items = text.split(",")
    if not any(t.strip() for t in items):
        raise ConfigError(f"{registry()[name].flag} needs at least one value.")
    return [parse_value(name, t) for t in items]


def single_values(raw: dict[str, Any]) -> dict[str, Any]:
    """`replay`'s flags: one value each (a comma list belongs to `sweep`); None = not given."""
    out = {}
    for name, value in raw.items():
        if value is None:
            continue
        if isinstance(value, str) and "," in value:
            raise ConfigError(
                f"{registry()[name].flag} takes one value in `replay`; use `replay-cli sweep` "
                f"for {value!r}."
            )
        out[name] = parse_value(name, value)
    return out


def list_values(raw: dict[str, str | None]) -> dict[str, list[Any]]:
    """`sweep`'s flags: comma lists, one grid axis each."""
    return {name: parse_list(name, text) for name, text in raw.items() if text is not None}


# ---- trainer overrides and run configs -----------------------------------------------------


def _from_trainer(key: str, value: Any) -> Any:
    """A trainer value as the replay parameter: NeMo-RL's leave-one-out flag names the baseline."""
    if key.endswith("use_leave_one_out_baseline"):
        if not isinstance(value, bool):
            raise ConfigError(f"Override {key} expects true or false, got {value!r}.")
        return "loo" if value else "mean"
    return value


def trainer_values(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """Known trainer keys -> flat parameters; a parameter's first trainer key beats the others."""
    keys, params = trainer_keys(), registry()
    out: dict[str, Any] = {}
    rank: dict[str, int] = {}
    for key, value in pairs:
        name = keys[key]
        order = params[name].trainer.index(key)
        if name in rank and rank[name] < order:
            continue
        value = _from_trainer(key, value)
        # One parser for every place a value is written: fractions, none, true/false, choices.
        out[name] = value if name == "baseline" else parse_value(name, value)
        rank[name] = order
    return out


def is_override(arg: str) -> bool:
    """A Hydra override looks like `++a.b=v`, `+a.b=v` or `a.b=v` (a dotted key)."""
    key, sep, _ = arg.lstrip("+").partition("=")
    return sep == "=" and (arg.startswith("+") or ("." in key and "/" not in key))


def parse_overrides(
    args: list[str], *, ignore_unknown: bool = False
) -> tuple[dict[str, Any], list[str]]:
    """Override strings -> flat parameters; returns (values, ignored keys)."""
    keys = trainer_keys()
    pairs: list[tuple[str, Any]] = []
    ignored: list[str] = []
    for arg in args:
        if arg.startswith("~"):
            raise ConfigError(f"Deletion overrides are not supported: {arg}")
        key, sep, raw = arg.lstrip("+").partition("=")
        if not sep:
            raise ConfigError(
                f"Override {arg!r} has no '='.\n\nExample: ++grpo.time_efficiency.lambda_time=0.0166"
            )
        if key not in keys:
            if ignore_unknown:
                ignored.append(key)
                continue
            close = difflib.get_close_matches(key, keys, n=1, cutoff=0.6)
            hint = (
                f"Did you mean {close[0]}?"
                if close
                else "Pass --ignore-unknown-overrides to skip trainer keys that do not affect rewards."
            )
            raise ConfigError(f"Unknown override key {key!r}.\n\n{hint}")
        import yaml  # only `++` overrides and run configs need it: `--help` does not load it

        try:
            value = yaml.safe_load(raw) if raw != "" else None
        except yaml.YAMLError:
            value = raw
        pairs.append((key, value))
    return trainer_values(pairs), ignored


TE_BLOCK = "grpo.time_efficiency."
STRICT_BLOCKS = ("grpo.time_efficiency",)
"""Run-config blocks the tool reads whole: a key there it does not know is a mistake."""
NEAR_MISS = 0.85
"""Elsewhere a key this close to one the tool reads (difflib ratio) is taken for a misspelling."""


def _misspelled(tree: dict[str, Any]) -> list[str]:
    """Keys of a run config the tool would silently ignore although they look like its own:
    every unknown key of a strict block, and near misses of a known key beside it."""
    known = set(trainer_keys())
    problems = []

    def walk(node: Any, prefix: str) -> None:
        if not isinstance(node, dict):
            return
        siblings = {k.rsplit(".", 1)[1] for k in known if k.rsplit(".", 1)[0] == prefix}
        for key, value in node.items():
            dotted = f"{prefix}.{key}" if prefix else str(key)
            if isinstance(value, dict):
                walk(value, dotted)
                continue
            if dotted in known:
                continue
            strict = prefix in STRICT_BLOCKS
            close = difflib.get_close_matches(
                str(key), siblings, n=1, cutoff=0.6 if strict else NEAR_MISS
            )
            if strict or close:
                hint = f" (did you mean {prefix}.{close[0]}?)" if close else ""
                problems.append(f"{dotted}{hint}")

    walk(tree, "")
    return problems


def read_run_config(path: str | Path) -> dict[str, Any]:
    """The replay parameters a NeMo-RL run config sets (its trainer keys), as flat values. A key
    under `grpo.time_efficiency` the tool does not know, or one anywhere that looks like a
    misspelling of a key it reads, is an error (the trainer's other settings are ignored)."""
    tree = read_tree(Path(path))
    unknown = _misspelled(tree)
    if unknown:
        raise ConfigError(
            f"{path}: unknown key{'s' if len(unknown) > 1 else ''} the replay would ignore: "
            f"{'; '.join(unknown)}.\n\nKnown under grpo.time_efficiency: "
            + ", ".join(
                sorted(k.rsplit(".", 1)[1] for k in trainer_keys() if k.startswith(TE_BLOCK))
            )
        )
    pairs = []
    for key in trainer_keys():
        try:
            raw = lookup(tree, key)
        except KeyError:
            continue
        pairs.append((key, resolve(tree, raw, key)))
    return trainer_values(pairs)


def base_layer(
    sources: list[str], run_config: Path | None, ignore_unknown: bool
) -> tuple[list[str], dict[str, Any], list[str]]:
    """Split paths from overrides; defaults < run config file < overrides. Returns the paths,
    the flat parameters and the ignored override keys."""
    paths = [s for s in sources if not is_override(s)]
    overrides, ignored = parse_overrides(
        [s for s in sources if is_override(s)], ignore_unknown=ignore_unknown
    )
    base = read_run_config(run_config) if run_config is not None else {}
    base.update(overrides)
    return paths, base, ignored


PILOT_SEP = "::"
"""`--pilot PATH::SETTINGS`: a pilot run's log, then the config it was trained with."""


def read_pilot(text: str) -> tuple[str, dict[str, Any]]:
    """`--pilot PATH::SETTINGS`: a pilot run's log and the flat parameters it was trained with.
    SETTINGS: a NeMo-RL run config YAML and/or `++` overrides, space separated (defaults < the
    YAML < the overrides); a run trained with shaping on names its shaping there."""
    path, sep, spec = text.partition(PILOT_SEP)
    if not sep or not spec.strip() or not path:
        raise ConfigError(
            f"--pilot {text!r}: name the log and the config the run was trained with, "
            f"LOG{PILOT_SEP}SETTINGS (its run config YAML or ++ overrides), e.g. --pilot "
            "'pilot.parquet::++grpo.time_efficiency.lambda_time=1/30 "
            "++grpo.time_efficiency.apply_to=correct'."
        )
    tokens = shlex.split(spec)
    flat: dict[str, Any] = {}
    try:
        for token in (t for t in tokens if not is_override(t)):
            if not Path(token).is_file():
                raise ConfigError(f"{token!r} is neither a ++ override nor a run config file.")
            flat.update(read_run_config(token))
        flat.update(parse_overrides([t for t in tokens if is_override(t)])[0])
    except ConfigError as exc:
        raise ConfigError(f"--pilot {path}: {exc}") from None
    return path, flat


# ---- grid files ----------------------------------------------------------------------------


def read_grid(
    path: str | Path,
) -> tuple[dict[str, list[Any]], list[dict[str, Any]], dict[str, Any]]:
    """A grid file: `grid:` (parameter -> list), optional `configs:` (explicit points), `base:`.

    A file without those keys is read as a bare `grid:` mapping."""
    path = Path(path)
    data = read_yaml(path, "grid file")
    if not isinstance(data, dict):
        raise ConfigError(f"Grid file {path} must be a mapping (parameter: [values, ...]).")
    if not {"grid", "configs", "base"} & data.keys():
        data = {"grid": data}
    unknown = set(data) - {"grid", "configs", "base"}
    if unknown:
        raise ConfigError(
            f"Grid file {path}: unknown top-level keys {sorted(unknown)}; use grid, configs, base."
        )
    grid_raw = data.get("grid") or {}
    if not isinstance(grid_raw, dict):
        raise ConfigError(f"Grid file {path}: `grid` must map parameters to lists.")
    grid = {}
    for name, values in grid_raw.items():
        values = values if isinstance(values, list) else [values]
        grid[name] = [parse_value(name, v) for v in values]
    configs = data.get("configs") or []
    if not isinstance(configs, list) or not all(isinstance(c, dict) for c in configs):
        raise ConfigError(f"Grid file {path}: `configs` must be a list of mappings.")
    points = [{k: parse_value(k, v) for k, v in c.items()} for c in configs]
    base = {k: parse_value(k, v) for k, v in (data.get("base") or {}).items()}
    return grid, points, base


# ---- flat dicts -> configs -----------------------------------------------------------------


def nest(flat: dict[str, Any]) -> dict[str, Any]:
    """Flat parameters -> the nested dict ReplayConfig expects."""
    params = registry()
    out: dict[str, Any] = {"shaping": {}, "advantage": {}}
    for name, value in flat.items():
        section = params[name].section  # "": a field of ReplayConfig itself
        (out[section] if section else out)[name] = value
    return out


def to_config(flat: dict[str, Any]) -> ReplayConfig:
    """One ReplayConfig from flat parameters (pydantic errors become one ConfigError)."""
    from replay_cli.config import build_config

    return build_config(nest(flat))


def expand(
    base: dict[str, Any], grid: dict[str, list[Any]], points: list[dict[str, Any]] | None = None
) -> list[ReplayConfig]:
    """The Cartesian product of `grid` over `base`, plus explicit `points`; duplicates dropped."""
    names = list(grid)
    combos = [dict(zip(names, values, strict=True)) for values in itertools.product(*grid.values())]
    if points and not grid:
        combos = []
    flats = [{**base, **combo} for combo in combos] + [{**base, **p} for p in points or []]
    configs: dict[str, ReplayConfig] = {}
    for flat in flats:
        try:
            cfg = to_config(flat)
        except ConfigError as exc:
            shown = ", ".join(f"{k}={v}" for k, v in flat.items())
            raise ConfigError(f"Sweep point ({shown}) is invalid.\n{exc}") from None
        configs.setdefault(cfg.config_id, cfg)
    return list(configs.values())


if __name__ == "__main__":
    import subprocess
    import sys

    Path(param_snapshot.__file__).write_text(snapshot_source())
    # Formatted as the rest of the tree (ruff is a dev dependency; unformatted is still right).
    subprocess.run([sys.executable, "-m", "ruff", "format", param_snapshot.__file__], check=False)
