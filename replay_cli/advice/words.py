"""Words around the numbers for a reader: a missing summary value as 0, a change of minutes with
its direction as a word, parameters as the user writes them (the numbers themselves are written
by replay_cli.catalogue.units, the same in every sentence, table and chart label)."""

from __future__ import annotations

from typing import Any

from replay_cli.catalogue.units import fmt, minutes_text
from replay_cli.config import lambda_text
from replay_cli.maths.thresholds import MINUTES_EPS

NO_LONG_PROBLEMS = "no long problems in this input"
"""Said where a long-problem metric is null (the long bucket has no group): a null is no 0."""


def num(row: dict[str, Any], key: str) -> float:
    """A summary value as a float, 0 where the report has none."""
    value = row.get(key)
    return 0.0 if value is None else float(value)


def sooner_than_off(x: float) -> str:
    """A minute change against shaping off in words, by its sign: '0.34 min sooner than under
    shaping off', '… later …', or 'as soon as under shaping off' within MINUTES_EPS."""
    if abs(x) <= MINUTES_EPS:
        return "as soon as under shaping off"
    return (
        f"{minutes_text(x, signed=False)} {'sooner' if x < 0 else 'later'} than under shaping off"
    )


def param_text(name: str, value: Any) -> str:
    """A parameter value as the user writes it: 'none' for an unset one, lambda_time as 1/60
    where it is one over whole minutes."""
    if value is None or value == "":
        return "none"
    if name == "lambda_time" and isinstance(value, float):
        return lambda_text(value)
    return fmt(value)
