"""Deterministic collection of lazy plans.

polars' default (streaming) engine adds floats in a thread-dependent order, so two runs of one plan
can differ in the last bits. A report must be identical run after run, so every plan is collected
with the in-memory engine, whose reductions have a fixed order for a given input and thread count.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

ENGINE = "in-memory"


def collect(lf: pl.LazyFrame) -> pl.DataFrame:
    """Collect one plan deterministically."""
    return lf.collect(engine=ENGINE)


def collect_all(plans: Sequence[pl.LazyFrame]) -> list[pl.DataFrame]:
    """Collect several plans together (shared work runs once), deterministically."""
    return pl.collect_all(plans, engine=ENGINE)


def count(cond: pl.Expr) -> pl.Expr:
    """How many rows satisfy a condition (null counts as no)."""
    return cond.fill_null(False).cast(pl.Int64).sum()
