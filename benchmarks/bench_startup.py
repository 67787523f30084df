"""Benchmark the CLI's start-up: `replay-cli --help` against importing what it is built on.

Each line is a fresh Python process, timed wall-clock, the median of --repeats runs. The
baselines are the import of typer and pydantic (`import typer, pydantic`, which loads pydantic
lazily) and the same with pydantic's BaseModel loaded (what any pydantic model costs, and
the tool's parameters are pydantic fields). The target (issue 38): `replay-cli --help` within
1.5x the first baseline. Prints a Markdown table. Usage:
    uv run python benchmarks/bench_startup.py [--repeats 15]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import subprocess
import sys
import time

CASES = {
    "import typer, pydantic": ["-c", "import typer, pydantic"],
    "import typer; from pydantic import BaseModel": [
        "-c",
        "import typer; from pydantic import BaseModel",
    ],
    "import replay_cli.cli.app": ["-c", "import replay_cli.cli.app"],
    "replay-cli --help": ["-m", "replay_cli", "--help"],
    "replay-cli replay --help": ["-m", "replay_cli", "replay", "--help"],
    "replay-cli sweep --help": ["-m", "replay_cli", "sweep", "--help"],
}
BASELINE = "import typer, pydantic"


def wall(args: list[str]) -> float:
    """Seconds one fresh interpreter takes to run `args`."""
    start = time.perf_counter()
    subprocess.run([sys.executable, *args], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    for case in CASES.values():  # warm the file cache and .pyc files once
        wall(case)
    times = {name: [] for name in CASES}
    for _ in range(args.repeats):  # interleaved, so load drift hits every case alike
        for name, case in CASES.items():
            times[name].append(wall(case))
    medians = {name: statistics.median(t) for name, t in times.items()}
    print(f"Python {platform.python_version()}, {args.repeats} runs each, median wall seconds\n")
    print(f"| command | seconds | x {BASELINE} |")
    print("|---|---:|---:|")
    for name, seconds in medians.items():
        print(f"| `{name}` | {seconds:.3f} | {seconds / medians[BASELINE]:.2f} |")


if __name__ == "__main__":
    main()
