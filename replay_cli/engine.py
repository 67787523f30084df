"""Replay configs over a rollout table: shaping, advantages and metrics, chunk by chunk of whole steps."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import polars as pl

from replay_cli import schema as S
from replay_cli.advantages import AdvColumns, add_baseline_and_std, add_grpo
from replay_cli.chunks import in_order, plan_chunks
from replay_cli.config import AdvantageParams, ReplayConfig
from replay_cli.diagnostics import finish as finish_diagnostics
from replay_cli.diagnostics import group_partials, input_statistics, row_partials
from replay_cli.filters import add_kept
from replay_cli.frames import collect, collect_all
from replay_cli.metrics import (
    GID,
    IS_VAL,
    TRAINABLE,
    group_table,
    step_table,
    summarise_steps,
    trainer_names,
)
from replay_cli.peers import add_peer_advantages
from replay_cli.segments import Groups, Runs
from replay_cli.shaping import apply_shaping, masked, minutes
from replay_cli.validation import Rollouts

SHAPED = AdvColumns(S.BASELINE, S.STD, S.ADV_UNCLIPPED, S.ADVANTAGE, S.TRIVIAL_PEERS, S.NORMALIZED)
_RAW = AdvColumns(
    "_raw_baseline", "_raw_std", "_raw_unclipped", S.ADV_RAW, "_raw_peers", "_raw_norm"
)
_REWARD_RAW_FILLED = "_reward_raw_filled"
_VALID, _VALID_TOGGLED = "_valid", "_valid_toggled"
_GID, _BID = GID, "_bid"  # group id; batch (step) id for batch-level statistics
_GID_KEPT, _GID_KEPT_RAW, _KEPT_RAW = "_gid_kept", "_gid_kept_raw", "_kept_raw"


def add_advantages(
    lf: pl.LazyFrame,
    reward: str,
    gid: str,
    kept: str,
    a: AdvantageParams,
    out: AdvColumns,
    runs: Runs | None,
) -> pl.LazyFrame:
    """NeMo-RL GRPO (with its valid mask) or a peer trainer's estimator, over groups `gid`."""
    if a.estimator == "grpo":
        return add_grpo(lf, reward, _VALID, _groups(a, gid, runs), a, out)
    active = ~pl.col(IS_VAL) & pl.col(kept)
    return add_peer_advantages(lf, reward, gid, _BID, a, out, active)


PER_CONFIG_NULL_ON_VALIDATION = (
    S.BASELINE,
    S.STD,
    S.ADV_UNCLIPPED,
    S.ADVANTAGE,
    S.BASELINE_NO_MASKED,
)


RowSink = Callable[[pl.DataFrame], None]
DEFAULT_CHUNK_ROWS = 1_000_000
CHART_VALUES = 2_000_000  # about this many deductions and minutes per config are kept for charts


@dataclass
class ReplayResult:
    """The report tables of spec §6 for one or more configs.

    `rows` and `groups` are None when they were streamed to sinks instead of kept in memory.
    `advantages` (trainable rows) and `deductions` (charged rows) per config_id and the input's
    `minutes` back the distribution charts and the quantiles.
    """

    rows: pl.DataFrame | None
    groups: pl.DataFrame | None
    steps: pl.DataFrame
    summary: pl.DataFrame
    configs: list[ReplayConfig]
    advantages: dict[str, pl.Series] = field(default_factory=dict)
    deductions: dict[str, pl.Series] = field(default_factory=dict)
    minutes: pl.Series | None = None


def _with_valid(lf: pl.LazyFrame, a: AdvantageParams) -> pl.LazyFrame:
    """The rows that vote in the baseline (`_VALID`) and, for the masking diagnostic, the other
    choice (`_VALID_TOGGLED`). Columns, not literals: a literal would be summed once per group."""
    all_rows, not_masked = pl.lit(True), ~pl.col(S.MASKED)
    return lf.with_columns(
        (not_masked if a.exclude_masked else all_rows).alias(_VALID),
        (all_rows if a.exclude_masked else not_masked).alias(_VALID_TOGGLED),
    )


def _filter_metric(a: AdvantageParams, reward: str) -> pl.Expr:
    """What the dynamic-sampling filter looks at: the outcome, or a reward column."""
    return pl.col(S.RESOLVED).cast(pl.Float64) if a.filter_on == "resolved" else pl.col(reward)


