"""Settings against the input they are replayed on: a setting that reads a column the input lacks
(filled with its default on load) cannot act, and that is never left unsaid.

A call bonus without a `calls` column is an error: every row would count 0 calls, so the bonus would
be 0 everywhere and the replay would look like a verdict on it. The other settings that cannot act
are warnings (the replay is still right: it is shaping off's twin there)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from replay_cli import schema as S
from replay_cli.config import ReplayConfig, unique_labels
from replay_cli.errors import ConfigError
from replay_cli.rollouts.validation import Rollouts, look_alike_hint


def _names(rollouts: Rollouts) -> list[str]:
    return [c for c in S.CANONICAL if c not in rollouts.absent] + list(rollouts.extra_columns)


def check_call_bonus(rollouts: Rollouts, configs: Sequence[ReplayConfig]) -> None:
    """Refuse a config that pays a call bonus on an input without a `calls` column."""
    if S.CALLS not in rollouts.absent:
        return
    labels = unique_labels(list(configs))
    paying = [c for c in configs if c.shaping.enabled and c.shaping.bonus_on]
    if not paying:
        return
    names = ", ".join(f"'{labels[c.config_id]}'" for c in paying[:3])
    more = f" and {len(paying) - 3} more" if len(paying) > 3 else ""
    where = look_alike_hint(S.CALLS, _names(rollouts)) or f"or rename one: --map SRC={S.CALLS}"
    raise ConfigError(
        f"lambda_call_bonus pays per tool call ({names}{more}), but the input has no "
        f"'{S.CALLS}' column: every row would count 0 calls and the bonus would be 0. Add the "
        f"column ({where}), or set lambda_call_bonus to 0."
    )


INERT: tuple[tuple[str, Callable[[ReplayConfig], bool], str], ...] = (
    (
        S.MASK_SAMPLE,
        lambda c: c.advantage.exclude_masked,
        "exclude_masked leaves every row voting: no row is masked",
    ),
    (
        S.MASK_SAMPLE,
        lambda c: c.shaping.enabled and not c.shaping.mask_flagged,
        "mask_flagged=false charges no extra row: no row is masked",
    ),
    (
        S.SPLIT,
        lambda c: c.shaping.enabled and c.shaping.validation_shaped,
        "validation_shaped charges no row: every row is a training row",
    ),
    (
        S.ZEROED,
        lambda c: c.shaping.enabled and 2 in (c.shaping.internal_items or ()),
        "internal item 2 resets no row to 0: no row was zeroed by a penalty",
    ),
)
"""(column, whether a config sets what reads it, what then happens) of each setting that needs
an optional column to act."""


def inert_settings(rollouts: Rollouts, configs: Sequence[ReplayConfig]) -> list[str]:
    """One warning per setting that cannot act on this input, naming the configs and the column."""
    labels = unique_labels(list(configs))
    out = []
    for col, sets, what in INERT:
        if col not in rollouts.absent:
            continue
        named = [labels[c.config_id] for c in {c.config_id: c for c in configs}.values() if sets(c)]
        if named:
            hint = look_alike_hint(col, _names(rollouts))
            who = ", ".join(f"'{n}'" for n in named[:3])
            more = f" and {len(named) - 3} more" if len(named) > 3 else ""
            out.append(
                f"{who}{more}: the input has no '{col}' column, so {what} (the setting does "
                f"nothing here){f' ({hint})' if hint else ''}."
            )
    return out
