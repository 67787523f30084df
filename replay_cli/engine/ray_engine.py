"""Distributed replay on Ray (`--engine ray`): the local engine's work split into tasks of one
chunk of whole steps x one batch of configs, each reading its rows from the input paths and
writing a part file; the driver feeds the pieces to the same accumulator in task order, so the
report is identical to a local run's (docs/guide.md, `--engine ray`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from replay_cli.config import EffortSettings, ForecastSettings, Pilot, ReplayConfig
from replay_cli.engine.run import (
    Accumulator,
    ChunkState,
    ConfigPiece,
    InputPiece,
    InputShape,
    batches,
    input_piece,
    pilot_logs,
    plan,
    read_chunk,
    replay_batch,
    unique_configs,
)
from replay_cli.engine.stages import outcomes
from replay_cli.errors import ConfigError, ReplayError, TaskFailedError
from replay_cli.progress import Progress, Tick, phase
from replay_cli.result import ReplayResult
from replay_cli.rollouts.fit import check_call_bonus
from replay_cli.rollouts.validation import Rollouts, load_rollouts

MAX_RETRIES = 3


def _outcome(ray: Any, ref: Any, lo: int, hi: int, batch: Sequence[ReplayConfig]) -> Any:
    """A task's result. Bad input found in a worker is raised as itself (exit code 2, no Ray
    traceback); a task that died on every retry becomes one readable error. Other exceptions in
    a task are bugs and keep Ray's remote traceback."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as exc:
        if isinstance(exc.cause, ReplayError):
            raise exc.cause from None
        raise
    except ray.exceptions.RayError as exc:
        first_line = (str(exc).strip().splitlines() or [""])[0]
        configs = ", ".join(c.config_id for c in batch)
        raise TaskFailedError(
            f"Ray task for steps {lo}-{hi} x configs {configs} failed after {MAX_RETRIES} "
            f"retries ({type(exc).__name__}: {first_line}). A worker that runs out of memory "
            "dies this way: try a smaller --chunk-rows."
        ) from None


def _task(
    load_args: dict[str, Any],
    lo: int,
    hi: int,
    configs: list[dict[str, Any]],
    chart_every: int,
    with_input: bool,
    part: str | None,
    rows_mode: str,
    shape: InputShape,
) -> tuple[list[ConfigPiece], InputPiece | None]:
    """One chunk x one config batch, in a Ray worker."""
    from replay_cli.io.parquet import ParquetRowSink

    rollouts = load_rollouts(**load_args, check_values=False)
    chunk = read_chunk(rollouts, lo, hi)
    batch = [ReplayConfig.model_validate(c) for c in configs]
    state = ChunkState.of(chunk, shape)
    pieces = replay_batch(state, batch, chart_every)
    if part is not None:
        sink = ParquetRowSink(Path(part), rows_mode)  # type: ignore[arg-type]
        for piece in pieces:
            if piece.rows is not None:
                sink(piece.rows)
        sink.close()
    for piece in pieces:
        piece.rows = None
    return pieces, input_piece(state, chart_every) if with_input else None


def ensure_ray(address: str | None = None) -> Any:
    """Connect to a cluster (address) or start a local one with every core, unless already up."""
    try:
        import ray
    except ImportError:
        raise ConfigError(
            "--engine ray needs Ray: install the extra with `uv sync --extra ray`."
        ) from None
    if not ray.is_initialized():
        where = {"address": address} if address else {"num_cpus": os.cpu_count() or 1}
        ray.init(**where, include_dashboard=False, log_to_driver=False, configure_logging=False)
    return ray


def run_replay_ray(
    load_args: dict[str, Any],
    rollouts: Rollouts,
    configs: Sequence[ReplayConfig],
    progress: Progress | None = None,
    *,
    configs_per_pass: int = 4,
    chunk_rows: int,
    part_dir: Path | None = None,
    rows_mode: str = "all",
    address: str | None = None,
    group_sink: Callable[[Any], None] | None = None,
    settings: EffortSettings | None = None,
    forecast: ForecastSettings | None = None,
    pilots: Sequence[tuple[Pilot, Rollouts]] = (),
) -> tuple[ReplayResult, list[Path]]:
    """Replay on Ray; returns the result and the row part files in report order (to be merged)."""
    check_call_bonus(rollouts, configs)  # before Ray starts, as run_replay does
    ray = ensure_ray(address)
    remote = ray.remote(max_retries=MAX_RETRIES)(_task)
    config_batches = batches(configs, configs_per_pass)
    unique = unique_configs(configs)
    chunks, chart_every = plan(rollouts, chunk_rows)
    settings = settings or EffortSettings()
    shape = InputShape.of(rollouts, settings.levels, forecast)
    jobs = [
        (i, lo, hi, j, batch)
        for i, (lo, hi) in enumerate(chunks)
        for j, batch in enumerate(config_batches)
    ]
    parts = [
        None
        if part_dir is None or rows_mode == "none"
        else part_dir / f"part-{i:06d}-{j:04d}.parquet"
        for i, _, _, j, _ in jobs
    ]
    if part_dir is not None:
        part_dir.mkdir(parents=True, exist_ok=True)
    refs = [
        remote.remote(
            load_args,
            lo,
            hi,
            [c.model_dump() for c in batch],
            chart_every,
            j == 0,
            None if part is None else str(part),
            rows_mode,
            shape,
        )
        for (_, lo, hi, j, batch), part in zip(jobs, parts, strict=True)
    ]
    acc = Accumulator(unique, keep_rows=False, group_sink=group_sink, edges=shape.length_edges)
    total = len(chunks) * len(unique)
    _feed_in_order(ray, refs, jobs, acc, phase(progress, "replay", total), total)
    result, gathered = acc.tables()
    logs = pilot_logs(pilots, shape, settings.levels, forecast, chunk_rows)
    result = outcomes(result, gathered, unique, settings, forecast, progress, logs)
    return result, [p for p in parts if p is not None and p.exists()]


def _feed_in_order(
    ray: Any,
    refs: list[Any],
    jobs: list[tuple[int, int, int, int, Sequence[ReplayConfig]]],
    acc: Accumulator,
    tick: Tick | None,
    total: int,
) -> None:
    """Wait for the tasks `refs` (one per job) as they finish, and feed their pieces to `acc` in
    task order, so the tables come out exactly as a local run's."""
    index = {ref: k for k, ref in enumerate(refs)}
    results: dict[int, Any] = {}
    pending, fed, done = list(refs), 0, 0
    while pending:
        ready, pending = ray.wait(pending, num_returns=1)
        for ref in ready:
            k = index[ref]
            _, lo, hi, _, batch = jobs[k]
            results[k] = _outcome(ray, ref, lo, hi, batch)
            done += len(batch)
        while fed in results:
            pieces, inputs = results.pop(fed)
            if inputs is not None:
                acc.inputs.append(inputs)
            for piece in pieces:
                acc.add(piece)
            fed += 1
        if tick is not None:
            tick(done, total)


def merge_parts(parts: Sequence[Path], out: Path) -> None:
    """Concatenate row part files, in order, into one Parquet file, one part in memory at a time."""
    from replay_cli.io.parquet import ParquetRowSink

    sink = ParquetRowSink(out)
    try:
        for part in parts:
            sink(pl.read_parquet(part))
            part.unlink()
    finally:
        sink.close()
