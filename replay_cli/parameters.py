"""Every replay parameter, read once from the pydantic fields of config.py, and every way a value
arrives: CLI text (one value or a comma list), the trainer's `++` overrides, a NeMo-RL run config
and a grid file. Each becomes a flat dict {name: value}; `to_config` and `expand` turn flat dicts
into ReplayConfigs. Adding a parameter means declaring its field in config.py, nothing here.
"""

from __future__ import annotations

import difflib
import itertools
import types
import typing
from dataclasses import dataclass
from enum import Enum
from fractions import Fraction
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic.fields import FieldInfo

from replay_cli.config import AdvantageParams, ReplayConfig, ShapingParams, build_config
from replay_cli.errors import ConfigError
from replay_cli.io.run_config import lookup, read_tree, read_yaml, resolve

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

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def switch(self) -> str:
        """`replay`'s flag for a boolean: the one that leaves the default."""
        return f"--no-{self.name.replace('_', '-')}" if self.default else self.flag

    def enum(self) -> type[Enum]:
        """The choices as a str Enum (Typer shows them in --help and completes them)."""
        return _enum(self.name, self.choices)


@cache
def _enum(name: str, choices: tuple[str, ...]) -> type[Enum]:
    title = "".join(part.title() for part in name.split("_"))
    return Enum(title, {c: c for c in choices}, type=str)  # type: ignore[return-value]


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


def _param(name: str, section: str, field: FieldInfo) -> Param:
    extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
    kind, choices = _kind(field.annotation)
    return Param(
        name=name,
        section=section,
        kind=kind,
        default=field.default,
        help=field.description or "",
        panel=str(extra.get("panel", "")),
        choices=choices,
        trainer=tuple(extra.get("trainer", ())),  # type: ignore[arg-type]
        replay=bool(extra.get("replay", True)),
        explain=bool(extra.get("explain", True)),
        label=extra.get("label"),  # type: ignore[arg-type]
    )


@cache
def registry() -> dict[str, Param]:
    """Every parameter by name, in declaration order (shaping, advantage, then metrics_by)."""
    out: dict[str, Param] = {}
    for section, model in (("shaping", ShapingParams), ("advantage", AdvantageParams)):
        for name, field in model.model_fields.items():
            out[name] = _param(name, section, field)
    out["metrics_by"] = _param("metrics_by", "", ReplayConfig.model_fields["metrics_by"])
    return out


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
    if isinstance(value, Enum):
        value = value.value
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
        out[name] = _from_trainer(key, value)
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


def read_run_config(path: str | Path) -> dict[str, Any]:
    """The replay parameters a NeMo-RL run config sets (its trainer keys), as flat values."""
    tree = read_tree(Path(path))
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


# ---- grid files ----------------------------------------------------------------------------


def read_grid(
    path: str | Path,
) -> tuple[dict[str, list[Any]], list[dict[str, Any]], dict[str, Any]]:
    """A grid file: `grid:` (parameter -> list), optional `configs:` (explicit points), `base:`.

    A file without those keys is read as a bare `grid:` mapping.
    """
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
        section = params[name].section
        if section:
            out[section][name] = value
        else:
            out[name] = value
    return out


def to_config(flat: dict[str, Any]) -> ReplayConfig:
    """One ReplayConfig from flat parameters (pydantic errors become one ConfigError)."""
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
