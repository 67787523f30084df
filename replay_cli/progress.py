"""How a report's work reports progress: one callback told the phase, the units done and the
total, so a bar can name each phase (replay, forecast, verdict, tables, charts, TensorBoard)
instead of sitting at 100% while the last ones run."""

from __future__ import annotations

from collections.abc import Callable

Progress = Callable[[str, int, int | None], None]
"""(phase, done, total): total is None while the phase's size is unknown."""
Tick = Callable[[int, int], None]
"""One phase's (done, total) callback, as the engine and the writers take it."""


def phase(progress: Progress | None, name: str, total: int | None = None) -> Tick | None:
    """Announce `name` (done 0 of `total`) and return the (done, total) callback of that phase."""
    if progress is None:
        return None
    progress(name, 0, total)
    return lambda done, size: progress(name, done, size)
