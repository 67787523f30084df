"""What the CLI prints: the headline table after a run, input summaries and the demo guide."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from replay_cli.api import load
from replay_cli.describe import HEADLINE_METRICS, describe_rollouts, headline
from replay_cli.engine import ReplayResult


def _console() -> Console:
    return Console(soft_wrap=False, width=160)


def print_summary(result: ReplayResult, out: Path) -> None:
    """One line per config with the metrics that decide whether a setting is safe."""
    table = Table(title=f"replay report: {out}", title_justify="left")
    table.add_column("config")
    for _, short in HEADLINE_METRICS:
        table.add_column(short, justify="right")
    for label, cells in headline(result.summary):
        table.add_row(label, *cells)
    _console().print(table)


def print_inspect(sources: Sequence[str], **kwargs: object) -> None:
    """Validate and describe an input."""
    rollouts = load(sources, **kwargs)  # type: ignore[arg-type]
    stats = describe_rollouts(rollouts)
    table = Table(title="rollout input", show_header=False, title_justify="left")
    for key, value in stats.items():
        table.add_row(key, f"{value:.4g}" if isinstance(value, float) else str(value))
    console = _console()
    console.print(table)
    for note in rollouts.notes:
        console.print(f"note: {note}")
    console.print("OK: the input is valid.")


def demo_guide(out: Path) -> str:
    """Where to look after `replay-cli demo`."""
    return (
        f"\nOpen {out}/charts/signal_vs_lambda.png first: how many prompt groups still teach something.\n"
        f"Then {out}/charts/advantage_distribution.png (explosions) and inversion_vs_lambda.png.\n"
        f"Tables: {out}/summary.parquet (one row per config), steps.parquet, groups.parquet, rollouts.parquet."
    )


@contextmanager
def progress(description: str) -> Iterator[Callable[[int, int], None]]:
    """A progress callback: a bar on a terminal, silent when stderr is a pipe or file."""
    if not sys.stderr.isatty():
        yield lambda done, total: None
        return
    with Progress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(description, total=None)

        def tick(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield tick