def _survivors(a: AdvantageParams, kept: str) -> pl.Expr:
    """Group id of the survivors: advantages are recomputed on the rows the filter kept."""
    if a.filter == "none":  # every row kept: the groups stay as they are
        return pl.col(_GID)
    return pl.struct(_GID, kept).rank("dense")


def _groups(a: AdvantageParams, survivors: str, runs: Runs | None) -> Groups:
    """The survivors' groups as the chunk's runs when nothing is filtered (the fast path)."""
    return runs if a.filter == "none" and runs is not None else survivors


RawKey = tuple[AdvantageParams, bool]


def raw_key(cfg: ReplayConfig) -> RawKey:
    """What the shaping-off advantages depend on: the estimator and which rows are masked."""
    return cfg.advantage, cfg.shaping.mask_flagged


def raw_plan(lf: pl.LazyFrame, key: RawKey, runs: Runs | None = None) -> pl.LazyFrame:
    """`advantage_raw`, the advantages with shaping off (one column, lazy).

    They do not depend on the shaping parameters, so a sweep computes them once per `raw_key`.
    The shaping-off run filters on its own rewards.
    """
    a, mask_flagged = key
    lf = _with_valid(
        lf.with_columns(
            pl.col(S.REWARD).fill_null(0.0).alias(_REWARD_RAW_FILLED),
            masked(mask_flagged).alias(S.MASKED),
        ),
        a,
    )
    metric = _filter_metric(a, _REWARD_RAW_FILLED)
    lf = add_kept(lf, metric, _GID, _VALID, a, _KEPT_RAW)
    lf = lf.with_columns(_survivors(a, _KEPT_RAW).alias(_GID_KEPT_RAW))
    lf = add_advantages(lf, _REWARD_RAW_FILLED, _GID_KEPT_RAW, _KEPT_RAW, a, _RAW, runs)
    trained = ~pl.col(IS_VAL) & pl.col(_KEPT_RAW)
    return lf.select(pl.when(trained).then(pl.col(S.ADV_RAW).cast(pl.Float64)).alias(S.ADV_RAW))


def row_plan(
    lf: pl.LazyFrame, cfg: ReplayConfig, raw: pl.Series, runs: Runs | None = None
) -> pl.LazyFrame:
    """Per-row shaping, dynamic-sampling filter and advantages for one config (lazy); `raw` is
    the chunk's `raw_plan` for this config's `raw_key`, `runs` the runs of the chunk's `_GID`."""
    a = cfg.advantage
    inputs = [c for c in lf.collect_schema().names() if c not in CHUNK_IDS]
    lf = lf.with_columns(pl.lit(cfg.config_id).alias(S.CONFIG_ID))
    lf = apply_shaping(lf, cfg.shaping).with_columns(
        pl.col(S.REWARD_RAW).fill_null(0.0).alias(_REWARD_RAW_FILLED),
    )
    lf = _with_valid(lf, a)
    # OpenRLHF filters on the raw score even in the shaped run.
    metric = _filter_metric(a, _REWARD_RAW_FILLED if a.filter == "openrlhf" else S.REWARD_SHAPED)
    lf = add_kept(lf, metric, _GID, _VALID, a, S.KEPT)
    lf = lf.with_columns(
        (~pl.col(IS_VAL) & ~pl.col(S.MASKED) & pl.col(S.KEPT)).alias(TRAINABLE),
        _survivors(a, S.KEPT).alias(_GID_KEPT),
    )
    lf = add_advantages(lf, S.REWARD_SHAPED, _GID_KEPT, S.KEPT, a, SHAPED, runs)
    # The baseline with masked rows voting vs not, whichever the config does not use.
    toggled = a
    if a.estimator != "grpo":
        toggled = a.model_copy(
            update={"estimator": "grpo", "baseline": "loo" if "rloo" in a.estimator else "mean"}
        )
    lf = add_baseline_and_std(
        lf,
        S.REWARD_SHAPED,
        _VALID_TOGGLED,
        _groups(a, _GID_KEPT, runs),
        toggled,
        S.BASELINE_NO_MASKED,
        "_toggled_std",
    )
    shaped_rows = ~pl.col(IS_VAL) & pl.col(S.KEPT)
    lf = lf.with_columns(
        *(
            pl.when(shaped_rows).then(pl.col(c).cast(pl.Float64)).alias(c)
            for c in PER_CONFIG_NULL_ON_VALIDATION
        ),
        pl.lit(raw).alias(S.ADV_RAW),
    )
    return lf.select(*inputs, *S.REPORT_COLUMNS, IS_VAL, TRAINABLE, _GID)


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


