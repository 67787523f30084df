"""Benchmark replay against the physical floor; prints a Markdown table.

    uv run python benchmarks/bench_replay.py                     # 1M and 10M rollouts
    uv run python benchmarks/bench_replay.py --sizes 1e6 --sweeps 24,100
    uv run python benchmarks/bench_replay.py --sizes 1e8 --sweeps none --no-reference \
        --rows sample --repeat 1                                   # out-of-core

Every measurement runs in its own process, so its peak RSS is its own (os.wait4), and is repeated
(`--repeat`, default 3): the fastest run is reported, the one least disturbed by other load. Inputs are
made by `synth` (groups of 16, in batches of steps) in a temporary directory. The per-row
reference (tests/reference_impl.py) runs on a subsample and is extrapolated linearly: it is
labelled as such. Sweeps write no per-row table (`rows="none"`), the mode for large sweeps.
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
GROUP_SIZE = 16
GROUPS_PER_STEP = 625  # 10k rollouts per step


def _task(kind: str, path: str, arg: str, out: str) -> None:
    """Run one measurement in this (child) process."""
    import polars as pl

    from replay_cli import api
    from replay_cli.parameters import expand

    start = time.perf_counter()
    if kind == "floor":
        _floor_query(path)
    elif kind == "floor-warm":
        print(json.dumps({"seconds": _warm_floor(path)}))
        return
    elif kind == "read":
        pl.scan_parquet(path).collect(engine="in-memory")
    elif kind == "bare":
        print(json.dumps({"seconds": _bare_advantage(path)}))
        return
    elif kind == "quantiles":
        print(json.dumps({"seconds": _advantage_quantiles(int(arg))}))
        return
    elif kind == "kernels":
        print(json.dumps(_batched_kernels(path)))
        return
    elif kind == "group-write":
        print(json.dumps({"seconds": _group_write(path)}))
        return
    elif kind == "replay":
        shares = _timed_row_output()
        api.replay_to_report([path], expand({}, {}), Path(out), rows=arg, force=True)
        seconds = time.perf_counter() - start
        print(json.dumps({"seconds": seconds, **shares}))
        return
    elif kind == "ray":
        import ray

        ray.init(
            num_cpus=os.cpu_count(),
            include_dashboard=False,
            log_to_driver=False,
            configure_logging=False,
        )
        start = time.perf_counter()  # the work, not the cluster start-up (reported separately)
        api.replay_to_report(
            [path], expand({}, {}), Path(out), rows="none", force=True, engine="ray"
        )
    elif kind == "sweep":
        configs = _configs(int(arg))
        api.replay_to_report([path], configs, Path(out), rows="none", force=True)
    elif kind == "reference":
        sys.path.insert(0, str(ROOT / "tests"))
        from reference_impl import reference_replay

        rows = pl.scan_parquet(path).head(int(arg)).collect().to_dicts()
        start = time.perf_counter()
        reference_replay(rows, {}, {})
    # Time of the work itself: interpreter start-up and imports are not the engine's.
    print(json.dumps({"seconds": time.perf_counter() - start}))


def _timed_row_output() -> dict[str, float]:
    """Time, inside a replay, the building of the per-row frames and the rollouts.parquet write
    (the share `--rows all` adds); the dict fills in as the replay runs."""
    from replay_cli.engine import batched
    from replay_cli.engine import run as engine
    from replay_cli.io.parquet import ParquetRowSink

    shares = {"frames": 0.0, "write": 0.0}
    frame, call, close = batched.row_frame, ParquetRowSink.__call__, ParquetRowSink.close

    def timed(key: str, f):
        def wrapper(*args, **kwargs):
            begin = time.perf_counter()
            try:
                return f(*args, **kwargs)
            finally:
                shares[key] += time.perf_counter() - begin

        return wrapper

    def sink_call(self, rows):
        if self.path.name.startswith("rollouts"):
            return timed("write", call)(self, rows)
        return call(self, rows)

    def sink_close(self):
        if self.path.name.startswith("rollouts"):
            return timed("write", close)(self)
        return close(self)

    engine.row_frame = timed("frames", frame)
    ParquetRowSink.__call__ = sink_call
    ParquetRowSink.close = sink_close
    return shares


def _floor_query(path: str) -> None:
    """The floor: one scan of the input and one grouped aggregation."""
    import polars as pl

    pl.scan_parquet(path).group_by("step", "group_id").agg(
        pl.col("reward").sum(), pl.len()
    ).collect(engine="in-memory")


def _warm_floor(path: str) -> float:
    """The floor's query timed inside one process after a first run (polars' thread pool and
    the file's pages warm), best of 5: the floor without the process's one-off start costs."""
    _floor_query(path)
    times = []
    for _ in range(5):
        start = time.perf_counter()
        _floor_query(path)
        times.append(time.perf_counter() - start)
    return min(times)


def _bare_advantage(path: str) -> float:
    """Seconds of the least columnar work one extra config could do, on a chunk already in memory.

    Shaping as one subtraction and one leave-one-out GRPO advantage column in float64, with group
    sums from numpy `reduceat` over the sorted groups (the fastest way found): no floor, guard,
    masking, float32 rounding, second advantage set, group table or quantiles. Best of 5 in this
    process: a lower bound for an extra sweep config.
    """
    import numpy as np
    import polars as pl

    df = pl.read_parquet(path, columns=["step", "group_id", "reward", "openhands_run_time"])
    key = df["step"].to_numpy() * (int(df["group_id"].max()) + 1) + df["group_id"].to_numpy()
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    lengths = np.diff(np.r_[starts, len(key)])
    reward, run_time = df["reward"].to_numpy(), df["openhands_run_time"].to_numpy()
    times = []
    for _ in range(5):
        start = time.perf_counter()
        r = reward - run_time / 60 / 600
        peers = np.repeat(lengths - 1.0, lengths)
        s1 = np.repeat(np.add.reduceat(r, starts), lengths)
        s2 = np.repeat(np.add.reduceat(r * r, starts), lengths)
        baseline, second = (s1 - r) / peers, (s2 - r * r) / peers
        std = np.sqrt((second - baseline * baseline) * peers / (peers - 1))
        (r - baseline) / (std + 1e-6)
        times.append(time.perf_counter() - start)
    return min(times)


def _advantage_quantiles(n: int) -> float:
    """Seconds of the exact adv/p01..p99 of one config's n advantages (the replay's own
    `quantiles`, one partial sort), best of 5: every config pays this once."""
    import numpy as np
    import polars as pl

    from replay_cli.engine.diagnostics import QUANTILES, quantiles

    values = np.random.default_rng(0).standard_normal(n, dtype=np.float32)  # as the trainer
    times = []
    for _ in range(5):
        series = pl.Series(values=values.copy())  # partitioned in place: a fresh copy each time
        start = time.perf_counter()
        quantiles(series, QUANTILES)
        times.append(time.perf_counter() - start)
    return min(times)


def _configs(n: int) -> list:
    """The sweep of the benchmark: lambda x apply_to x floor, 4 configs per lambda."""
    from replay_cli.parameters import expand

    lambdas = [i / 600 for i in range(1, -(-n // 4) + 1)]
    grid = {"lambda_time": lambdas, "apply_to": ["all", "correct"], "floor": [None, 0.05]}
    return expand({}, grid)[:n]


def _first_chunk(path: str):
    from replay_cli.config import EffortSettings
    from replay_cli.engine.allocator import keep_freed_memory
    from replay_cli.engine.run import ChunkState, InputShape, plan, read_chunk
    from replay_cli.rollouts.validation import load_rollouts

    keep_freed_memory()
    rollouts = load_rollouts([path])
    (lo, hi), *_ = plan(rollouts, 1_000_000)[0]
    shape = InputShape.of(rollouts, EffortSettings().levels)
    return ChunkState.of(read_chunk(rollouts, lo, hi), shape)


def _batched_kernels(path: str) -> dict[str, float]:
    """Seconds per config of the batched path's own work over one chunk of 1M rows, warm, on
    one thread, best of 5 (a batch of 4 configs): shaping and GRPO advantages (`grpo_rows`),
    then the group, step and diagnostic tables (`config_pieces`). No I/O, no report."""
    from replay_cli.engine.batched import grpo_rows
    from replay_cli.engine.run import config_pieces

    state = _first_chunk(path)
    configs = _configs(4)
    cache: dict = {}
    best = {"rows": float("inf"), "tables": float("inf")}
    for _ in range(5):
        start = time.perf_counter()
        batch = grpo_rows(state.arrays, configs, cache)
        middle = time.perf_counter()
        config_pieces(batch, 1, [None] * len(configs), state.levels, "off")
        end = time.perf_counter()
        best["rows"] = min(best["rows"], (middle - start) / len(configs))
        best["tables"] = min(best["tables"], (end - middle) / len(configs))
    rows = len(state.arrays.frame)
    return {"seconds": best["rows"] + best["tables"], **best, "chunk_rows": rows}


def _group_write(path: str) -> float:
    """Seconds to write one config's group table of one 1M-row chunk to groups.parquet (the
    report's encoding), best of 5."""
    from replay_cli import schema as S
    from replay_cli.engine.batched import grpo_rows
    from replay_cli.engine.run import config_pieces
    from replay_cli.io.parquet import ParquetRowSink

    state = _first_chunk(path)
    configs = _configs(1)
    rows = grpo_rows(state.arrays, configs, {})
    groups = config_pieces(rows, 1, [None], state.levels, "off")[0].groups
    times = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(5):
            sink = ParquetRowSink(Path(tmp) / f"g{i}.parquet", statistics=S.CONFIG_GROUP_KEYS)
            start = time.perf_counter()
            sink(groups)
            sink.close()
            times.append(time.perf_counter() - start)
    return min(times)


