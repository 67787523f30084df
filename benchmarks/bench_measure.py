"""The first-step diagnostic's and the forecast's cost in a sweep; prints a Markdown table.

    uv run python benchmarks/bench_measure.py                  # 1M rollouts, 24 configs
    uv run python benchmarks/bench_measure.py --rows 1e5 --configs 4 --repeat 1

Each line is its own process (its peak RSS its own), repeated `--repeat` times (the fastest run
is reported): the sweep with the bootstrap (`--resamples 200`, the default) against the same sweep
without it (`--resamples 0`), both with `--no-forecast`, and the deciding sweep (the default: the
forecast, 50 steps, 4 seeds, 150 problems per bucket, the budget checks, its bootstrap), and, inside each, the time of the measure's
parts (the steps, the bootstrap's sums) and of the forecast. The input is made by
`synth` (groups of 16) in a temporary directory; the sweep writes no per-row table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _configs(n: int) -> list:
    from replay_cli.parameters import expand

    lambdas = [0.0, 1 / 240, 1 / 120, 1 / 90, 1 / 60, 1 / 45, 1 / 30, 1 / 20, 1 / 15, 1 / 10]
    grid = {"lambda_time": lambdas, "apply_to": ["all", "correct"], "clip_low": [-3.0]}
    grid["clip_high"] = [3.0]
    return expand({}, grid)[:n]


def _child(path: str, configs: int, resamples: int, out: str, ahead: bool) -> None:
    """One sweep in this process: wall time, and the measure's parts timed by wrapping them."""
    from replay_cli import api
    from replay_cli.config import EffortSettings, ForecastSettings
    from replay_cli.engine import first_step as measure

    parts: dict[str, float] = {"steps": 0.0, "bootstrap": 0.0, "measure": 0.0, "forecast": 0.0}

    def timed(module, name: str, key: str) -> None:
        inner = getattr(module, name)

        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                parts[key] += time.perf_counter() - start

        setattr(module, name, wrapper)

    timed(measure, "_steps", "steps")
    timed(measure, "sums", "bootstrap")
    from replay_cli.engine import stages

    timed(stages, "diagnose", "measure")
    timed(stages, "forecast", "forecast")
    start = time.perf_counter()
    api.replay_to_report(
        [path],
        _configs(configs),
        Path(out),
        rows="none",
        force=True,
        effort=EffortSettings(resamples=resamples),
        forecast=ForecastSettings() if ahead else None,
    )
    total = time.perf_counter() - start
    print(json.dumps({"seconds": total, **parts}))


VARIANTS = (
    ("--no-forecast --resamples 0", 0, "0"),
    ("--no-forecast", 200, "0"),
    ("the deciding sweep (default: the forecast)", 200, "1"),
)
"""(name, resamples, forecast on) of each measured sweep."""


def _run(args: list[str]) -> tuple[dict, float]:
    """A child process: its JSON line and its peak RSS (GiB)."""
    proc = subprocess.Popen(
        [sys.executable, __file__, "--child", *args], stdout=subprocess.PIPE, text=True
    )
    out = proc.stdout.read() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise SystemExit(f"benchmark child {args} failed")
    return json.loads(out.strip().splitlines()[-1]), usage.ru_maxrss / 2**20


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=float, default=1e6)
    parser.add_argument("--configs", type=int, default=24)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--child", nargs=5)
    args = parser.parse_args()
    if args.child:
        path, configs, resamples, out, ahead = args.child
        _child(path, int(configs), int(resamples), out, ahead == "1")
        return
    rows = int(args.rows)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "rollouts.parquet"
        steps = max(1, rows // (625 * 16))
        subprocess.run(
            [
                sys.executable,
                "-m",
                "replay_cli",
                "synth",
                str(data),
                "--steps",
                str(steps),
                "--groups",
                "625",
                "--group-size",
                "16",
            ],
            check=True,
            capture_output=True,
            cwd=ROOT,
        )
        results = {}
        for name, resamples, ahead in VARIANTS:
            runs = [
                _run([str(data), str(args.configs), str(resamples), str(Path(tmp) / "r"), ahead])
                for _ in range(args.repeat)
            ]
            results[name] = min(runs, key=lambda r: r[0]["seconds"])
    plain, boot = results["--no-forecast --resamples 0"][0], results["--no-forecast"][0]
    ahead = results["the deciding sweep (default: the forecast)"][0]
    print(
        f"First-step diagnostic, {rows:,} rollouts (groups of 16), {args.configs} configs, rows none"
    )
    print(
        f"{platform.node()} · {platform.processor() or platform.machine()} · {os.cpu_count()} cores"
    )
    print(f"{time.strftime('%Y-%m-%d')}, fastest of {args.repeat}\n")
    print("| sweep | seconds | measure | its steps | bootstrap sums | forecast | peak RSS GiB |")
    print("|---|---|---|---|---|---|---|")
    for name, (r, peak) in results.items():
        print(
            f"| {name} | {r['seconds']:.2f} | {r['measure']:.2f} | {r['steps']:.2f} | "
            f"{r['bootstrap']:.2f} | {r['forecast']:.2f} | {peak:.2f} |"
        )
    added = boot["seconds"] - plain["seconds"]
    print(
        f"\nThe bootstrap adds {added:.2f} s, {added / plain['seconds']:.1%} of the sweep without it "
        f"(its sums alone: {boot['bootstrap'] / plain['seconds']:.1%}); the forecast makes the "
        f"sweep {ahead['seconds'] / boot['seconds']:.2f}x as long "
        f"({ahead['forecast'] / args.configs:.2f} s per config)."
    )


if __name__ == "__main__":
    main()
