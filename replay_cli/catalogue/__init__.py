"""Every metric of the report in one place, each name written once (tests/test_catalogue.py):
the lookups over the family modules; docs/architecture.md says what each module holds. Read as
`import replay_cli.catalogue as C`."""

from __future__ import annotations

from itertools import chain
from typing import Any

from replay_cli.catalogue import forecast, push, step
from replay_cli.catalogue.columns import *
from replay_cli.catalogue.diagnostics import *
from replay_cli.catalogue.forecast import *
from replay_cli.catalogue.metric import *
from replay_cli.catalogue.push import *
from replay_cli.catalogue.step import *
from replay_cli.catalogue.trainer import *
from replay_cli.catalogue.units import *

CATALOGUE: dict[str, Metric] = {
    m.name: m
    for m in chain(
        step.entries(), OTHER, TRAINER, push.entries(), forecast.entries(), forecast.fit_entries()
    )
}
"""Every metric of the summary, step and group tables, by name."""


def metric(name: str) -> Metric:
    """The catalogue's entry for a column (a plain number for a column it does not know)."""
    return CATALOGUE.get(name) or Metric(name, name, name)


def human_name(name: str) -> str:
    """A metric's name where its value is stored in human units (`Metric.human`), saying the unit
    when it is not the table's: `adv/explosion_frac` -> `adv/explosion_pct`,
    `forecast/resolve_vs_off_low@long` -> `forecast/resolve_vs_off_low_pct@long`; a metric
    whose human value is its table value keeps its name."""
    suffix = HUMAN_SUFFIX.get(metric(name).unit)
    if suffix is None:
        return name
    base, at, scope = name.partition("@")
    return f"{base.removesuffix('_frac')}{suffix}{at}{scope}"


def show(name: str, value: Any) -> str:
    """A column's value as every human surface writes it."""
    return metric(name).show(value)


def hazard(name: str, value: Any, row: dict[str, Any], bars: forecast.Bars) -> tuple[str, str]:
    """(css class, why) for a summary cell that crosses its hazard threshold under the rule's
    `bars`, else ('', '')."""
    m = CATALOGUE.get(name)
    if m is None or m.hazard is None or value is None or not isinstance(value, int | float):
        return "", ""
    return m.hazard(float(value), row, bars) or ("", "")


def field_metadata(name: str) -> dict[str, str] | None:
    """A metric column's Parquet field metadata (description and machine unit), or None."""
    m = CATALOGUE.get(name)
    if m is None:
        return None
    return {"description": m.description, "unit": m.unit, "unit_text": UNIT_TEXT[m.unit]}


FAMILIES = (STEP, STEP_VS_OFF, OTHER, TRAINER, PUSHES, FORECAST, FIT)
"""The catalogue as docs/report.md's metric table shows it: families of base names."""


def markdown_table() -> str:
    """docs/report.md's metric table, generated from the catalogue (a test holds them equal)."""
    lines = ["| metric | label | unit | better | meaning |", "|---|---|---|---|---|"]
    for family in FAMILIES:
        note = f" ({family.variants})" if family.variants else ""
        lines.append(f"| **{family.title}**{note} | | | | |")
        for m in family:
            better = m.better or "-"
            description = m.description.replace("|", "\\|")
            label = m.label.replace("|", "\\|")
            lines.append(f"| `{m.name}` | {label} | {m.unit} | {better} | {description} |")
    return "\n".join(lines) + "\n"
