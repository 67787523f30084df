"""How the recommendation's roles look, the same in the SVG frontier of index.html and in the PNG
frontier: one colour and one legend name per role, and points that coincide drawn as one."""

from __future__ import annotations

from typing import Any

import polars as pl

from replay_cli import catalogue as C
from replay_cli import schema as S

STYLES: dict[str, tuple[str, str]] = {
    "unrated": ("unrated (the rule could not judge it)", "#9e9e9e"),
    "avoid": ("avoid (fails the rule)", "#c62828"),
    "eligible": ("eligible", "#4263c9"),
    "runner-up": ("runner-up", "#7cb342"),
    "off": ("shaping off", "#1d2330"),
    "recommended": ("recommended", "#2e7d32"),
}
"""Display role -> (legend name, colour), in drawing order: the recommended point is drawn last,
on top of any other."""
FRONTIER_Y = "solve Δ at T vs shaping off (min; negative = sooner, drawn up)"
"""Both frontiers' y label: the rule's minutes signed as every table signs them (negative =
sooner), with sooner drawn upward so that the best configs sit top right."""


def display_role(row: dict[str, Any]) -> str:
    """A frontier row's display role: its recommendation role, except that shaping off is shown
    as such unless it is the recommendation itself."""
    role = row.get(C.ROLE) or "avoid"
    return "off" if row.get("off") and role != "recommended" else role


def point_groups(front: pl.DataFrame, x: str, y: str, digits: int = 6) -> list[dict[str, Any]]:
    """The frontier's points with coincident ones (equal x and y to `digits` significant digits)
    merged: each carries every config number, id and label it stands for, and the role that
    draws on top. Returned in drawing order (the recommended point last)."""
    numbered = front.with_row_index("n", offset=1)
    merged: dict[tuple[float, float], dict[str, Any]] = {}
    order = list(STYLES)
    for row in numbered.iter_rows(named=True):
        key = (float(f"{row[x]:.{digits}g}"), float(f"{row[y]:.{digits}g}"))
        role = display_role(row)
        point = merged.setdefault(
            key, {x: row[x], y: row[y], "n": [], "ids": [], "labels": [], C.ROLE: role}
        )
        point["n"].append(row["n"])
        point["ids"].append(row[S.CONFIG_ID])
        point["labels"].append(row["label"])
        if order.index(role) > order.index(point[C.ROLE]):
            point[C.ROLE] = role
    return sorted(merged.values(), key=lambda p: order.index(p[C.ROLE]))
