"""Load rollout files into the canonical table and validate it, reporting every problem at once."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from replay_cli import schema as S
from replay_cli.errors import SchemaError
from replay_cli.frames import collect
from replay_cli.io.gym import mask_note
from replay_cli.io.parquet import discover, scan_file
from replay_cli.rollouts.chunks import COUNT_ENGINE, fill_positions, in_chunk, step_counts
from replay_cli.rollouts.value_checks import (
    Coerced,
    check_all_values,
    coerced_values,
    parses_as_number,
    problems_message,
)


@dataclass(frozen=True)
class InputFile:
    """One input file as recorded in the manifest."""

    path: str
    size: int
    sha256: str


@dataclass
class Rollouts:
    """The validated canonical rollout table (lazy) and what was learned while loading it.

    `frame` has every column but a missing or null `rollout_index` filled in: that takes a window
    over each group, which would stop polars from pushing a chunk's step filter into the scan.
    `chunk(lo, hi)` gives the rows of steps lo..hi complete."""

    frame: pl.LazyFrame
    files: list[InputFile]
    extra_columns: list[str]
    resolved_derived: bool = False
    notes: list[str] = field(default_factory=list)
    absent: frozenset[str] = frozenset()
    """Optional canonical columns the input lacks, filled with their defaults (spec §2): a
    setting that reads one cannot act on this input (rollouts/fit.py)."""
    fill_positions: bool = False
    counts: pl.DataFrame | None = None  # rows per step, once known
    coerced: list[Coerced] = field(default_factory=list)
    """Values the trainer would coerce (a run time that does not parse, a null reward or call
    count), read as it reads them: advice/findings.py says so on every surface."""

    def step_counts(self) -> pl.DataFrame:
        """Rows per step (sorted; a null step is its own row), counted once."""
        if self.counts is None:
            self.counts = step_counts(self.frame)
        return self.counts

    def chunk(self, lo: int, hi: int) -> pl.LazyFrame:
        """Rows of steps lo..hi with rollout_index complete (groups never span steps)."""
        return fill_positions(self.frame.filter(in_chunk(lo, hi)), self.fill_positions)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _dtype_problems(path: str, schema: pl.Schema, group_size: int | None) -> list[str]:
    problems = []
    for col in S.REQUIRED:
        if col not in schema:
            problems.append(f"{path}: required column '{col}' is missing{_look_alike(col, schema)}")
    if S.GROUP_ID not in schema and group_size is None:
        problems.append(
            f"{path}: column '{S.GROUP_ID}' is missing; try --group-size N (consecutive rows) "
            f"or --map COLUMN={S.GROUP_ID}"
        )
    for col, (accepted, what) in S.ACCEPTED.items():
        if col in schema and not isinstance(schema[col], accepted):
            problems.append(f"{path}: column '{col}' has type {schema[col]}, expected {what}")
    return problems


RUN_TIME_LIKE = re.compile(
    r"(run_?time|runtime|wall_?(clock|time)|elapsed|duration|seconds|secs|latency|time_s\b)",
    re.IGNORECASE,
)
"""Column names that look like a rollout's run time (openhands_run_time is one harness's name)."""
CALLS_LIKE = re.compile(r"call|tool_?uses?\b", re.IGNORECASE)
"""Column names that look like a rollout's tool-call count (n_calls, num_tool_calls, ...)."""
LOOK_ALIKES = {
    S.RUN_TIME: (RUN_TIME_LIKE, "a run time in seconds", " (the name is one agent harness's)"),
    S.CALLS: (CALLS_LIKE, "the tool-call count", ""),
}
"""Canonical columns an input often names otherwise: the pattern, what it holds, and why."""


def look_alike(col: str, columns: Sequence[str]) -> str | None:
    """The first column of `columns` that looks like the canonical `col` (none is canonical or
    an alias already), or None."""
    if col not in LOOK_ALIKES:
        return None
    known = set(S.ACCEPTED) | set(S.ALIASES) | set(S.CANONICAL)
    pattern = LOOK_ALIKES[col][0]
    return next((c for c in columns if c not in known and pattern.search(c)), None)


def look_alike_hint(col: str, columns: Sequence[str]) -> str:
    """'NAME' looks like <what>: try --map NAME=col, or "" where no column looks like it."""
    like = look_alike(col, columns)
    if like is None:
        return ""
    _, what, why = LOOK_ALIKES[col]
    return f"{like!r} looks like {what}: try --map {like}={col}{why}"


def _look_alike(col: str, schema: pl.Schema) -> str:
    """For a missing run time: the columns that look like one, as a --map to try."""
    if col != S.RUN_TIME:
        return ""
    hint = look_alike_hint(col, schema.names())
    return f"; {hint}" if hint else ""


