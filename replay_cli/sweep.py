"""Sweep specifications: comma lists and grid files -> the Cartesian product of ReplayConfigs."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from replay_cli.config import AdvantageParams, ReplayConfig, ShapingParams, build_config
from replay_cli.errors import ConfigError
from replay_cli.params import NONE_WORDS, parse_number, read_yaml

# flat parameter name -> section of the nested config ("" = top level)
SECTIONS: dict[str, str] = {
    **dict.fromkeys(ShapingParams.model_fields, "shaping"),
    **dict.fromkeys(AdvantageParams.model_fields, "advantage"),
    "metrics_by": "",
}
_NULLABLE_NUMBERS = {"floor", "call_bonus_ref", "clip_low", "clip_high"}
_NUMBERS = {"lambda_time", "lambda_call_bonus"} | _NULLABLE_NUMBERS
_BOOLS = {"enabled", "mask_flagged", "normalize", "exclude_masked"}
_TRUE, _FALSE = {"true", "yes", "on", "1"}, {"false", "no", "off", "0"}


def parse_value(name: str, value: Any) -> Any:
    """One sweep value from text or YAML: numbers and fractions, none, booleans, item sets (1+3)."""
    if name not in SECTIONS:
        raise ConfigError(
            f"Unknown sweep parameter {name!r}.\n\nKnown: {', '.join(sorted(SECTIONS))}"
        )
    flag = "--" + name.replace("_", "-")
    if name in _NUMBERS:
        if value is None or (isinstance(value, int | float) and not isinstance(value, bool)):
            return None if value is None else float(value)
        return parse_number(str(value), flag, allow_none=name in _NULLABLE_NUMBERS)
    if name in _BOOLS:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in _TRUE | _FALSE:
            return text in _TRUE
        raise ConfigError(f"{flag} expects true or false, got {value!r}.")
    if name == "internal_items":
        if value is None or str(value).strip().lower() in NONE_WORDS:
            return None
        if isinstance(value, list | tuple):
            return tuple(int(v) for v in value)
        try:
            return tuple(int(v) for v in str(value).replace(" ", "").split("+") if v)
        except ValueError:
            raise ConfigError(
                f"{flag} expects item numbers joined by '+', got {value!r}."
            ) from None
    return str(value).strip()


def parse_list(name: str, text: str) -> list[Any]:
    """`--lambda-time 0,1/120,1/60` -> [0.0, 0.00833, 0.01667]."""
    items = text.split(",")
    if not any(t.strip() for t in items):
        raise ConfigError(f"--{name.replace('_', '-')} needs at least one value.")
    return [parse_value(name, t) for t in items]


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


def nest(flat: dict[str, Any]) -> dict[str, Any]:
    """Flat parameters -> the nested dict ReplayConfig expects."""
    out: dict[str, Any] = {"shaping": {}, "advantage": {}}
    for name, value in flat.items():
        section = SECTIONS[name]
        if section:
            out[section][name] = value
        else:
            out[name] = value
    return out


def flatten(nested: dict[str, Any]) -> dict[str, Any]:
    """The inverse of nest for the layers built from flags, overrides and run configs."""
    flat = {k: v for k, v in nested.items() if k not in ("shaping", "advantage")}
    flat.update(nested.get("shaping", {}))
    flat.update(nested.get("advantage", {}))
    return flat


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
            cfg = build_config(nest(flat))
        except ConfigError as exc:
            shown = ", ".join(f"{k}={v}" for k, v in flat.items())
            raise ConfigError(f"Sweep point ({shown}) is invalid.\n{exc}") from None
        configs.setdefault(cfg.config_id, cfg)
    return list(configs.values())
