"""Value checks of the rollout table, chunk by chunk of whole steps: every problem is gathered
(count and first rows, with file and row number) and reported at once."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from replay_cli import schema as S
from replay_cli.errors import SchemaError
from replay_cli.frames import collect
from replay_cli.rollouts.chunks import (
    COUNT_ENGINE,
    fill_positions,
    in_chunk,
    in_order,
    plan_chunks,
    run_starts,
    step_counts,
)

MAX_ROWS_SHOWN = 5
MAX_RUN_TIME_S = 7 * 24 * 3600.0  # longer agent runs are a unit mistake (milliseconds?)
CHECK_CHUNK_ROWS = 2_000_000
DUPLICATE_KEY = (f"{S.STEP}, {S.GROUP_ID}, {S.ROLLOUT_INDEX}", "duplicate key")


def _has_duplicate_key(chunk: pl.DataFrame) -> bool:
    """Whether two rows share (step, group_id, rollout_index): adjacent equal keys once sorted
    (a sort of three columns costs far less than hashing the struct of every row)."""
    key = [S.STEP, S.GROUP_ID, S.ROLLOUT_INDEX]
    ordered = chunk.select(key)
    if not in_order(ordered, key):  # logs usually are: then no sort is needed
        ordered = ordered.sort(key)
    return not ordered.select(run_starts(key).all()).item()


def _checks(strict: bool) -> dict[tuple[str, str], pl.Expr]:
    """(column, problem) -> expression that is True on offending rows, within a chunk of steps."""
    key = [S.STEP, S.GROUP_ID, S.ROLLOUT_INDEX]
    checks = {
        (S.GROUP_ID, "is null"): pl.col(S.GROUP_ID).is_null(),
        (S.REWARD, "is NaN or infinite"): ~pl.col(S.REWARD).is_finite(),
        (S.SPLIT, f"is not '{S.SPLIT_TRAIN}' or '{S.SPLIT_VALIDATION}'"): ~pl.col(S.SPLIT).is_in(
            [S.SPLIT_TRAIN, S.SPLIT_VALIDATION]
        ),
        (S.CALLS, "is negative"): pl.col(S.CALLS) < 0,
        # The key holds the step, so duplicates never span two chunks of whole steps.
        DUPLICATE_KEY: pl.struct(key).is_duplicated(),
        (S.RUN_TIME, f"is over a week ({MAX_RUN_TIME_S:.0f} s): run times must be seconds"): (
            pl.col(S.RUN_TIME).is_finite() & (pl.col(S.RUN_TIME) > MAX_RUN_TIME_S)
        ),
    }
    if strict:
        checks[(S.RUN_TIME, "is NaN or infinite (--strict)")] = ~pl.col(S.RUN_TIME).is_finite()
    return checks


class _Problems:
    """Counts and first offending rows per check, gathered chunk by chunk."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, str], int] = {}
        self.rows: dict[tuple[str, str], list[str]] = {}

    def add(self, key: tuple[str, str], n: int, rows: pl.DataFrame) -> None:
        if not n:
            return
        self.counts[key] = self.counts.get(key, 0) + n
        shown = self.rows.setdefault(key, [])
        for f, r in zip(rows[S.SOURCE_FILE], rows[S.SOURCE_ROW], strict=True):
            if len(shown) < MAX_ROWS_SHOWN:
                shown.append(f"{f} row {r}")

    def messages(self) -> list[str]:
        return [
            f"column '{col}' {what} in {n} row(s), first: {'; '.join(self.rows[(col, what)])}"
            for (col, what), n in self.counts.items()
        ]


def check_all_values(
    lf: pl.LazyFrame, group_size: int | None, strict: bool, group_derived: bool, fill: bool
) -> pl.DataFrame:
    """Every value check, in one pass per chunk of whole steps (bounded memory); returns the
    rows per step, which the replay plans its chunks with."""
    cols = [S.SOURCE_FILE, S.SOURCE_ROW]
    try:
        counts = step_counts(lf)
        if counts["len"].sum() == 0:
            raise SchemaError("The input has zero rows.\n\nCheck the file or the glob.")
        found = _Problems()
        # Checks that look across steps run once over the whole input (integers only).
        null_steps = lf.filter(pl.col(S.STEP).is_null())
        found.add(
            (S.STEP, "is null"),
            int(counts.filter(pl.col(S.STEP).is_null())["len"].sum()),
            null_steps.select(cols).head(MAX_ROWS_SHOWN).collect(engine=COUNT_ENGINE),
        )
        if group_derived:
            spans = (
                lf.group_by(S.GROUP_ID)
                .agg(pl.col(S.STEP).n_unique().alias("n"))
                .filter(pl.col("n") > 1)
            )
            bad = lf.join(spans.select(S.GROUP_ID), on=S.GROUP_ID, how="semi")
            found.add(
                (S.STEP, f"differs inside a group of {group_size} consecutive rows"),
                int(bad.select(pl.len()).collect(engine=COUNT_ENGINE).item()),
                bad.select(cols).sort(cols).head(MAX_ROWS_SHOWN).collect(engine=COUNT_ENGINE),
            )
        checks = _checks(strict)
        needed = sorted({*cols, *(c for e in checks.values() for c in e.meta.root_names())})
        for lo, hi in plan_chunks(counts, CHECK_CHUNK_ROWS):
            # Read once, then count every check in one pass over the chunk in memory.
            chunk = collect(fill_positions(lf.filter(in_chunk(lo, hi)), fill).select(needed))
            cheap = {k: e for k, e in checks.items() if k != DUPLICATE_KEY}
            if _has_duplicate_key(chunk):
                cheap[DUPLICATE_KEY] = checks[DUPLICATE_KEY]
            n_bad = chunk.select(
                e.fill_null(False).sum().alias(str(i)) for i, e in enumerate(cheap.values())
            ).row(0)
            for n, (key, expr) in zip(n_bad, cheap.items(), strict=True):
                if n:  # `add` ignores 0, but the filter costs a pass over the chunk
                    found.add(key, n, chunk.filter(expr).select(cols).head(MAX_ROWS_SHOWN))
    except pl.exceptions.PolarsError as exc:
        raise SchemaError(
            f"Cannot read the rollout input: {exc}\n\nCheck that the files are complete."
        ) from None
    problems = found.messages()
    if problems:
        raise SchemaError(problems_message(problems))
    return counts


