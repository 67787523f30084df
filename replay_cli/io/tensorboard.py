"""Scalars of a TensorBoard log (a run's directory, a directory of runs, or one event file) as long
rows, read with TensorBoard's own event reader (the optional extra `replay-cli[tensorboard]`)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from replay_cli.errors import InputFileError, missing_extra

EVENTS = "events.out.tfevents"
SCHEMA = {"run": pl.String, "step": pl.Int64, "metric": pl.String, "value": pl.Float64}


def is_tensorboard(path: Path) -> bool:
    """An event file, or a directory holding event files at any depth."""
    if path.is_file():
        return path.name.startswith(EVENTS)
    return path.is_dir() and any(path.rglob(f"{EVENTS}*"))


def runs_of(path: Path) -> dict[str, Path]:
    """Run name -> its directory (or file): every directory that holds event files, named by its
    path under `path` ('.' for `path` itself)."""
    if path.is_file():
        return {path.parent.name: path}
    found = sorted({f.parent for f in path.rglob(f"{EVENTS}*")})
    return {str(d.relative_to(path)): d for d in found}


def read_scalars(path: str | Path, run: str | None = None) -> pl.DataFrame:
    """The scalars of one run as (run, step, metric, value). A log of several runs needs `run`;
    the error lists the runs found."""
    try:
        from tensorboard.backend.event_processing.event_accumulator import SCALARS, EventAccumulator
    except ImportError:
        raise missing_extra("Reading TensorBoard logs", "tensorboard") from None
    path = Path(path)
    runs = runs_of(path)
    with_scalars = {name: where for name, where in runs.items() if _has_scalars(where)}
    if run is None:
        if len(with_scalars) != 1:
            listed = ", ".join(sorted(with_scalars)) or "none"
            raise InputFileError(
                f"{path} holds {len(with_scalars)} TensorBoard runs with scalars ({listed}).\n\n"
                "Pick one with --internal-run NAME."
            )
        run = next(iter(with_scalars))
    if run not in runs:
        raise InputFileError(
            f"{path} has no TensorBoard run {run!r}; runs: {', '.join(sorted(runs)) or 'none'}."
        )
    accumulator = EventAccumulator(str(runs[run]), size_guidance={SCALARS: 0})
    accumulator.Reload()
    rows = [
        {"run": run, "step": e.step, "metric": tag, "value": float(e.value)}
        for tag in accumulator.Tags()[SCALARS]
        for e in accumulator.Scalars(tag)
    ]
    return pl.DataFrame(rows, schema=SCHEMA)


def _has_scalars(where: Path) -> bool:
    from tensorboard.backend.event_processing.event_accumulator import SCALARS, EventAccumulator

    accumulator = EventAccumulator(str(where), size_guidance={SCALARS: 0})
    accumulator.Reload()
    return bool(accumulator.Tags()[SCALARS])
