"""Parse CLI parameter text: numbers with fractions (`1/60`), `none`, and merge flag/override layers."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

import yaml

from replay_cli.errors import ConfigError

NONE_WORDS = {"none", "null", "off", ""}


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


def read_yaml(path: Path, kind: str) -> Any:
    """Parse a YAML file; unreadable or invalid files are a ConfigError naming the file."""
    try:
        return yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ConfigError(f"Cannot read {kind} {path}: {exc.strerror}.") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{kind[0].upper()}{kind[1:]} {path} is not valid YAML: {exc}") from None
