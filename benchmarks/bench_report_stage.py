"""The report stage's share of a sweep (issue 27): what a sweep spends after the replay (findings,
charts, index.html, the table writes), in process and as whole commands.

    uv run python benchmarks/bench_report_stage.py [--cases 1000000x24,100000x100] [--repeat 3]

Per case (rollouts x configs, groups of 16 from `synth`): the in-process split of one
`replay_to_report(..., charts=True, rows="none")` into load + replay and the report stage
(`finish_report`), and the wall time of the whole `replay-cli sweep --rows none` with and without
`--no-charts`. Each figure is the fastest of `--repeat` runs, each in its own process.

A second table (issue 27, item 2) gives the whole-process cost of each extra config: the sweep's
wall time minus that of `replay-cli replay` of one config on the same input, divided by the
configs added, beside the floor (scan + one grouped aggregation, timed in process as in
bench_replay.py), with and without charts.

With `--levers`, a third table times the charts alone, in process, three ways on the same replay:
as the report draws them (constrained layout, one process), with the layout engine turned off
before saving (what a layout computed once could save at most; the PNGs then differ), and saved
by two forked processes after the replay (each saving half the figures the parent built).
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

LAMBDAS = ["0", "1/480", "1/240", "1/120", "1/90", "1/60", "1/45", "1/30", "1/20", "1/15"]
FLOORS = ["none", "0.05", "-0.5", "0", "0.1"]


def grid(configs: int) -> dict[str, list[str]]:
    """A sweep grid of `configs` points, lambda x apply_to x floor (2 x lambdas x floors must
    equal `configs`, with up to 10 lambdas and 5 floors)."""
    for floors in range(1, len(FLOORS) + 1):
        lambdas, rest = divmod(configs, 2 * floors)
        if not rest and lambdas <= len(LAMBDAS):
            return {
                "lambda-time": LAMBDAS[:lambdas],
                "apply-to": ["all", "correct"],
                "floor": FLOORS[:floors],
            }
    raise SystemExit(f"no lambda x apply_to x floor grid has {configs} configs")


def flags(configs: int) -> list[str]:
    return [x for k, v in grid(configs).items() for x in (f"--{k}", ",".join(v))]


INPROCESS = """
import json, sys, time
t0 = time.perf_counter()
import replay_cli.api as api
from replay_cli.parameters import expand, parse_value
g = json.loads(sys.argv[2])
configs = expand({}, {k.replace("-", "_"): [parse_value(k.replace("-", "_"), v) for v in vs]
                      for k, vs in g.items()})
marks = {}
finish = api.write  # the report stage: tables, charts, manifest, index.html
def timed(*a, **k):
    marks["start"] = time.perf_counter(); finish(*a, **k); marks["end"] = time.perf_counter()
api.write = timed
t1 = time.perf_counter()
api.replay_to_report([sys.argv[1]], configs, sys.argv[3], charts=True, force=True, rows="none")
print(json.dumps({"configs": len(configs), "imports": t1 - t0, "replay": marks["start"] - t1,
                  "report": marks["end"] - marks["start"]}))
"""


def in_process(path: Path, configs: int, out: Path) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", INPROCESS, str(path), json.dumps(grid(configs)), str(out)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


LEVERS = """
import io, json, os, sys, time
from pathlib import Path
import replay_cli.api as api
from replay_cli.parameters import expand, parse_value
from replay_cli.report.plots import report_figures
g = json.loads(sys.argv[2])
configs = expand({}, {k.replace("-", "_"): [parse_value(k.replace("-", "_"), v) for v in vs]
                      for k, vs in g.items()})
result = api.replay_to_report([sys.argv[1]], configs, sys.argv[3], charts=False, force=True,
                              rows="none")
def save(figures):
    for fig in figures:
        fig.savefig(io.BytesIO(), dpi=110, format="png")
def timed(way):
    start = time.perf_counter()
    figures = list(report_figures(result).values())
    if way == "no_layout":
        for fig in figures:
            fig.set_layout_engine("none")
    if way == "forked":
        pid = os.fork()
        if pid == 0:
            save(figures[1::2])
            os._exit(0)
        save(figures[0::2])
        os.waitpid(pid, 0)
    else:
        save(figures)
    return time.perf_counter() - start
