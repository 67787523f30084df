"""How a number is written for a reader, the same in the page's tables and the charts' labels."""

from __future__ import annotations

import math
from typing import Any


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
