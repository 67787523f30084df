"""Replay configs over a rollout table: shaping, advantages and metrics, chunk by chunk of whole steps."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from replay_cli import catalogue as C
from replay_cli import schema as S
from replay_cli.config import (
    DEFAULT_CHUNK_ROWS,
    EffortSettings,
    ForecastSettings,
    Pilot,
    ReplayConfig,
    unique_labels,
)
from replay_cli.engine.allocator import keep_freed_memory
from replay_cli.engine.batched import batchable, grpo_rows, row_frame
from replay_cli.engine.diagnostics import finish as finish_diagnostics
from replay_cli.engine.diagnostics import group_partials, input_statistics, row_partials
from replay_cli.engine.effort_levels import (
    ChunkLevels,
    ConfigLevels,
    config_levels,
    effort_levels,
    start_window,
)
from replay_cli.engine.pushes import length_edges
from replay_cli.engine.row_batch import RowBatch
from replay_cli.engine.row_plans import RawKey, planned_rows, raw_key
from replay_cli.engine.stages import Gathered, outcomes
from replay_cli.engine.tables import group_tables, step_tables, summarise_steps, trainer_names
from replay_cli.forecast.pilots import PilotLog
from replay_cli.frames import collect
from replay_cli.maths import torch_grpo
from replay_cli.maths.chunk_arrays import ChunkArrays, run_seconds
from replay_cli.maths.effort import EffortLevels
from replay_cli.maths.problems import GroupLevels, Problems
from replay_cli.maths.segments import Runs
from replay_cli.maths.top_groups import top_groups, top_of_config
from replay_cli.progress import Progress, phase
from replay_cli.result import ReplayResult
from replay_cli.rollouts.chunks import in_order, plan_chunks, run_starts
from replay_cli.rollouts.fit import check_call_bonus
from replay_cli.rollouts.validation import Rollouts

RowSink = Callable[[pl.DataFrame], None]
CHART_VALUES = 2_000_000  # about this many deductions and minutes per config are kept for charts


@dataclass
class ConfigPiece:
    """One config's results over one chunk: what the accumulator needs, and the rows if kept."""

    config_id: str
    groups: pl.DataFrame | None
    group_parts: pl.DataFrame
    steps: pl.DataFrame
    partials: pl.DataFrame
    advantages: pl.Series
    deductions: pl.Series
    rows: pl.DataFrame | None
    effort: ConfigLevels
    digest: bytes
    top: pl.DataFrame | None = None  # the chunk's `top_groups`


@dataclass
class InputPiece:
    """Config-independent values of one chunk: minutes (thinned, for charts) and run times."""

    minutes: pl.Series
    run_times: pl.Series
    levels: GroupLevels


CHUNK_ORDER = (S.STEP, S.GROUP_ID, S.IS_VAL, S.ROLLOUT_INDEX)


def read_chunk(rollouts: Rollouts, lo: int, hi: int) -> pl.DataFrame:
    """The rows of steps [lo, hi] in the trainer's order (rollout_index within each group), with a
    sorted integer group id (step, group_id, split) and a batch id (step, split).

    Float sums then do not depend on how the input happened to be ordered, and every per-group
    window runs over a sorted integer key, which polars evaluates without hashing. Inputs that are
    already in order (trainer logs, synth) skip the sort."""
    df = collect(
        rollouts.chunk(lo, hi).with_columns((pl.col(S.SPLIT) == S.SPLIT_VALIDATION).alias(S.IS_VAL))
    )
    if not in_order(df, CHUNK_ORDER):
        df = df.sort(CHUNK_ORDER)
    step_no = run_starts([S.STEP]).cum_sum().cast(pl.Int64)
    return df.with_columns(
        run_starts(CHUNK_ORDER[:3]).cum_sum().cast(pl.Int64).set_sorted().alias(S.GID),
        (step_no * 2 + pl.col(S.IS_VAL).cast(pl.Int64)).alias(S.BID),
    ).rechunk()


def input_piece(state: ChunkState, chart_every: int) -> InputPiece:
    chunk = state.arrays
    thinned = pl.Series(S.MINUTES, chunk.minutes[chunk.train][::chart_every])
    # float32 keeps run times to a fraction of a millisecond at half the memory (quantiles only).
    return InputPiece(thinned, chunk.frame[S.RUN_TIME].cast(pl.Float32), state.levels.groups)