def look_alike_notes(columns: Sequence[str]) -> list[str]:
    """A note where the input lacks `calls` while another column looks like it (the default
    would stand in for it silently: 0 tool calls on every row)."""
    hint = look_alike_hint(S.CALLS, columns) if S.CALLS not in columns else ""
    note = f"no '{S.CALLS}' column, so every row counts {S.DEFAULTS[S.CALLS]!r}; {hint}"
    return [note] if hint else []


def load_rollouts(
    sources: Sequence[str | Path],
    *,
    mapping: dict[str, str] | None = None,
    group_size: int | None = None,
    strict: bool = False,
    check_values: bool = True,
) -> Rollouts:
    """Scan, normalise and validate rollout files; raise SchemaError listing every problem.

    `check_values=False` skips the pass over the values and the file hashes: for workers of a
    distributed replay whose driver has already validated the same files."""
    paths = discover(sources)
    scanned = [scan_file(path, mapping or {}) for path in paths]
    files = [InputFile(str(p), p.stat().st_size, _sha256(p)) for p in paths] if check_values else []
    names = [str(p) for p in paths]
    out = _build([lf for lf, _ in scanned], names, files, group_size, strict, check_values)
    out.notes[:0] = [
        dropped_note(name, written)
        for name, (_, written) in zip(names, scanned, strict=True)
        if written
    ]
    return out


def dropped_note(name: str, written: list[str]) -> str:
    """The loading note for columns a replay writes itself, found in an input and ignored."""
    return (
        f"{name}: ignored {len(written)} column(s) that a replay writes itself "
        f"({', '.join(written[:6])}{', ...' if len(written) > 6 else ''}); they are recomputed"
    )


def rollouts_from_frame(
    frame: pl.DataFrame | pl.LazyFrame,
    *,
    group_size: int | None = None,
    strict: bool = False,
    name: str = "<frame>",
) -> Rollouts:
    """Validate an in-memory table the same way as a file (for notebooks and tests)."""
    lf = frame.lazy()
    columns = lf.collect_schema().names()
    renames = {a: c for a, c in S.ALIASES.items() if a in columns and c not in columns}
    written = [c for c in columns if c in S.written_by_replay()]
    lf = (
        lf.drop(written)
        .rename(renames)
        .with_row_index(S.SOURCE_ROW)
        .with_columns(pl.lit(name).alias(S.SOURCE_FILE))
    )
    out = _build([lf], [name], [], group_size, strict)
    if written:
        out.notes.insert(0, dropped_note(name, written))
    return out


def _build(
    frames: list[pl.LazyFrame],
    names: list[str],
    files: list[InputFile],
    group_size: int | None,
    strict: bool,
    check_values: bool = True,
) -> Rollouts:
    problems: list[str] = []
    extra: list[str] = []
    for name, lf in zip(names, frames, strict=True):
        sch = lf.collect_schema()
        problems.extend(_dtype_problems(name, sch, group_size))
        extra.extend(c for c in sch.names() if c not in S.CANONICAL and c not in extra)
    problems.extend(_disagreements(names, [f.collect_schema() for f in frames]))
    if problems:
        raise SchemaError(problems_message(problems))
    if group_size is not None and group_size < 1:
        raise SchemaError(f"--group-size must be at least 1, got {group_size}")
    for col in (S.SOURCE_ROW, S.SOURCE_FILE):
        extra.remove(col)
    has = set().union(*(f.collect_schema().names() for f in frames))
    lf = pl.concat([_normalise(f) for f in frames], how="diagonal_relaxed")
    lf, notes = _derive(lf, has, group_size)
    notes.extend(look_alike_notes([*(c for c in S.CANONICAL if c in has), *extra]))
    # The window that numbers rows costs more than the scan: only run it when there is a gap.
    fill = S.GROUP_ID in has and (
        S.ROLLOUT_INDEX not in has or _null_count(lf, S.ROLLOUT_INDEX, names) > 0
    )
    counts = None
    coerced = coerced_values(frames) if check_values else []
    refused = [c.problem() for c in coerced if strict and c.refused_by_strict]
    if refused:
        raise SchemaError(problems_message(refused))
    if check_values:
        counts = check_all_values(
            lf, group_size, strict, group_derived=S.GROUP_ID not in has, fill=fill
        )
    return Rollouts(
        lf,
        files,
        extra,
        resolved_derived=S.RESOLVED not in has,
        notes=notes,
        absent=frozenset(c for c in S.CANONICAL if c not in has),
        fill_positions=fill,
        counts=counts,
        coerced=coerced,
    )


def _null_count(lf: pl.LazyFrame, column: str, names: list[str]) -> int:
    """Nulls in one column of the whole input (one streaming pass over that column)."""
    try:
        return int(lf.select(pl.col(column).null_count()).collect(engine=COUNT_ENGINE).item())
    except pl.exceptions.PolarsError as exc:
        raise SchemaError(
            f"Cannot read the rollout input ({', '.join(names)}): {exc}\n\n"
            "Check that the files are complete."
        ) from None