def problems_message(problems: list[str]) -> str:
    """One paragraph per problem, under a count, with where to read more."""
    n = len(problems)
    head = f"{n} problem{'s' if n > 1 else ''} in the rollout input:"
    body = "\n".join(f"  - {p}" for p in problems)
    return f"{head}\n{body}\n\nRows are counted from 0 within each file. See `replay-cli inspect --help`."


DURATION_EXAMPLES = "'12m', '1h02m', '00:12:00', '720s'"
"""Run times written as durations that `import table --durations` reads into seconds (the hint a
run time that does not parse gets, on every surface)."""


@dataclass(frozen=True)
class Coerced:
    """Values of one column that the trainer reads as something else (its `float()` fallback, or
    `reward or 0.0`): the replay reads them the same way, and says so."""

    column: str
    count: int
    rows: int
    """Rows of the whole input (the share's denominator)."""
    read_as: str
    examples: tuple[str, ...]
    where: tuple[str, ...]
    refused_by_strict: bool
    """A value that does not parse at all (`--strict` refuses it; a null is only missing)."""

    @property
    def share(self) -> float:
        return self.count / self.rows

    def what(self) -> str:
        """'672 of 4704 values of 'openhands_run_time' (14.3%) do not parse as a number (…)'."""
        kind = "do not parse as a number" if self.refused_by_strict else "are null"
        shown = ", ".join(repr(v) for v in self.examples)
        return (
            f"{self.count} of {self.rows} values of '{self.column}' ({self.share:.1%}) {kind}"
            f"{f' (e.g. {shown})' if shown else ''}"
        )

    def problem(self) -> str:
        """The --strict refusal's paragraph: file, column, rows and values."""
        return (
            f"column '{self.column}' does not parse as a number in {self.count} row(s) "
            f"(values {', '.join(repr(v) for v in self.examples)}), first: {'; '.join(self.where)}; "
            f"the trainer's float() fallback would read them as {self.read_as} (--strict)"
        )


EXAMPLES_SHOWN = 3


def parses_as_number(col: str) -> pl.Expr:
    """A string column as the trainer's float() reads it: surrounding blanks ignored, anything
    else that is not a number null."""
    return pl.col(col).str.strip_chars().cast(pl.Float64, strict=False)


def _coercions(schema: pl.Schema) -> dict[str, tuple[pl.Expr, str, bool]]:
    """column -> (rows it coerces, what they become, whether they do not parse at all)."""
    out: dict[str, tuple[pl.Expr, str, bool]] = {}
    if S.RUN_TIME in schema and schema[S.RUN_TIME] == pl.String:
        unparsed = pl.col(S.RUN_TIME).is_not_null() & parses_as_number(S.RUN_TIME).is_null()
        out[S.RUN_TIME] = (unparsed, "0 minutes", True)
    if S.REWARD in schema:
        out[S.REWARD] = (pl.col(S.REWARD).is_null(), "0 (reward or 0.0)", False)
    if S.CALLS in schema:
        out[S.CALLS] = (pl.col(S.CALLS).is_null(), "0 calls", False)
    return out


def coerced_values(frames: list[pl.LazyFrame]) -> list[Coerced]:
    """Every value of the columns the shaping reads that the trainer would coerce, counted over
    the input files (one pass over those columns, and one over the offending rows)."""
    found: dict[str, list] = {}
    total = 0
    try:
        for lf in frames:
            checks = _coercions(lf.collect_schema())
            counts = (
                lf.select(
                    pl.len().alias("_rows"), *(e.sum().alias(c) for c, (e, _, _) in checks.items())
                )
                .collect(engine=COUNT_ENGINE)
                .row(0, named=True)
            )
            total += counts.pop("_rows")
            for col, n in counts.items():
                if not n:
                    continue
                expr, read_as, unparsed = checks[col]
                bad = lf.filter(expr).select(S.SOURCE_FILE, S.SOURCE_ROW, col)
                first = bad.head(MAX_ROWS_SHOWN).collect(engine=COUNT_ENGINE)
                values = bad.select(pl.col(col).unique(maintain_order=True).head(EXAMPLES_SHOWN))
                entry = found.setdefault(col, [0, read_as, [], [], unparsed])
                entry[0] += n
                entry[2].extend(str(v) for v in values.collect()[col] if v is not None)
                entry[3].extend(f"{f} row {r}" for f, r, _ in first.rows())
    except pl.exceptions.PolarsError as exc:
        raise SchemaError(
            f"Cannot read the rollout input: {exc}\n\nCheck that the files are complete."
        ) from None
    return [
        Coerced(col, n, total, read_as, tuple(dict.fromkeys(ex))[:EXAMPLES_SHOWN],
                tuple(where[:MAX_ROWS_SHOWN]), unparsed)
        for col, (n, read_as, ex, where, unparsed) in found.items()
    ]  # fmt: skip
