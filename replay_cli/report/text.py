"""How a number is written for a reader, the same in the page's tables and the charts' labels."""

from __future__ import annotations

import math
from typing import Any

from replay_cli.config import lambda_text


def fmt(value: Any) -> str:
    """A number as a reader wants it in a table: 4 significant digits, '-' for missing."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value == 0:
            return "0"
        if abs(value) >= 1e5 or abs(value) < 1e-3:
            return f"{value:.3g}"
        return f"{value:.4g}"
    return str(value)


def param_text(name: str, value: Any) -> str:
    """A parameter value as the user writes it: 'none' for an unset one, lambda_time as 1/60
    where it is one over whole minutes."""
    if value is None or value == "":
        return "none"
    if name == "lambda_time" and isinstance(value, float):
        return lambda_text(value)
    return fmt(value)


def share(value: Any) -> str:
    """A share as a percentage ('-' for missing)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.1%}" if abs(value) < 10 else f"{value:.0%}"
