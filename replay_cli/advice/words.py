"""How the advice writes its numbers, the same in every sentence: shares as percentages with the
digits they need, pushes to three digits (rounding-sized ones as 0), a missing value as 0."""

from __future__ import annotations

from typing import Any

from replay_cli.maths.thresholds import PUSH_EPS


def pct(x: float) -> str:
    """A share as a percentage: 12%, 4.3%, 0.05%."""
    return f"{x:.0%}" if abs(x) >= 0.1 or x == 0 else f"{x:.1%}" if abs(x) >= 0.001 else f"{x:.2%}"


def num(row: dict[str, Any], key: str) -> float:
    """A summary value as a float, 0 where the report has none."""
    value = row.get(key)
    return 0.0 if value is None else float(value)


def push_text(x: float) -> str:
    """A push for a reader: 0 within PUSH_EPS (rounding), else 3 significant digits."""
    return "0" if abs(x) <= PUSH_EPS else f"{x:.3g}"
