"""How many rows each precision reproduces bit for bit, against the trainer's own float32 advantages
logged on three platforms (../shared/fixtures/float32_platforms), and how long it takes.

    uv run python benchmarks/torch_fidelity.py [FIXTURE_DIR] [--device cpu|cuda ...]
        [--save REPLAYED.parquet] [--replayed REPLAYED.parquet ...] [--csv OUT]

Replays the fixture's five settings in float32 and with `--precision torch` on each device, then
prints one row per (precision, device, machine, setting, platform): the share of rows bit-equal
to that platform's logged value, the share differing by more than 1e-5 relative, and whether every
logged value lies within the float32 emulation's `advantage_f32_bound`. `--save` keeps the replayed
values (e.g. on a GPU machine that lacks the 13 MB log); `--replayed` adds such a file to the
comparison. Needs the torch extra for the torch rows.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import polars as pl

from replay_cli.engine.run import run_replay
from replay_cli.parameters import parse_value, to_config
from replay_cli.rollouts.validation import rollouts_from_frame

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "float32_platforms"
ROW = "fixture_row"


def config_of(flags: str, precision: str, device: str):
    """A config from the fixture's `--name value` flags, with the precision (and device) asked."""
    words = flags.replace("--precision float32", f"--precision {precision}").split()
    flat = {
        words[i][2:].replace("-", "_"): parse_value(words[i][2:].replace("-", "_"), words[i + 1])
        for i in range(0, len(words), 2)
    }
    if precision == "torch":
        flat["device"] = device
    return to_config(flat)


def machine() -> str:
    """This machine's processor (and torch's view of its GPU, when there is one)."""
    cpu = platform.processor() or platform.machine()
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    try:
        import torch

        gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else None
        return f"{cpu}, torch {torch.__version__}" + (f", {gpu}" if gpu else "")
    except ImportError:
        return cpu


def replay(fixture: Path, devices: list[str]) -> pl.DataFrame:
    """The replayed unclipped advantages of every setting, per precision and device."""
    frame = pl.read_parquet(fixture / "rollouts.parquet").with_row_index(ROW)
    flags = json.loads((fixture / "configs.json").read_text())
    where = machine()
    out = []
    for precision, device in [("float32", "-")] + [("torch", d) for d in devices]:
        built = {n: config_of(f, precision, device) for n, f in flags.items()}
        start = time.perf_counter()
        rows = run_replay(rollouts_from_frame(frame), list(built.values())).rows
        seconds = round(time.perf_counter() - start, 1)
        for name, cfg in built.items():
            out.append(
                rows.filter(
                    pl.col("config_id") == cfg.config_id, pl.col("split") == "train"
                ).select(
                    pl.lit(precision).alias("precision"),
                    pl.lit(device).alias("device"),
                    pl.lit(where).alias("machine"),
                    pl.lit(name).alias("setting"),
                    pl.col(ROW),
                    pl.col("advantage_unclipped").cast(pl.Float32),
                    "advantage_f32_bound",
                    pl.lit(seconds).alias("seconds_all_settings"),
                )
            )
    return pl.concat(out)


def compare(replayed: pl.DataFrame, real: pl.DataFrame) -> pl.DataFrame:
    """Per (precision, device, machine, setting, platform): bit-equal and 1e-5 shares, and whether
    the logged value lies within this machine's float32 emulation bound."""
    emulated = replayed.filter(pl.col("precision") == "float32").select(
        "machine",
        "setting",
        ROW,
        pl.col("advantage_unclipped").alias("emulated"),
        "advantage_f32_bound",
    )
    j = (
        real.rename({"config": "setting"})
        .join(replayed.drop("advantage_f32_bound"), on=["setting", ROW])
        .join(emulated, on=["machine", "setting", ROW])
    )
    want, got = pl.col("advantage"), pl.col("advantage_unclipped")
    rel = (want.cast(pl.Float64) - got).abs() / pl.max_horizontal(1.0, want.abs())
    inside = (want.cast(pl.Float64) - pl.col("emulated")).abs() <= pl.col("advantage_f32_bound")
    keys = ["precision", "device", "machine", "setting", "platform"]
    return (
        j.group_by(keys, maintain_order=True)
        .agg(
            pl.len().alias("rows"),
            (100 * (want == got).mean()).round(2).alias("bit_equal_pct"),
            (100 * (rel > 1e-5).mean()).round(2).alias("over_1e-5_pct"),
            inside.all().alias("inside_bound"),
            pl.col("seconds_all_settings").first(),
        )
        .sort(keys)
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("fixture", nargs="?", type=Path, default=DEFAULT)
    ap.add_argument("--device", action="append", choices=["cpu", "cuda"], default=None)
    ap.add_argument("--save", type=Path, help="write the replayed values here")
    ap.add_argument("--replayed", type=Path, action="append", default=[], help="add saved values")
    ap.add_argument("--csv", type=Path)
    args = ap.parse_args()
    replayed = replay(args.fixture, args.device or ["cpu"])
    if args.save:
        replayed.write_parquet(args.save)
    replayed = pl.concat([replayed, *(pl.read_parquet(p) for p in args.replayed)])
    print(
        replayed.group_by("precision", "device", "machine").agg(
            pl.col("seconds_all_settings").first()
        )
    )
    logged = args.fixture / "real_advantages.parquet"
    if not logged.exists():
        return
    table = compare(replayed, pl.read_parquet(logged).rename({"source_row": ROW}))
    pl.Config.set_tbl_rows(200)
    pl.Config.set_tbl_width_chars(250)
    pl.Config.set_fmt_str_lengths(60)
    print(table.drop("machine") if table["machine"].n_unique() == 1 else table)
    if args.csv:
        table.write_csv(args.csv)


if __name__ == "__main__":
    main()
