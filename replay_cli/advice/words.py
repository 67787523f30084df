"""How numbers are written for a reader, the same in every sentence, table and chart label: shares
as percentages with the digits they need, pushes to three digits (rounding-sized ones as 0), a
missing summary value as 0, table cells to 4 significant digits, parameters as the user writes
them."""

from __future__ import annotations

import math
from typing import Any

from replay_cli.config import lambda_text
from replay_cli.maths.thresholds import MINUTES_EPS

NO_LONG_PROBLEMS = "no long problems in this input"
"""Said where a long-problem metric is null (the long bucket has no group): a null is no 0."""


def pct(x: float) -> str:
    """A share as a percentage: 12%, 4.3%, 0.05%."""
    return f"{x:.0%}" if abs(x) >= 0.1 or x == 0 else f"{x:.1%}" if abs(x) >= 0.001 else f"{x:.2%}"


def num(row: dict[str, Any], key: str) -> float:
    """A summary value as a float, 0 where the report has none."""
    value = row.get(key)
    return 0.0 if value is None else float(value)


def minutes_text(x: float, signed: bool = True) -> str:
    """Minutes for a reader: '−0.34 min' (signed) or '0.34 min'; 0 within MINUTES_EPS."""
    if abs(x) <= MINUTES_EPS:
        return "0 min"
    text = f"{x:+.2g}" if signed else f"{abs(x):.2g}"
    return f"{text.replace('-', '−')} min"


def minutes_shift(x: float, less: str, more: str, per: str = "") -> str:
    """A change in minutes with its direction as a word, the sign never dropped: '0.34 min
    sooner' for −0.34 and '0.34 min later' for +0.34 (less='sooner', more='later'; `per`, e.g.
    ' per step', follows the amount), 'no sooner or later' within MINUTES_EPS."""
    if abs(x) <= MINUTES_EPS:
        return f"no {less} or {more}"
    return f"{minutes_text(x, signed=False)}{per} {less if x < 0 else more}"


def sooner_than_off(x: float) -> str:
    """A minute change against shaping off in words, by its sign: '0.34 min sooner than under
    shaping off', '… later …', or 'as soon as under shaping off' within MINUTES_EPS."""
    if abs(x) <= MINUTES_EPS:
        return "as soon as under shaping off"
    return f"{minutes_shift(x, 'sooner', 'later')} than under shaping off"


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
