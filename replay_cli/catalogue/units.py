"""Units and numbers for a reader, the same in every sentence, table and chart label: shares and
ratios in % (a measured one to one decimal, a threshold with the digits it needs), times in
minutes, probability changes in percentage points, table cells to 4 significant digits, and values
within a quantity's rounding as 0, with the reader's minus sign. Machine tables keep fractions and
seconds; the catalogue's metrics say their unit (`Metric.unit`) and show through `show_value`."""

from __future__ import annotations

import math
from typing import Any, Literal

Unit = Literal[
    "share",
    "ratio",
    "minutes",
    "minutes_change",
    "seconds",
    "minutes_per_step",
    "points_per_step",
    "push",
    "reward",
    "advantage",
    "count",
    "calls",
    "number",
]
UNIT_TEXT: dict[str, str] = {
    "share": "share of the whole (0-1); shown in %",
    "ratio": "ratio to shaping off's (1 = the same); shown in %",
    "minutes": "minutes",
    "minutes_change": "a change of minutes (negative: sooner)",
    "seconds": "seconds; shown in minutes",
    "minutes_per_step": "change of minutes per step of the fixed budget",
    "points_per_step": "change of a probability per step (0-1); shown in percentage points",
    "push": "advantage × property per group (first-order tilt)",
    "reward": "reward units",
    "advantage": "advantage units",
    "count": "count",
    "calls": "tool calls",
    "number": "number",
}
ZERO: dict[str, float] = {
    "minutes_per_step": 1e-9,
    "minutes_change": 1e-9,
    "points_per_step": 1e-12,
    "push": 1e-9,
    "share": 0.0,
    "ratio": 0.0,
}
"""Per unit, the magnitude at or below which a value is rounding and shown as 0 (default 1e-12)."""

HUMAN_SUFFIX: dict[str, str] = {
    "share": "_pct",
    "ratio": "_pct",
    "points_per_step": "_pts",
    "seconds": "_min",
}
"""Per unit whose human value differs from the machine one, the suffix its name takes where it
is stored in human units (a tracker's tags): a `_frac` or `_rate` key holds a fraction, never %."""


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def show_value(unit: str, value: Any) -> str:
    """A value of a unit for a person: shares and ratios in %, seconds as minutes, probability
    changes in points, rounding-sized values as 0."""
    if _missing(value):
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return value
    return _minus(_shown_number(unit, value))


def _minus(text: str) -> str:
    """A number's sign as the reader's minus, U+2212 (the '-' of a missing value stays)."""
    return "−" + text[1:] if text.startswith("-") and len(text) > 1 else text


def _shown_number(unit: str, value: float) -> str:
    """`show_value`'s number, its sign still ASCII."""
    if isinstance(value, int) and unit in ("count", "calls", "number"):
        return f"{value:,}"
    x = float(value)
    if abs(x) <= ZERO.get(unit, 1e-12):
        return "0"
    if unit in ("share", "ratio"):
        return f"{x:.1%}" if abs(x) < 10 else f"{x:.0%}"
    if unit == "seconds":
        return f"{_digits(x / 60)} min"
    if unit == "minutes":
        return f"{_digits(x)} min"
    if unit == "minutes_change":
        return f"{x:+.3g} min"
    if unit == "minutes_per_step":
        return f"{x:+.2g} min"
    if unit == "points_per_step":
        return f"{x * 100:+.2g} pts"
    if unit == "push":
        return f"{x:.3g}"
    return _digits(x)


def show_change(unit: str, delta: Any) -> str:
    """A difference between two values of a unit for a person, signed: shares and ratios in
    percentage points (+1.2 pts), minutes and seconds in minutes, rounding-sized as 0."""
    if _missing(delta):
        return "-"
    x = float(delta)
    if abs(x) <= ZERO.get(unit, 1e-12):
        return "0"
    if unit in ("share", "ratio", "points_per_step"):
        text = f"{x * 100:+.3g} pts"
    elif unit == "seconds":
        text = f"{x / 60:+.3g} min"
    elif unit in ("minutes", "minutes_change", "minutes_per_step"):
        text = f"{x:+.3g} min"
    else:
        text = f"{x:+.3g}"
    return _minus(text)


def _digits(x: float) -> str:
    """4 significant digits, scientific only far from 1."""
    return f"{x:.3g}" if abs(x) >= 1e5 or abs(x) < 1e-3 else f"{x:.4g}"


def fmt(value: Any) -> str:
    """A number as a reader wants it in a table: 4 significant digits, '-' for missing."""
    if _missing(value):
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return "0" if value == 0 else _digits(value)
    return str(value)


def pct(x: float) -> str:
    """A threshold or a share in a sentence, with the digits it needs: 95%, 4.3%, 0.05% (every
    surface writes the rule's bars so: a measured value is `percent`/`show_value`'s 95.0%)."""
    return f"{x:.0%}" if abs(x) >= 0.1 or x == 0 else f"{x:.1%}" if abs(x) >= 0.001 else f"{x:.2%}"


def percent(x: float) -> str:
    """A measured share or ratio in a sentence, one decimal as the tables show it: 47.8%."""
    return _minus(f"{x:.1%}")


def points(x: float) -> str:
    """A change of a probability in percentage points, signed, one decimal: +10.5, −0.8."""
    return _minus(f"{x * 100:+.1f}")


def minutes_text(x: float, signed: bool = True) -> str:
    """Minutes for a reader: '−0.34 min' (signed) or '0.34 min'; 0 within rounding."""
    if abs(x) <= ZERO["minutes_change"]:
        return "0 min"
    text = f"{x:+.2g}" if signed else f"{abs(x):.2g}"
    return f"{text.replace('-', '−')} min"
