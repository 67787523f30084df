"""NeMo-RL GRPO advantages as columns of a polars plan (spec §4.1), for the plans that group rows by
an id column: the dynamic-sampling filters' survivors, verify.py's rebuilt groups.

The maths is grpo_arrays.py's (one implementation, the batched path's): each function hands the
plan's reward, valid mask and group id to the numpy kernels through `map_batches`, sorting the rows
stably by group id when they are not already the chunk's sorted runs, and puts the results back in
row order. Float columns come out as float64 (the working precision's values)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import fields as dataclass_fields
from functools import partial

import numpy as np
import polars as pl

from replay_cli.config import AdvantageParams
from replay_cli.maths import grpo_arrays as K
from replay_cli.maths.rounding import f32_bound
from replay_cli.maths.segments import Groups, Runs


@dataclass(frozen=True)
class AdvColumns:
    """Output column names of one advantage computation."""

    baseline: str
    std: str
    unclipped: str
    advantage: str
    peers_equal: str
    normalized: str


def working_dtype(p: AdvantageParams) -> pl.DataType:
    """The polars dtype of the working precision (the peer estimators compute in it)."""
    return pl.Float64() if p.precision == "float64" else pl.Float32()


Kernel = Callable[[np.ndarray, np.ndarray, Runs], dict[str, np.ndarray]]


def _run_kernel(kernel: Kernel, runs: Runs | None, packed: pl.Series) -> pl.Series:
    """The kernel over one batch of rows: fields r (reward), v (valid) and, without `runs`, g."""
    r = packed.struct.field("r").fill_null(0.0).to_numpy().astype(np.float64)
    v = packed.struct.field("v").fill_null(False).to_numpy().astype(bool)
    if runs is not None:
        out = kernel(r, v, runs)
    else:
        g = packed.struct.field("g").to_numpy()
        order = np.argsort(g, kind="stable")  # each group keeps its rows' order
        sorted_out = kernel(r[order], v[order], Runs(g[order]))
        out = {}
        for name, values in sorted_out.items():
            out[name] = np.empty_like(values)
            out[name][order] = values
    return pl.struct(
        *(
            pl.Series(name, x.astype(np.float64) if x.dtype.kind == "f" else x)
            for name, x in out.items()
        ),
        eager=True,
    )


GRPO_FIELDS = tuple(f.name for f in dataclass_fields(K.GrpoArrays))
"""A GRPO computation's per-row results, in the order its columns are added."""


def _columns(
    lf: pl.LazyFrame,
    reward: str,
    valid: str,
    gid: Groups,
    kernel: Kernel,
    fields: dict[str, pl.DataType],
    names: dict[str, str],
) -> pl.LazyFrame:
    """Add the kernel's fields as columns `names[field]`."""
    runs = gid if isinstance(gid, Runs) else None
    inputs = [pl.col(reward).cast(pl.Float64).alias("r"), pl.col(valid).alias("v")]
    if runs is None:
        inputs.append(pl.col(gid).alias("g"))
    tmp = f"_{next(iter(names.values()))}_kernel"
    packed = pl.struct(*inputs).map_batches(
        partial(_run_kernel, kernel, runs), return_dtype=pl.Struct(fields)
    )
    lf = lf.with_columns(packed.alias(tmp))
    return lf.with_columns(
        pl.col(tmp).struct.field(f).alias(name) for f, name in names.items()
    ).drop(tmp)


def add_baseline_and_std(
    lf: pl.LazyFrame,
    reward: str,
    valid: str,
    gid: Groups,
    p: AdvantageParams,
    baseline: str,
    std: str,
) -> pl.LazyFrame:
    """Per-row baseline and Bessel-corrected std of the row's peers (`grpo_arrays.baseline_and_std`)."""

    def kernel(r: np.ndarray, v: np.ndarray, runs: Runs) -> dict[str, np.ndarray]:
        b, s, _ = K.baseline_and_std(r, v, runs, p)
        return {"baseline": b, "std": s}

    fields = {"baseline": pl.Float64(), "std": pl.Float64()}
    return _columns(lf, reward, valid, gid, kernel, fields, {"baseline": baseline, "std": std})


def add_peers_all_equal(
    lf: pl.LazyFrame, reward: str, valid: str, gid: Groups, p: AdvantageParams, out: str
) -> pl.LazyFrame:
    """PR #4158 `is_trivial_distribution` per row (`grpo_arrays.peers_all_equal`)."""

    def kernel(r: np.ndarray, v: np.ndarray, runs: Runs) -> dict[str, np.ndarray]:
        return {"equal": K.peers_all_equal(r, v, runs, p)}

    return _columns(lf, reward, valid, gid, kernel, {"equal": pl.Boolean()}, {"equal": out})


def add_grpo(
    lf: pl.LazyFrame,
    reward: str,
    valid: str,
    gid: Groups,
    p: AdvantageParams,
    out: AdvColumns,
    bound: str | None = None,
) -> pl.LazyFrame:
    """Baseline, std, guard flags and advantages (before and after the clip) of one reward column;
    with `bound`, also the float32 rounding bound of the unclipped advantage (maths/rounding.py)."""
    flags = ("peers_equal", "normalized")
    fields = {f: pl.Boolean() if f in flags else pl.Float64() for f in GRPO_FIELDS}

    def kernel(r: np.ndarray, v: np.ndarray, runs: Runs) -> dict[str, np.ndarray]:
        g = K.grpo(r, v, runs, p)
        columns = {f: getattr(g, f) for f in GRPO_FIELDS}
        if bound is not None:
            r32 = r.astype(np.float32)
            columns["f32_bound"] = f32_bound(r32, v, runs, p, g.unclipped, g.peers_equal)
        return columns

    names = {f: getattr(out, f) for f in GRPO_FIELDS}
    if bound is not None:
        fields["f32_bound"] = pl.Float64()
        names["f32_bound"] = bound
    return _columns(lf, reward, valid, gid, kernel, fields, names)
