"""What a catalogue entry is: a `Metric` (name, label, description, unit, better direction, hazard
test), the `Family` whose call enters one and returns its name (so a metric's constant is the
statement that enters it), the helpers that derive a metric's scoped, shaping-off and interval
columns, and the hazard tests' builders."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any, Literal

from replay_cli.catalogue.units import ZERO, Unit, pct, show_value

Hazard = Callable[[float, dict[str, Any], Any], tuple[str, str] | None]
"""(value, summary row, the rule's bars: forecast.Bars) -> (css class 'hazard' or 'warn', why)
where the cell needs a look."""


@dataclass(frozen=True)
class Metric:
    """One metric: name, short label, description, unit, better direction, hazard test."""

    name: str
    label: str
    description: str
    unit: Unit = "number"
    better: Literal["higher", "lower", ""] = ""
    hazard: Hazard | None = None
    short: str = ""
    """The terminal's column header, where the label is too long for an 80-column table."""

    @property
    def brief(self) -> str:
        return self.short or self.label

    def show(self, value: Any) -> str:
        """The value as every human surface writes it ('-' where there is none)."""
        return show_value(self.unit, value)

    def human(self, value: float | None) -> float | None:
        """The value in the unit a person reads (%, minutes, points), rounding-sized values 0:
        what TensorBoard's replay/ and HParams tags hold."""
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return None
        value = float(value)
        if abs(value) <= ZERO.get(self.unit, 1e-12):
            return 0.0
        scale = {"share": 100.0, "ratio": 100.0, "points_per_step": 100.0, "seconds": 1 / 60}
        return value * scale.get(self.unit, 1.0)


class Family(list[Metric]):
    """A family's entries in report order, and its heading in docs/report.md. Calling it enters one (`Metric`'s arguments) and
    returns its name: `RESOLVE = STEP("step/resolve", "resolve Δ/step", ...)` is the metric's
    constant and its entry in one statement, the one place its name is written."""

    def __init__(self, title: str, variants: str = "") -> None:
        super().__init__()
        self.title, self.variants = title, variants
        """How docs/report.md's metric table heads the family, and the columns each entry adds."""

    def __call__(self, *args: Any, **kwargs: Any) -> str:
        self.append(Metric(*args, **kwargs))
        return self[-1].name


LONG = "@long"
"""The long-problem scope's suffix, the one every headline is also read on."""
SCOPES = {
    "": "",
    "@short": " on short problems",
    "@medium": " on medium problems",
    LONG: " on long problems",
}
"""The length-bucket suffixes of a scoped metric (maths/scopes.Scope.suffix), and how its
description says so."""


def scoped(name: str, scope: str) -> str:
    """A scoped metric's column: `scope` is '' or '@short', '@medium', '@long'."""
    return f"{name}{scope}"


def _suffixed(name: str, suffix: str, scope: str = "") -> str:
    """`name` with `suffix` before its scope, then `scope`: `step/resolve_vs_off@long`, `_low`
    -> `step/resolve_vs_off_low@long`."""
    base, at, own = name.partition("@")
    return f"{base}{suffix}{at}{own}{scope}"


def bound(name: str, end: str, scope: str = "") -> str:
    """An interval's end column of a metric (scoped or not): `end` is 'low' or 'high'."""
    return _suffixed(name, f"_{end}", scope)


def off(name: str, scope: str = "") -> str:
    """A metric's shaping-off twin column (the metric scoped or not)."""
    return _suffixed(name, "_off", scope)


def vs_off(name: str) -> str:
    """A long forecast table's metric against shaping off's: a ratio for the resolve rate, a
    difference for the rest (`resolve` -> `resolve_vs_off`)."""
    return _suffixed(name, "_vs_off")


def at_check(name: str, check: str) -> str:
    """A horizon number's column under one of `CHECKS` (`check`: 'half', 'twice', 'half_steps',
    'twice_steps'): `forecast/resolve_vs_off_low@long` -> `forecast/resolve_vs_off_low_half@long`."""
    return _suffixed(name, f"_{check}")


def scopes_of(m: Metric) -> Iterator[Metric]:
    """The metric over every problem, then on each length bucket."""
    for suffix, words in SCOPES.items():
        label = m.label + ("" if not suffix else f", {suffix[1:]}")
        short = m.short and m.short + ("" if not suffix else f" {suffix[1:]}")
        yield replace(
            m,
            name=scoped(m.name, suffix),
            label=label,
            short=short,
            description=m.description + words,
        )


def twin_off(m: Metric) -> Metric:
    """The metric from shaping off's advantages of the same rows."""
    return replace(
        m,
        name=off(m.name),
        label=m.label + " (off)",
        description=m.description + ", from the shaping-off advantages of the same rows",
        hazard=None,
        better="",
    )


def bounds_of(m: Metric) -> Iterator[Metric]:
    """The low and high ends of the metric's bootstrap interval."""
    for end in ("low", "high"):
        yield replace(
            m,
            name=bound(m.name, end),
            label=f"{m.label} ({end})",
            short=m.short and f"{m.short} {end}",
            description=f"{end} end of the bootstrap interval of: {m.description}",
            hazard=None,
        )


def above(threshold: float, css: str, why: str) -> Hazard:
    """Marks a value above `threshold` (`why` may say `{t}`)."""

    def test(value: float, row: dict[str, Any], bars: Any) -> tuple[str, str] | None:
        return (css, why.format(t=threshold)) if value > threshold else None

    return test


def below(threshold: Callable[[Any], float], css: str, why: str) -> Hazard:
    """Marks a value below the rule's bar `threshold(bars)` (`why` may say `{t}` or `{p}`, the
    bar as every surface writes a threshold)."""

    def test(value: float, row: dict[str, Any], bars: Any) -> tuple[str, str] | None:
        t = threshold(bars)
        return (css, why.format(t=t, p=pct(t))) if value < t else None

    return test


def by_column(name: str, hazard: str, warn: str) -> Hazard:
    """Marks a value above 0: a hazard where column `name` of the row is above 0 too, else a
    warning."""

    def test(value: float, row: dict[str, Any], bars: Any) -> tuple[str, str] | None:
        if value <= 0:
            return None
        return ("hazard", hazard) if (row.get(name) or 0.0) > 0 else ("warn", warn)

    return test