def _disagreements(names: list[str], schemas: list[pl.Schema]) -> list[str]:
    """Files must agree on which canonical columns they have, and on the kind of group id.

    A column missing from one file would otherwise be filled with its default for that file's rows
    only (e.g. `resolved` false), silently changing the replay."""
    problems = []
    for col in S.CANONICAL:
        having = [n for n, sch in zip(names, schemas, strict=True) if col in sch]
        if having and len(having) < len(names):
            lacking = [n for n in names if n not in having]
            problems.append(
                f"column '{col}' is in {having[0]} but missing from {lacking[0]}"
                f"{f' and {len(lacking) - 1} more' if len(lacking) > 1 else ''}; "
                "the files' schemas must agree (use --map, or replay them separately)"
            )
    kinds = {
        n: "string" if sch[S.GROUP_ID] in (pl.String, pl.Categorical) else "integer"
        for n, sch in zip(names, schemas, strict=True)
        if S.GROUP_ID in sch
    }
    if len(set(kinds.values())) > 1:
        first = next(iter(kinds.items()))
        other = next((n, k) for n, k in kinds.items() if k != first[1])
        problems.append(
            f"column '{S.GROUP_ID}' is {first[1]} in {first[0]} but {other[1]} in {other[0]}; "
            "the files' schemas must agree"
        )
    return problems


def _normalise(lf: pl.LazyFrame) -> pl.LazyFrame:
    """Cast present canonical columns to their canonical types (per file, before concatenation)."""
    sch = lf.collect_schema()
    exprs = []
    for col, dtype in S.NORMALISED_TYPES.items():
        if col not in sch:
            continue
        if col == S.RUN_TIME and sch[col] == pl.String:
            # Upstream float() semantics: a non-numeric string becomes null, then 0 minutes
            # (counted and named: coerced_values).
            exprs.append(parses_as_number(col))
        elif col == S.RUN_TIME:
            exprs.append(pl.col(col).cast(pl.Float64, strict=False))
        elif col == S.SPLIT:
            exprs.append(pl.col(col).cast(pl.String))
        elif isinstance(dtype, pl.Boolean) and sch[col] != pl.Boolean:
            exprs.append(pl.col(col) != 0)
        else:
            exprs.append(pl.col(col).cast(dtype))
    if S.GROUP_ID in sch and isinstance(sch[S.GROUP_ID], pl.Categorical):
        exprs.append(pl.col(S.GROUP_ID).cast(pl.String))
    return lf.with_columns(exprs)


def _derive(
    lf: pl.LazyFrame, has: set[str], group_size: int | None
) -> tuple[pl.LazyFrame, list[str]]:
    """Fill optional columns with their defaults (spec §2) and derive groups from row order."""
    notes: list[str] = []
    fills: list[pl.Expr] = []
    if S.STEP not in has:
        fills.append(pl.lit(S.DEFAULTS[S.STEP], pl.Int64).alias(S.STEP))
    if S.GROUP_ID not in has:
        assert group_size is not None
        lf = lf.with_row_index("_global_row")
        fills.append((pl.col("_global_row").cast(pl.Int64) // group_size).alias(S.GROUP_ID))
        if S.ROLLOUT_INDEX not in has:
            fills.append((pl.col("_global_row").cast(pl.Int64) % group_size).alias(S.ROLLOUT_INDEX))
        notes.append(f"groups derived from row order: {group_size} consecutive rows per group")
    if S.RESOLVED not in has:
        fills.append((pl.col(S.REWARD) > 0).alias(S.RESOLVED))
        notes.append("no 'resolved' column: resolved = reward > 0")
    for col, default in S.DEFAULTS.items():
        if col not in has and col != S.STEP:
            fills.append(pl.lit(default).alias(col))
    lf = lf.with_columns(fills)
    if S.GROUP_ID in has and S.ROLLOUT_INDEX not in has:
        lf = lf.with_columns(pl.lit(None, pl.Int64).alias(S.ROLLOUT_INDEX))  # filled per chunk
    lf = lf.with_columns(
        *(pl.col(c).fill_null(v) for c, v in S.DEFAULTS.items() if c != S.STEP),
        pl.col(S.RESOLVED).fill_null(False),
    )
    if "_global_row" in lf.collect_schema().names():
        lf = lf.drop("_global_row")
    if S.MASK_SOURCE in has:  # an import from NeMo-Gym rows: where mask_sample came from
        counts = collect(lf.group_by(S.MASK_SOURCE).len().sort(S.MASK_SOURCE))
        notes.append(mask_note(dict(counts.rows())))
    return lf, notes