warm = list(report_figures(result).values())  # warm: fonts, caches
save(warm)
ways = ("serial", "no_layout", "forked")
best = {w: min(timed(w) for _ in range(int(sys.argv[4]))) for w in ways}
print(json.dumps({"figures": len(warm), **best}))
"""


def levers(path: Path, configs: int, out: Path, repeat: int) -> dict[str, float]:
    """The chart stage three ways (module docstring), best of `repeat` each, in one process."""
    done = subprocess.run(
        [sys.executable, "-c", LEVERS, str(path), json.dumps(grid(configs)), str(out), str(repeat)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


FLOOR = """
import sys, time
import polars as pl
start = time.perf_counter()
pl.scan_parquet(sys.argv[1]).group_by("step", "group_id").agg(
    pl.col("reward").sum(), pl.len()
).collect(engine="in-memory")
print(time.perf_counter() - start)
"""


def floor(path: Path) -> float:
    """The floor's own work in a fresh process (as bench_replay.py times it)."""
    done = subprocess.run(
        [sys.executable, "-c", FLOOR, str(path)], check=True, capture_output=True, text=True
    )
    return float(done.stdout.strip())


def wall(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="1000000x24,100000x100")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--levers", action="store_true", help="also time the chart levers")
    args = ap.parse_args()
    cli = [sys.executable, "-m", "replay_cli"]
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"writing .pyc {'off' if sys.flags.dont_write_bytecode else 'on'}"
    )
    print(
        "| rollouts | configs | in process: load + replay s | report stage s | report share | "
        "whole sweep s | with --no-charts s | charts' share of the command |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    per_config: list[tuple] = []
    lever_rows: list[tuple] = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in args.cases.split(","):
            rows, configs = (int(float(x)) for x in case.split("x"))
            data = Path(tmp) / f"in{rows}.parquet"
            steps = max(1, rows // 10_000)
            subprocess.run(
                [
                    *cli,
                    "synth",
                    str(data),
                    "--steps",
                    str(steps),
                    "--groups",
                    "625",
                    "--group-size",
                    "16",
                    "--force",
                ],
                check=True,
                stdout=subprocess.DEVNULL,
            )
            runs = [in_process(data, configs, Path(tmp) / "r") for _ in range(args.repeat)]
            best = min(runs, key=lambda r: r["replay"] + r["report"])
            sweep = [
                *cli,
                "sweep",
                str(data),
                "--out",
                str(Path(tmp) / "s"),
                "--force",
                "--rows",
                "none",
                *flags(configs),
            ]
            with_charts = min(wall(sweep) for _ in range(args.repeat))
            without = min(wall([*sweep, "--no-charts"]) for _ in range(args.repeat))
            share = best["report"] / (best["imports"] + best["replay"] + best["report"])
            print(
                f"| {rows:,} | {best['configs']} | {best['replay']:.2f} | {best['report']:.2f} | "
                f"{share:.0%} | {with_charts:.2f} | {without:.2f} | "
                f"{(with_charts - without) / with_charts:.0%} |"
            )
            if args.levers:
                lever_rows.append((rows, levers(data, configs, Path(tmp) / "l", args.repeat)))
            one = [*cli, "replay", str(data), "--out", str(Path(tmp) / "o"), "--force"]
            one += ["--rows", "none"]
            per_config.append(
                (
                    rows,
                    configs,
                    min(floor(data) for _ in range(args.repeat)),
                    (with_charts, min(wall(one) for _ in range(args.repeat))),
                    (without, min(wall([*one, "--no-charts"]) for _ in range(args.repeat))),
                )
            )
    print()
    print(
        "| rollouts | configs | floor s | charts | sweep s | replay of 1 s | per extra config s | "
        "× floor |"
    )
    print("|---:|---:|---:|---|---:|---:|---:|---:|")
    for rows, configs, floor_s, *pairs in per_config:
        for label, (sweep_s, one_s) in zip(("yes", "no"), pairs, strict=True):
            extra = (sweep_s - one_s) / (configs - 1)
            print(
                f"| {rows:,} | {configs} | {floor_s:.3f} | {label} | {sweep_s:.2f} | {one_s:.2f} | "
                f"{extra:.3f} | {extra / floor_s:.1f} |"
            )
    if lever_rows:
        print()
        print(
            "| rollouts | figures | charts as drawn s | layout engine off s | two forked "
            "processes s |"
        )
        print("|---:|---:|---:|---:|---:|")
        for rows, t in lever_rows:
            print(
                f"| {rows:,} | {t['figures']} | {t['serial']:.2f} | {t['no_layout']:.2f} "
                f"({t['no_layout'] / t['serial']:.0%}) | {t['forked']:.2f} "
                f"({t['forked'] / t['serial']:.0%}) |"
            )


if __name__ == "__main__":
    main()