@dataclass
class ChunkState:
    """What the config batches of one chunk share: its numpy arrays and the shaping-off
    advantages per `raw_key` (numpy for the batched path, a column for the polars plans)."""

    arrays: ChunkArrays
    levels: ChunkLevels
    raw_arrays: dict[RawKey, np.ndarray] = field(default_factory=dict)
    raw_columns: dict[RawKey, pl.Series] = field(default_factory=dict)

    @classmethod
    def of(cls, chunk: pl.DataFrame, shape: InputShape) -> ChunkState:
        arrays = ChunkArrays.of(chunk, shape.length_edges)
        levels = ChunkLevels.of(
            arrays, shape.levels, shape.problem_buckets, shape.forecast_keys, shape.level_edges
        )
        return cls(arrays, levels)


def replay_batch(
    state: ChunkState, batch: Sequence[ReplayConfig], chart_every: int, with_rows: bool = True
) -> list[ConfigPiece]:
    """Every config of a batch over one chunk, in the batch's order.

    GRPO configs without a filter go through the batched path (batched.py), one set of (configs ×
    rows) arrays per `raw_key`; the others through polars plans, one `collect_all`. Per-row report
    frames are built only `with_rows`."""
    pieces: dict[str, ConfigPiece] = {}
    by_key: dict[RawKey, list[ReplayConfig]] = {}
    for cfg in batch:
        if batchable(cfg):
            by_key.setdefault(raw_key(cfg), []).append(cfg)
    for key, configs in by_key.items():
        rows = grpo_rows(state.arrays, configs, state.raw_arrays)
        frames = [row_frame(rows, k) if with_rows else None for k in range(len(configs))]
        for piece in config_pieces(rows, chart_every, frames, state.levels, key):
            pieces[piece.config_id] = piece
    others = [cfg for cfg in batch if not batchable(cfg)]
    for cfg, frame in zip(
        others, planned_rows(state.arrays, others, state.raw_columns), strict=True
    ):
        rows = RowBatch.from_frame(state.arrays, cfg, frame)
        kept = frame.drop(S.IS_VAL, S.TRAINABLE, S.GID) if with_rows else None
        # A filter's shaping-off advantages are the config's own (0 where it drops a group).
        piece = config_pieces(rows, chart_every, [kept], state.levels, cfg.config_id)[0]
        pieces[cfg.config_id] = piece
    return [pieces[cfg.config_id] for cfg in batch]


def config_pieces(
    b: RowBatch,
    chart_every: int,
    frames: Sequence[pl.DataFrame | None],
    levels: ChunkLevels,
    off_key: Any,
) -> list[ConfigPiece]:
    """The accumulator's pieces of every config of a row batch; `off_key` names the batch's
    shaping-off advantages (configs that share it share their shaping-off step)."""
    groups = group_tables(b)
    effort = config_levels(b, levels.rows, levels.groups.count.shape[1], off_key)
    steps = step_tables(b, groups)
    partials = row_partials(b)
    trainable = b.per_config(b.trainable)
    scored, masked = b.per_config(b.scored), b.per_config(b.masked)
    out = []
    for k, cfg in enumerate(b.configs):
        # float32 configs compute float32 advantages: keeping them as float32 loses nothing.
        dtype = np.float64 if cfg.advantage.precision == "float64" else np.float32
        charged = b.charged[k]
        out.append(
            ConfigPiece(
                config_id=cfg.config_id,
                groups=groups[k],
                group_parts=group_partials(groups[k]),
                steps=steps[k],
                partials=partials[k],
                advantages=pl.Series(S.ADVANTAGE, b.grpo.advantage[k][trainable[k]].astype(dtype)),
                deductions=pl.Series(S.DEDUCTION, b.deduction[k][charged][::chart_every]),
                rows=frames[k],
                effort=effort[k],
                digest=trained_digest(
                    b.chunk.steps, scored[k], masked[k], b.reward_shaped[k], b.grpo.advantage[k]
                ),
            )
        )
    return out


