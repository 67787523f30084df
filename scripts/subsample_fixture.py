"""Write tests/fixtures/float32_platforms: a subsample of ../shared/fixtures/float32_platforms
that a clone can run (issue 38). It keeps steps 1-10 whole (the hand-made groups: every guard
branch, the residue row of PR #4158, groups of 1 to 16) and a seeded sample of whole groups of 16
from the later steps; `source_row` is renumbered to the subsample's rows. The values are the
trainer's own (measurements of NeMo-RL's code), carried over unchanged.

    uv run python scripts/subsample_fixture.py [--groups 120] [--seed 0]
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parents[1]
FULL = ROOT.parent / "shared" / "fixtures" / "float32_platforms"
OUT = ROOT / "tests" / "fixtures" / "float32_platforms"
HAND_MADE_STEPS = 10


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=120, help="groups of 16 from steps > 10")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rollouts = pl.read_parquet(FULL / "rollouts.parquet").with_row_index("source_row")
    later = rollouts.filter(pl.col("step") > HAND_MADE_STEPS).select("step", "group_id").unique()
    picked = later.sort("step", "group_id").sample(args.groups, seed=args.seed)
    keep = rollouts.filter(pl.col("step") <= HAND_MADE_STEPS).vstack(
        rollouts.join(picked, on=["step", "group_id"], how="semi")
    )
    keep = keep.sort("source_row").with_row_index("new_row")
    renumber = keep.select(pl.col("source_row"), pl.col("new_row").cast(pl.Int64))
    real = (
        pl.read_parquet(FULL / "real_advantages.parquet")
        .join(renumber, on="source_row", how="inner", maintain_order="left")
        .with_columns(pl.col("new_row").alias("source_row"))
        .drop("new_row")
    )
    OUT.mkdir(parents=True, exist_ok=True)
    keep.drop("source_row", "new_row").write_parquet(OUT / "rollouts.parquet", compression="zstd")
    real.write_parquet(OUT / "real_advantages.parquet", compression="zstd")
    shutil.copy2(FULL / "configs.json", OUT / "configs.json")
    (OUT / "README.md").write_text(
        "# A subsample of the trainer's float32 advantages on three platforms\n\n"
        "Written by `scripts/subsample_fixture.py` from the full set (`../shared/fixtures/"
        "float32_platforms`, described in its README, which follows): steps 1-10 whole (the "
        f"hand-made groups) and {args.groups} groups of 16 drawn from the later steps (seed "
        f"{args.seed}); {keep.height} rollouts, `source_row` renumbered to them. The tests run "
        "on this subsample in every clone, and on the full set too where it exists.\n\n"
        + (FULL / "README.md").read_text()
    )
    print(f"{keep.height} rollouts, {real.height} real advantages -> {OUT}")


if __name__ == "__main__":
    main()