@dataclass
class InputPiece:
    """Config-independent values of one chunk: minutes (thinned, for charts) and run times."""

    minutes: pl.Series
    run_times: pl.Series


CHUNK_ORDER = (S.STEP, S.GROUP_ID, IS_VAL, S.ROLLOUT_INDEX)
CHUNK_IDS = (IS_VAL, _GID, _BID)


def _changed(keys: Sequence[str]) -> pl.Expr:
    """True on the first row of each run of equal `keys` (rows in order)."""
    return pl.any_horizontal(pl.col(k) != pl.col(k).shift(1) for k in keys).fill_null(True)


def read_chunk(rollouts: Rollouts, lo: int, hi: int) -> pl.DataFrame:
    """The rows of steps [lo, hi] in the trainer's order (rollout_index within each group), with
    a sorted integer group id (step, group_id, split) and a batch id (step, split).

    Float sums then do not depend on how the input happened to be ordered, and every per-group
    window runs over a sorted integer key, which polars evaluates without hashing. Inputs that are
    already in order (trainer logs, synth) skip the sort.
    """
    df = collect(
        rollouts.chunk(lo, hi).with_columns((pl.col(S.SPLIT) == S.SPLIT_VALIDATION).alias(IS_VAL))
    )
    if not in_order(df, CHUNK_ORDER):
        df = df.sort(CHUNK_ORDER)
    step_no = _changed([S.STEP]).cum_sum().cast(pl.Int64)
    return df.with_columns(
        _changed(CHUNK_ORDER[:3]).cum_sum().cast(pl.Int64).set_sorted().alias(_GID),
        (step_no * 2 + pl.col(IS_VAL).cast(pl.Int64)).alias(_BID),
    ).rechunk()


def input_piece(chunk: pl.DataFrame, chart_every: int) -> InputPiece:
    train_minutes = chunk.select(minutes().filter(~pl.col(IS_VAL)).alias(S.MINUTES))
    thinned = train_minutes.to_series().gather_every(chart_every)
    # float32 keeps run times to a fraction of a millisecond at half the memory (quantiles only).
    return InputPiece(minutes=thinned, run_times=chunk[S.RUN_TIME].cast(pl.Float32))


def replay_batch(
    chunk: pl.DataFrame,
    batch: Sequence[ReplayConfig],
    chart_every: int,
    raw_cache: dict[RawKey, pl.Series] | None = None,
) -> list[ConfigPiece]:
    """Every config of a batch over one chunk, through one `collect_all` per stage.

    `raw_cache` keeps the chunk's shaping-off advantages between batches of the same chunk.
    """
    source = chunk.lazy()
    raw_cache = {} if raw_cache is None else raw_cache
    missing = list(dict.fromkeys(k for k in map(raw_key, batch) if k not in raw_cache))
    runs = Runs(chunk[_GID])
    raws = collect_all([raw_plan(source, k, runs) for k in missing])
    for key, raw in zip(missing, raws, strict=True):
        raw_cache[key] = raw.to_series()
    plans = [row_plan(source, cfg, raw_cache[raw_key(cfg)], runs) for cfg in batch]
    # One chunk per frame: float sums depend on chunk boundaries.
    row_frames = [f.rechunk() for f in collect_all(plans)]
    groups = [group_table(rows, cfg.shaping) for cfg, rows in zip(batch, row_frames, strict=True)]
    return [
        ConfigPiece(
            config_id=cfg.config_id,
            groups=groups[i],
            group_parts=group_partials(groups[i]),
            steps=step_table(rows, groups[i], cfg.shaping, cfg.metrics_by),
            partials=row_partials(rows),
            # float32 configs compute float32 advantages: keeping them as float32 loses nothing.
            # One column filtered, not the whole frame.
            advantages=rows[S.ADVANTAGE]
            .filter(rows[TRAINABLE])
            .cast(pl.Float32 if cfg.advantage.precision == "float32" else pl.Float64),
            deductions=rows[S.DEDUCTION].filter(rows[S.CHARGED]).gather_every(chart_every),
            rows=rows.drop(IS_VAL, TRAINABLE, _GID),
        )
        for i, (cfg, rows) in enumerate(zip(batch, row_frames, strict=True))
    ]