def _wall(command: list[str], repeat: int) -> float:
    """Best wall time of a whole command, interpreter start-up and imports included."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return min(times)


def startup_rows(repeat: int) -> list[tuple[str, float, str]]:
    """Wall times of `replay-cli --help` and of a replay of the small bundled sample, and the
    imports that bound them."""
    cli = [sys.executable, "-m", "replay_cli"]
    small = str(ROOT / "data_samples" / "rollouts_small.parquet")
    with tempfile.TemporaryDirectory() as tmp:
        replay = [*cli, "replay", small, "--out", str(Path(tmp) / "r"), "--force"]
        rows = [
            ("replay-cli --help", _wall([*cli, "--help"], repeat), ""),
            ("replay-cli replay data_samples/rollouts_small.parquet", _wall(replay, repeat), ""),
        ]
    imports = {
        "python -c pass": "pass",
        "import typer.rich_utils, pydantic (what --help needs)": "import typer.rich_utils, pydantic",
        "import polars, numpy (what any replay needs)": "import polars, numpy",
    }
    for name, code in imports.items():
        rows.append((f"bound: {name}", _wall([sys.executable, "-c", code], repeat), ""))
    return rows


def measure(
    kind: str, path: Path, arg: str = "", out: Path | None = None
) -> tuple[float, float, str]:
    """(wall seconds, peak RSS MiB, child stdout) of one task in a fresh process."""
    cmd = [sys.executable, __file__, "--task", kind, str(path), arg, str(out or "")]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    stdout = proc.stdout.read() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise SystemExit(f"benchmark task {kind} {arg} failed")
    return json.loads(stdout)["seconds"], usage.ru_maxrss / 1024, stdout


def best_of(
    repeat: int, kind: str, path: Path, arg: str = "", out: Path | None = None
) -> tuple[float, float, str]:
    """The fastest of `repeat` runs (the least disturbed by other load), with the largest RSS."""
    runs = [measure(kind, path, arg, out) for _ in range(repeat)]
    fastest = min(runs, key=lambda r: r[0])
    return fastest[0], max(r[1] for r in runs), fastest[2]


def make_input(rows: int, directory: Path) -> Path:
    from replay_cli import api

    path = directory / f"rollouts_{rows}.parquet"
    steps = max(1, rows // (GROUPS_PER_STEP * GROUP_SIZE))
    api.write_synth(
        path,
        steps=steps,
        groups_per_step=GROUPS_PER_STEP,
        group_size=GROUP_SIZE,
        seed=1,
        force=True,
    )
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1e6,1e7", help="rollout counts, comma separated")
    parser.add_argument("--sweeps", default="24,100", help="sweep sizes, or none")
    parser.add_argument(
        "--reference-rows", type=int, default=20_000, help="subsample for the per-row reference"
    )
    parser.add_argument(
        "--rows",
        default="all,none",
        help="per-row report modes of the single replay (all,sample,none)",
    )
    parser.add_argument("--no-reference", action="store_true")
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs per measurement; the fastest is reported"
    )
    parser.add_argument(
        "--ray", action="store_true", help="also time the Ray engine (local instance)"
    )
    parser.add_argument(
        "--kernels", action="store_true", help="time the kernel bounds above 2M rollouts too"
    )
    parser.add_argument(
        "--startup", action="store_true", help="only the start-up table (--help, small replay)"
    )
    parser.add_argument(
        "--task", nargs=4, metavar=("KIND", "PATH", "ARG", "OUT"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.task:
        _task(*args.task)
        return
    if args.startup:
        rows = startup_rows(max(args.repeat, 5))
        walls = {name: seconds for name, seconds, _ in rows}
        # Ratios to the imports each command cannot avoid, measured in the same run, so that
        # they survive a loaded machine and a disabled bytecode cache (PYTHONDONTWRITEBYTECODE).
        bounds = {
            "replay-cli --help": "bound: import typer.rich_utils, pydantic (what --help needs)",
            "replay-cli replay data_samples/rollouts_small.parquet": (
                "bound: import polars, numpy (what any replay needs)"
            ),
        }
        print(
            f"writing .pyc: {'off' if sys.flags.dont_write_bytecode else 'on'} (existing ones are read)"
        )
        print("| command | wall seconds | × its import bound |")
        print("|---|---:|---:|")
        for name, seconds, _ in rows:
            ratio = f"{seconds / walls[bounds[name]]:.2f}" if name in bounds else ""
            print(f"| {name} | {seconds:.2f} | {ratio} |")
        return
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    sweeps = [] if args.sweeps == "none" else [int(s) for s in args.sweeps.split(",")]
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print()
    print("| rollouts | measurement | seconds | × floor | peak RSS MiB | note |")
    print("|---:|---|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for size in sizes:
            path = make_input(size, work)
            n = size // (GROUPS_PER_STEP * GROUP_SIZE) * GROUPS_PER_STEP * GROUP_SIZE or size
            floor, rss, _ = best_of(args.repeat, "floor", path)
            rows = [
                ("floor: scan + one grouped aggregation", floor, rss, "a fresh process's first")
            ]
            warm, rss, _ = measure("floor-warm", path)
            rows.append(
                ("floor, warm: the same query again", warm, rss, "in one process, best of 5")
            )
            # Two lower bounds that put the targets in scale: what any replay must read, and
            # the least columnar arithmetic one config adds (spec-level work is far more).
            seconds, rss, _ = best_of(args.repeat, "read", path)
            rows.append(("bound: read every input column", seconds, rss, "any replay reads these"))
            seconds, rss, _ = measure("bare", path)
            rows.append(
                (
                    "bound: one bare GRPO advantage column",
                    seconds,
                    rss,
                    "columnar, in memory, best of 5: the least an extra config adds",
                )
            )
            seconds, rss, _ = measure("quantiles", path, str(n))
            rows.append(
                (
                    "bound: exact quantiles of one advantage column",
                    seconds,
                    rss,
                    "one partial sort, best of 5: every config pays it",
                )
            )
            if size <= 2_000_000 or args.kernels:
                # Measured on the first 1M-row chunk, scaled to the input's chunks.
                chunks = max(1, n // 1_000_000)
                per = f" x {chunks} chunks" if chunks > 1 else ""
                _, rss, stdout = measure("kernels", path)
                out = json.loads(stdout)
                rows.append(
                    (
                        "bound: one config's batched kernels",
                        out["seconds"] * chunks,
                        rss,
                        (
                            f"per 1M-row chunk: shaping + GRPO {out['rows'] * 1e3:.0f} ms, tables "
                            f"{out['tables'] * 1e3:.0f} ms{per}; warm, one thread, no I/O"
                        ),
                    )
                )
                seconds, rss, _ = measure("group-write", path)
                rows.append(
                    (
                        "bound: write one config's group table",
                        seconds * chunks,
                        rss,
                        f"per 1M-row chunk {seconds * 1e3:.0f} ms{per}: every config writes it",
                    )
                )
            for mode in args.rows.split(","):
                seconds, rss, stdout = best_of(args.repeat, "replay", path, mode, work / "report")
                out = json.loads(stdout)
                note = (
                    f"per-row frames {out['frames']:.2f} s, rollouts.parquet write "
                    f"{out['write']:.2f} s"
                    if mode != "none"
                    else ""
                )
                rows.append((f"replay, 1 config, rows={mode}", seconds, rss, note))
            # Sweeps write no rows: compare them (and the reference) with the rows=none replay.
            single = next((r[1] for r in rows if r[0].endswith("rows=none")), rows[-1][1])
            if args.ray:
                seconds, rss, _ = measure("ray", path, "", work / "report")
                rows.append(
                    (
                        "replay, 1 config, rows=none, --engine ray",
                        seconds,
                        rss,
                        "local Ray instance; start-up excluded, driver RSS only",
                    )
                )
            for count in sweeps:
                seconds, rss, _ = best_of(args.repeat, "sweep", path, str(count), work / "report")
                per = (seconds - single) / (count - 1)
                rows.append(
                    (
                        f"sweep, {count} configs, rows=none",
                        seconds,
                        rss,
                        (
                            f"{per:.3f} s per extra config = {per / floor:.1f}× floor, "
                            f"{per / warm:.1f}× warm floor"
                        ),
                    )
                )
            if not args.no_reference:
                seconds, rss, _ = measure("reference", path, str(args.reference_rows))
                per_row = seconds / args.reference_rows
                estimate = per_row * n
                rows.append(
                    (
                        "per-row reference (extrapolated)",
                        estimate,
                        rss,
                        f"{args.reference_rows} rows measured; replay is {estimate / single:.0f}× faster",
                    )
                )
            for name, seconds, rss, note in rows:
                print(
                    f"| {n:,} | {name} | {seconds:.3f} | {seconds / floor:.1f} | {rss:.0f} | {note} |"
                )
            sys.stdout.flush()


if __name__ == "__main__":
    main()