def trained_digest(
    steps: Runs, scored: np.ndarray, masked: np.ndarray, reward: np.ndarray, advantage: np.ndarray
) -> bytes:
    """A hash per step of what a config trains on: which training rows get an advantage
    (`scored`) and which of them the loss masks, their shaped rewards and their advantages after
    the clip (float64; -0.0 as 0.0), so that it does not depend on how steps were chunked. Two
    configs with equal digests train exactly alike, whatever their bookkeeping columns say.

    Loss-masked rows are hashed too: the trainer computes, clips and logs their advantages
    (`advantages/*` counts them), and the report's rows show them, so two configs that differ
    there are not called the same even though no gradient flows through those rows."""
    reward = np.where(scored, reward, 0.0).astype(np.float64) + 0.0
    advantage = np.where(scored, advantage, 0.0).astype(np.float64) + 0.0
    out = []
    for start, length in zip(steps.starts, steps.lengths, strict=True):
        part = slice(int(start), int(start + length))
        h = hashlib.blake2b(digest_size=16)
        h.update(np.packbits(scored[part]).tobytes())
        h.update(np.packbits(masked[part] & scored[part]).tobytes())
        h.update(reward[part].tobytes())
        h.update(advantage[part].tobytes())
        out.append(h.digest())
    return b"".join(out)


class Accumulator:
    """Per-config pieces of a chunked replay, finished into the report tables at the end.

    Pieces must arrive in (chunk, config) order for the tables to come out in a fixed order."""

    def __init__(
        self,
        configs: list[ReplayConfig],
        keep_rows: bool,
        group_sink: RowSink | None = None,
        edges: tuple[float, float] = (0.0, 0.0),
    ) -> None:
        self.configs = configs
        self.labels = unique_labels(configs)
        self.edges = edges
        self.keep_rows = keep_rows
        self.group_sink = group_sink  # groups go out as they come; only their counts stay
        self.rows: list[pl.DataFrame] = []
        self.pieces: dict[str, list[ConfigPiece]] = {c.config_id: [] for c in configs}
        self.inputs: list[InputPiece] = []

    def add(self, piece: ConfigPiece) -> None:
        if self.keep_rows and piece.rows is not None:
            self.rows.append(piece.rows)
        piece.rows = None
        if self.group_sink is not None and piece.groups is not None:
            piece.top = top_of_config(piece.groups)
            self.group_sink(piece.groups)
            piece.groups = None
        self.pieces[piece.config_id].append(piece)

    def _summary(self, cfg: ReplayConfig, inputs: dict[str, float | None]) -> dict[str, Any]:
        """One config's summary row from its pieces."""
        pieces = self.pieces[cfg.config_id]
        steps = pl.concat([p.steps for p in pieces], how="diagonal_relaxed")
        names = [*trainer_names(cfg.shaping), C.ADVANTAGES_MEAN, C.ADVANTAGES_MAX, C.ADVANTAGES_MIN]
        names += [C.VALIDATION_ACCURACY, C.VALIDATION_REWARD]
        digest = hashlib.blake2b(b"".join(p.digest for p in pieces), digest_size=16)
        return {
            S.CONFIG_ID: cfg.config_id,
            "label": self.labels[cfg.config_id],
            **cfg.flat(),
            C.TRAINED_DIGEST: digest.hexdigest(),
            **summarise_steps(steps, names),
            **finish_diagnostics(
                pl.concat([p.partials for p in pieces]),
                pl.concat([p.advantages for p in pieces]),
                pl.concat([p.group_parts for p in pieces]),
                steps.height,
                inputs,
            ),
        }

    def tables(self, computed_by: list[str] | None = None) -> tuple[ReplayResult, Gathered]:
        """The replay's own tables (rows, groups, steps, the summary of its diagnostics) and the
        effort levels it gathered for the stages."""
        inputs = input_statistics(pl.concat([p.run_times for p in self.inputs], rechunk=False))
        short, long = self.edges  # the length buckets' edges, in the summary in minutes
        inputs |= {C.LENGTH_SHORT_MAX: short / 60, C.LENGTH_LONG_MIN: long / 60}
        # The configs' exact quantiles (one partial sort each) run on the worker threads.
        with ThreadPoolExecutor(max_workers=_workers()) as pool:
            summaries = list(pool.map(lambda cfg: self._summary(cfg, inputs), self.configs))
        groups = [p.levels for p in self.inputs]
        gathered = Gathered(
            groups,
            Problems.of(groups),
            {c.config_id: [p.effort for p in self.pieces[c.config_id]] for c in self.configs},
        )
        groups_all, steps_all = [], []
        advantages, deductions = {}, {}
        for cfg in self.configs:
            pieces = self.pieces[cfg.config_id]
            if not self.group_sink:
                groups_all.append(pl.concat([p.groups for p in pieces], how="diagonal_relaxed"))
            steps_all.append(pl.concat([p.steps for p in pieces], how="diagonal_relaxed"))
            advantages[cfg.config_id] = pl.concat([p.advantages for p in pieces])
            deductions[cfg.config_id] = pl.concat([p.deductions for p in pieces])
        summary = pl.from_dicts(summaries, infer_schema_length=None)
        all_groups = pl.concat(groups_all, how="diagonal_relaxed") if groups_all else None
        if all_groups is not None:
            top = top_groups(all_groups)
        else:  # the groups were streamed: the top of the chunks' tops
            tops = [p.top for cfg in self.configs for p in self.pieces[cfg.config_id]]
            top = top_groups(pl.concat(tops, how="diagonal_relaxed")) if tops else None
        result = ReplayResult(
            rows=pl.concat(self.rows, how="diagonal_relaxed") if self.keep_rows else None,
            groups=all_groups,
            steps=pl.concat(steps_all, how="diagonal_relaxed"),
            summary=summary,
            configs=self.configs,
            advantages=advantages,
            deductions=deductions,
            minutes=pl.concat([p.minutes for p in self.inputs]),
            top_groups=top,
            computed_by=computed_by or [],
        )
        return result, gathered


