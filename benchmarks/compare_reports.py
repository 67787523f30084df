"""Compare two report directories number by number; prints the largest relative difference.

    uv run python benchmarks/compare_reports.py BEFORE_DIR AFTER_DIR [--tolerance 1e-12]

Every Parquet table of BEFORE_DIR must exist in AFTER_DIR with the same columns and rows; float
columns must hold NaNs, nulls and infinities in the same places and the finite values within
`--tolerance` relative; every other column must be equal. Other files are compared byte for byte
(manifest.json and index.html, which record the time and the output path, are skipped). Exit status 1 on any
difference past the tolerance. docs/benchmarks.md (fourteenth session) used it to show the compiled
bound leaves every report number where it was.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import polars as pl


def compare(before: Path, after: Path, tolerance: float) -> tuple[float, str, list[str]]:
    """(largest relative difference, where, the differences past the tolerance)."""
    worst, where, problems = 0.0, "", []
    for path in sorted(p for p in before.rglob("*") if p.is_file()):
        rel = path.relative_to(before)
        other = after / rel
        if rel.name in ("manifest.json", "index.html"):
            continue
        if not other.exists():
            problems.append(f"{rel}: missing")
            continue
        if path.suffix != ".parquet":
            if path.read_bytes() != other.read_bytes():
                problems.append(f"{rel}: bytes differ")
            continue
        a, b = pl.read_parquet(path), pl.read_parquet(other)
        if a.columns != b.columns or a.height != b.height:
            problems.append(f"{rel}: shape {a.shape} against {b.shape}")
            continue
        for name in a.columns:
            x, y = a[name], b[name]
            if not x.dtype.is_float():
                if not x.equals(y):
                    problems.append(f"{rel}:{name} differs")
                continue
            if not x.is_null().equals(y.is_null()):
                problems.append(f"{rel}:{name} nulls differ")
                continue
            xa = x.drop_nulls().to_numpy().astype(np.float64)
            ya = y.drop_nulls().to_numpy().astype(np.float64)
            finite = np.isfinite(xa)
            if not np.array_equal(finite, np.isfinite(ya)) or not np.array_equal(
                xa[~finite], ya[~finite], equal_nan=True
            ):
                problems.append(f"{rel}:{name} NaN or infinities differ")
                continue
            scale = np.maximum(np.abs(xa[finite]), np.abs(ya[finite]))
            diff = np.abs(xa[finite] - ya[finite]) / np.where(scale > 0, scale, 1.0)
            largest = float(diff.max()) if diff.size else 0.0
            if largest > worst or not where:
                worst, where = largest, f"{rel}:{name}"
            if largest > tolerance:
                problems.append(f"{rel}:{name} {largest:.3g} relative")
    return worst, where, problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--tolerance", type=float, default=1e-12)
    args = parser.parse_args()
    worst, where, problems = compare(args.before, args.after, args.tolerance)
    for line in problems:
        print(line)
    print(f"largest relative difference: {worst:.3g} ({where})")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
