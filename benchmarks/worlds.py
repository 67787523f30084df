"""The tool against simulated training in every test world (issue 45); prints Markdown tables.

    uv run python benchmarks/worlds.py                       # 16 logs per world, 8 truth seeds
    uv run python benchmarks/worlds.py --logs 4 --worlds skill --detail

Per world (tests/worlds/world.py): simulated training of every config for `--horizon` steps
(`--seeds` seeds, common random numbers) gives the truth; `--logs` independent logs of
`--log-steps` × `--log-groups` groups are replayed by the tool with the forecast at the same
horizon (2 seeds, 150 problems per bucket). The table shows, for the first log, the pick with its
stated confidence and what training does under it (long-problem resolve ratio and change of
solve minutes against shaping off), whether it is right (check 1, tests/worlds/checks.py), and
over all logs: the share of right picks, the median Spearman ρ and pair agreement of the
forecast's long ratio against training's (check 2), and the mean stated confidence against how
often the pick repeats (check 3). `--detail` adds per config the truth and the tool's numbers.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from worlds import checks as K
from worlds import world as W


def _fmt(x: float | None, spec: str = ".2f") -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def run_world(world: W.World, args: argparse.Namespace) -> tuple[list[str], list[str]]:
    configs = W.standard_configs()
    t0 = time.perf_counter()
    truth = W.truth(world, configs, args.horizon, groups=args.log_groups, seeds=args.seeds)
    views = [
        K.ask_tool(
            W.generate_log(world, args.log_steps, args.log_groups, seed=100 + i),
            configs,
            args.horizon,
            calibrate=args.calibrate,
        )
        for i in range(args.logs)
    ]
    first = views[0]
    ranks = [K.rank_agreement(truth, v) for v in views]
    solve_ranks = [K.rank_agreement(truth, v, "solve_delta") for v in views]
    solve_pairs = [p for _, p, _ in solve_ranks if p is not None]
    rhos = [r for r, _, _ in ranks]
    pairs = [p for _, p, _ in ranks if p is not None]
    repeats = K.Repeats(
        [v.pick for v in views], [v.confidence for v in views], [v.picked_set for v in views]
    )
    pick = first.pick
    shaped = pick is not None and pick != W.OFF.label
    picks = ", ".join(f"{p} ×{c}" for p, c in Counter(v.pick for v in views).most_common())
    row = [
        world.name,
        str(world.group_size),
        f"{pick} ({_fmt(first.confidence)})",
        _fmt(truth.mean(pick, "long_ratio"), ".3f") if shaped else "1",
        _fmt(truth.mean(pick, "solve_delta"), "+.2f") if shaped else "0",
        "yes" if K.pick_right(truth, first) else "no",
        f"{sum(K.pick_right(truth, v) for v in views)}/{len(views)}",
        _fmt(float(np.median(rhos)), "+.2f"),
        _fmt(float(np.median(pairs)) if pairs else None),
        str(ranks[0][2]),
        f"{sum(K.ranks_agree(r, p) or n == 0 for r, p, n in ranks)}/{len(views)}",
        _fmt(float(np.median([r for r, _, _ in solve_ranks])), "+.2f"),
        _fmt(float(np.median(solve_pairs)) if solve_pairs else None),
        _fmt(repeats.stated),
        _fmt(repeats.repeat_rate),
        picks,
        " ".join(_fmt(v.alpha) for v in views[:8]),
        f"{time.perf_counter() - t0:.0f}",
    ]
    detail = []
    for cfg in configs:
        label = cfg.label
        tool_long = np.mean([v.long_ratio[label] for v in views])
        tool_solve = np.mean([v.solve_delta[label] for v in views])
        roles = Counter(v.roles[label] for v in views).most_common(1)[0][0]
        detail.append(
            f"| {world.name} | {label} "
            f"| {truth.mean(label, 'long_ratio'):.3f} ± {truth.se(label, 'long_ratio'):.3f} "
            f"| {truth.mean(label, 'ratio'):.3f} "
            f"| {truth.mean(label, 'solve_delta'):+.2f} "
            f"| {'yes' if label != 'off' and truth.clears(label) else ''} "
            f"| {tool_long:.3f} | {tool_solve:+.2f} | {roles} |"
        )
    return row, detail


HEAD = (
    "world",
    "n",
    "pick, log 0 (stated)",
    "sim long ratio",
    "sim solve Δ min",
    "right",
    "right, all logs",
    "ρ (median)",
    "pairs agree (median)",
    "pairs separated",
    "rank check, logs",
    "ρ solve Δ (median)",
    "solve pairs agree",
    "stated conf",
    "repeat rate",
    "picks over logs",
    "α (first 8 logs)",
    "s",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--logs", type=int, default=16)
    parser.add_argument("--seeds", type=int, default=8, help="training seeds of the truth")
    parser.add_argument("--horizon", type=int, default=50, help="T: training and forecast steps")
    parser.add_argument("--log-steps", type=int, default=12)
    parser.add_argument("--log-groups", type=int, default=48)
    parser.add_argument("--worlds", nargs="*", default=list(W.WORLDS), choices=list(W.WORLDS))
    parser.add_argument("--detail", action="store_true", help="per config, truth and tool")
    parser.add_argument(
        "--calibrate",
        action="store_true",
        help="calibrate the causal share on each log's drift (forecasting/calibrate.py)",
    )
    args = parser.parse_args()
    print(
        f"T = {args.horizon} steps, truth over {args.seeds} seeds, {args.logs} logs of "
        f"{args.log_steps} steps × {args.log_groups} groups per world\n"
    )
    print("| " + " | ".join(HEAD) + " |")
    print("|" + "---|" * len(HEAD))
    details = []
    for name in args.worlds:
        row, detail = run_world(W.WORLDS[name], args)
        print("| " + " | ".join(row) + " |", flush=True)
        details += detail
    if args.detail:
        print(
            "\n| world | config | sim long ratio ± se | sim ratio | sim solve Δ min | clears "
            "| tool long ratio (mean) | tool solve Δ min (mean) | tool role (mode) |"
        )
        print("|" + "---|" * 9)
        print("\n".join(details))


if __name__ == "__main__":
    main()
