"""Benchmark `replay-cli import nemo-gym` on real-layout rollout files; prints a Markdown table.

Generates NeMo-Gym collector files in the layout of tests/writers.py (verify responses with the
agent trajectory as token ids and log-probs, an ~80-key instance_config, several MB per rollout)
of the given sizes, then imports each in a fresh process two ways:

* before: the importer as it was before the slim decoder (text lines from Python's line
  iterator, each decoded whole with `json.loads`);
* now: the slim decoder (msgspec, only the fields a row needs) over lines cut from 16 MiB blocks.

Both must write identical Parquet. Usage:
    uv run python benchmarks/bench_import.py --sizes-gb 1,5 [--dir /tmp/bench-import]
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROW_BYTES = 3_000_000
"""The trajectory bytes asked of each row (a row comes out at about 2.4 MB)."""
ROW_SIZE = 2_400_000

RUN = """
import json, sys, time
from pathlib import Path
from replay_cli.io import jsonl
from replay_cli.io.importers import import_logs

mode, src, out = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
decode = None
if mode == "before":  # the importer before the slim decoder: text lines, each decoded whole

    def old_lines(path, decode=None, progress=None):
        with path.open("r", encoding="utf-8") as fh:
            for number, line in enumerate(fh, start=1):
                if line.strip():
                    try:
                        yield number, json.loads(line)
                    except json.JSONDecodeError as exc:
                        yield number, exc

    from replay_cli.io import gym
    gym.iter_json_lines = old_lines
start = time.perf_counter()
stats = import_logs("nemo-gym", [src], out, step=1, decode=decode)
print(time.perf_counter() - start, stats.rows)
"""


def generate(path: Path, size: int) -> int:
    """A real-layout collector file of about `size` bytes; returns the rollouts written."""
    sys.path.insert(0, str(ROOT / "tests"))
    from replay_cli.rollouts.synth import synth_rollouts

    from writers import write_gym_jsonl

    rows = max(8, size // ROW_SIZE)
    frame = synth_rollouts(steps=1, groups_per_step=-(-rows // 8), group_size=8, seed=3)
    write_gym_jsonl(frame, path, pad=ROW_BYTES)
    return frame.height


def run(mode: str, src: Path, out: Path) -> tuple[float, int, float]:
    """(seconds inside the import, rows, peak RSS MiB of that child process alone)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", RUN, mode, str(src), str(out)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert proc.stdout is not None
    printed = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise SystemExit(f"{mode} import failed ({status})")
    seconds, rows = printed.split()
    return float(seconds), int(rows), usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes-gb", default="1,5", help="file sizes in GB, comma separated")
    parser.add_argument("--dir", default="/tmp/bench-import", help="where the files are written")
    args = parser.parse_args()
    import polars as pl

    work = Path(args.dir)
    work.mkdir(parents=True, exist_ok=True)
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print()
    print(
        "| file | rollouts | before s | before MB/s | now s | now MB/s | × | peak RSS MiB (before / now) | same Parquet |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for gb in (float(x) for x in args.sizes_gb.split(",")):
        src = work / f"rollouts_{gb:g}gb.jsonl"
        if not src.exists() or abs(src.stat().st_size - gb * 1e9) > 0.2 * gb * 1e9:
            generate(src, int(gb * 1e9))
        mb = src.stat().st_size / 1e6
        old_s, rows, old_rss = run("before", src, work / "before.parquet")
        new_s, rows_now, new_rss = run("now", src, work / "now.parquet")
        same = rows == rows_now and pl.read_parquet(work / "before.parquet").equals(
            pl.read_parquet(work / "now.parquet")
        )
        print(
            f"| {mb / 1000:.2f} GB | {rows} | {old_s:.1f} | {mb / old_s:.0f} | {new_s:.1f} | "
            f"{mb / new_s:.0f} | {old_s / new_s:.1f} | {old_rss:.0f} / {new_rss:.0f} | {same} |"
        )


if __name__ == "__main__":
    start = time.time()
    main()
    print(f"\n(total {time.time() - start:.0f} s)")