def batches(configs: Sequence[ReplayConfig], size: int) -> list[list[ReplayConfig]]:
    """Configs in batches of up to `size`, deduplicated by config_id. Configs that share a
    `raw_key` are batched together (the batched path evaluates one key's configs as one set
    of arrays); the keys keep their order of first appearance."""
    by_key: dict[tuple[bool, RawKey], list[ReplayConfig]] = {}
    for cfg in unique_configs(configs):
        by_key.setdefault((batchable(cfg), raw_key(cfg)), []).append(cfg)
    return [group[i : i + size] for group in by_key.values() for i in range(0, len(group), size)]


def unique_configs(configs: Sequence[ReplayConfig]) -> list[ReplayConfig]:
    """Configs deduplicated by config_id, in order."""
    return list({c.config_id: c for c in configs}.values())


def _workers() -> int:
    """Threads for the config batches of a chunk: numpy releases the GIL in its elementwise
    loops (not in `reduceat` over small groups, which caps the gain near 1.4x)."""
    return max(1, min(2, os.cpu_count() or 1))


def plan(rollouts: Rollouts, chunk_rows: int) -> tuple[list[tuple[int, int]], int]:
    """The chunks of whole steps and the thinning of chart values for an input."""
    counts = rollouts.step_counts()
    return plan_chunks(counts, chunk_rows), max(1, int(counts["len"].sum()) // CHART_VALUES)


def input_length_edges(frame: pl.LazyFrame) -> tuple[float, float]:
    """The tercile edges (seconds) of the training groups' median run times over `frame` (the
    whole input, or the forecast's start window): one grouped pass before the chunks, so every
    chunk buckets its groups alike."""
    medians = collect(
        frame.filter(pl.col(S.SPLIT) != S.SPLIT_VALIDATION)
        .group_by(S.GROUP_KEYS)
        .agg(run_seconds().median())
        .select(S.RUN_TIME)
    )
    return length_edges(medians[S.RUN_TIME].to_numpy())


@dataclass(frozen=True)
class InputShape:
    """What every chunk is read against, found in passes over the input before the chunks:
    the length buckets' edges (seconds) of the replay's tables (the whole input's); and, read
    from the start window (`effort_levels.start_window`: the log's first W steps, where the
    forecast starts), the effort levels, each problem's bucket where rows name their problem,
    the edges that bucket a group without a name (`level_edges`), and the forecast's sample."""

    length_edges: tuple[float, float]
    levels: EffortLevels
    problem_buckets: pl.DataFrame | None
    forecast_keys: pl.DataFrame | None = None
    level_edges: tuple[float, float] | None = None

    @classmethod
    def of(
        cls, rollouts: Rollouts, levels: int, forecast: ForecastSettings | None = None
    ) -> InputShape:
        edges = input_length_edges(rollouts.frame)
        window = start_window(rollouts.frame)
        start_edges = input_length_edges(window)
        sample = None if forecast is None else (forecast.problems, forecast.seeds, forecast.seed)
        effort, buckets, keys = effort_levels(window, start_edges, levels, sample)
        return cls(edges, effort, buckets, keys, start_edges)


def pilot_logs(
    pilots: Sequence[tuple[Pilot, Rollouts]],
    shape: InputShape,
    levels: int,
    forecast: ForecastSettings | None,
    chunk_rows: int,
) -> list[PilotLog]:
    """Each pilot run's training groups on the user's log's effort levels and length buckets
    (a problem the user's log names keeps its bucket; the pilot's other problems are bucketed by
    the user's start window's edges), with the forecast's sample drawn from the pilot's own
    start window (forecast/pilots.py). No replay: the pilot's rows are only read."""
    if forecast is None:
        return []
    sample = (forecast.problems, forecast.seeds, forecast.seed)
    out = []
    for pilot, rollouts in pilots:
        window = start_window(rollouts.frame)
        _, own, keys = effort_levels(
            window, shape.level_edges or shape.length_edges, levels, sample
        )
        known = shape.problem_buckets
        buckets = own
        if own is not None and known is not None:
            buckets = pl.concat([known, own.join(known, on=S.INSTANCE_ID, how="anti")])
        groups = []
        for lo, hi in plan(rollouts, chunk_rows)[0]:
            arrays = ChunkArrays.of(read_chunk(rollouts, lo, hi), shape.length_edges)
            chunk = ChunkLevels.of(arrays, shape.levels, buckets, keys, shape.level_edges)
            groups.append(chunk.groups)
        out.append(PilotLog(pilot.path, pilot.config, groups))
    return out


def run_replay(
    rollouts: Rollouts,
    configs: Sequence[ReplayConfig],
    progress: Progress | None = None,
    *,
    configs_per_pass: int = 4,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    row_sink: RowSink | None = None,
    group_sink: RowSink | None = None,
    with_rows: bool = True,
    workers: int | None = None,
    settings: EffortSettings | None = None,
    forecast: ForecastSettings | None = None,
    pilots: Sequence[tuple[Pilot, Rollouts]] = (),
) -> ReplayResult:
    """Replay every config over the rollouts, chunk by chunk of whole steps, and build the tables.

    Each chunk is read once; its config batches run on `workers` threads and their pieces are
    taken in order. Per-row results go to `row_sink` when given, else they are kept in memory; peak
    memory is about chunk_rows x configs_per_pass rows of results. `forecast`: run the forecast too
    (replay_cli/forecast/), and backtest each of `pilots` against its own log."""
    settings = settings or EffortSettings()
    if not configs:
        raise ValueError("run_replay needs at least one config")
    check_call_bonus(rollouts, configs)  # before any work: a bonus on 0 calls is no replay
    keep_freed_memory()
    groups_of_configs = batches(configs, configs_per_pass)
    unique = unique_configs(configs)
    # Before any work: a missing torch or CUDA device is an error now, not after a chunk.
    torch_notes = [
        f"precision torch: baselines, stds and normalisation computed by {torch_grpo.describe(d)}"
        for d in sorted({c.advantage.device for c in unique if c.advantage.precision == "torch"})
    ]
    chunks, chart_every = plan(rollouts, chunk_rows)
    shape = InputShape.of(rollouts, settings.levels, forecast)
    acc = Accumulator(
        unique,
        keep_rows=row_sink is None and with_rows,
        group_sink=group_sink,
        edges=shape.length_edges,
    )
    total, done = len(chunks) * len(unique), 0
    tick = phase(progress, "replay", total)
    with ThreadPoolExecutor(max_workers=workers or _workers()) as pool:
        for lo, hi in chunks:
            state = ChunkState.of(read_chunk(rollouts, lo, hi), shape)
            acc.inputs.append(input_piece(state, chart_every))
            jobs = [
                (batch, pool.submit(replay_batch, state, batch, chart_every, with_rows))
                for batch in groups_of_configs
            ]
            for batch, job in jobs:  # in submission order: the tables come out in a fixed order
                for piece in job.result():
                    if row_sink is not None and piece.rows is not None:
                        row_sink(piece.rows)
                    acc.add(piece)
                done += len(batch)
                if tick is not None:
                    tick(done, total)
    # The stages after the replay proper: the first step's diagnostic and the forecast.
    result, gathered = acc.tables(torch_notes)
    logs = pilot_logs(pilots, shape, settings.levels, forecast, chunk_rows)
    return outcomes(result, gathered, unique, settings, forecast, progress, logs)