class Accumulator:
    """Per-config pieces of a chunked replay, finished into the report tables at the end.

    Pieces must arrive in (chunk, config) order for the tables to come out in a fixed order.
    """

    def __init__(
        self, configs: list[ReplayConfig], keep_rows: bool, group_sink: RowSink | None = None
    ) -> None:
        self.configs = configs
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
            self.group_sink(piece.groups)
            piece.groups = None
        self.pieces[piece.config_id].append(piece)

    def add_input(self, piece: InputPiece) -> None:
        self.inputs.append(piece)

    def finish(self) -> ReplayResult:
        inputs = input_statistics(pl.concat([p.run_times for p in self.inputs], rechunk=False))
        summaries, groups_all, steps_all = [], [], []
        advantages, deductions = {}, {}
        for cfg in self.configs:
            cid = cfg.config_id
            pieces = self.pieces[cid]
            groups = (
                None
                if self.group_sink
                else pl.concat([p.groups for p in pieces], how="diagonal_relaxed")
            )
            steps = pl.concat([p.steps for p in pieces], how="diagonal_relaxed")
            advantages[cid] = pl.concat([p.advantages for p in pieces])
            deductions[cid] = pl.concat([p.deductions for p in pieces])
            names = [
                *trainer_names(cfg.shaping),
                "advantages/mean",
                "advantages/max",
                "advantages/min",
            ]
            names += ["validation/accuracy", "validation/total_reward/mean"]
            partials = pl.concat([p.partials for p in pieces])
            summaries.append(
                {
                    S.CONFIG_ID: cid,
                    "label": cfg.label,
                    **cfg.flat(),
                    **summarise_steps(steps, names),
                    **finish_diagnostics(
                        partials,
                        advantages[cid],
                        pl.concat([p.group_parts for p in pieces]),
                        steps.height,
                        inputs,
                    ),
                }
            )
            if groups is not None:
                groups_all.append(groups)
            steps_all.append(steps)
        return ReplayResult(
            rows=pl.concat(self.rows, how="diagonal_relaxed") if self.keep_rows else None,
            groups=pl.concat(groups_all, how="diagonal_relaxed") if groups_all else None,
            steps=pl.concat(steps_all, how="diagonal_relaxed"),
            summary=pl.from_dicts(summaries, infer_schema_length=None),
            configs=self.configs,
            advantages=advantages,
            deductions=deductions,
            minutes=pl.concat([p.minutes for p in self.inputs]),
        )


def batches(configs: Sequence[ReplayConfig], size: int) -> list[list[ReplayConfig]]:
    """Configs in batches of `size`, deduplicated by config_id, in order."""
    unique = list({c.config_id: c for c in configs}.values())
    return [unique[i : i + size] for i in range(0, len(unique), size)]


def plan(rollouts: Rollouts, chunk_rows: int) -> tuple[list[tuple[int, int]], int]:
    """The chunks of whole steps and the thinning of chart values for an input."""
    counts = rollouts.step_counts()
    return plan_chunks(counts, chunk_rows), max(1, int(counts["len"].sum()) // CHART_VALUES)


def run_replay(
    rollouts: Rollouts,
    configs: Sequence[ReplayConfig],
    progress: Callable[[int, int], None] | None = None,
    *,
    configs_per_pass: int = 4,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    row_sink: RowSink | None = None,
    group_sink: RowSink | None = None,
) -> ReplayResult:
    """Replay every config over the rollouts, chunk by chunk of whole steps, and build the tables.

    Each chunk is read once; its configs run in batches through one `collect_all`. Per-row
    results go to `row_sink` (e.g. a Parquet writer) when given, else they are kept in memory.
    Peak memory is about chunk_rows x configs_per_pass rows of results.
    """
    if not configs:
        raise ValueError("run_replay needs at least one config")
    groups_of_configs = batches(configs, configs_per_pass)
    unique = [c for b in groups_of_configs for c in b]
    chunks, chart_every = plan(rollouts, chunk_rows)
    acc = Accumulator(unique, keep_rows=row_sink is None, group_sink=group_sink)
    total, done = len(chunks) * len(unique), 0
    for lo, hi in chunks:
        chunk = read_chunk(rollouts, lo, hi)
        acc.add_input(input_piece(chunk, chart_every))
        raw_cache: dict[RawKey, pl.Series] = {}
        for batch in groups_of_configs:
            for piece in replay_batch(chunk, batch, chart_every, raw_cache):
                if row_sink is not None and piece.rows is not None:
                    row_sink(piece.rows)
                acc.add(piece)
            done += len(batch)
            if progress is not None:
                progress(done, total)
    return acc.finish()
