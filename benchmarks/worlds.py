"""The tool against simulated training in every test world, per log kind (issues 45 and 53);
prints a Markdown table.

    uv run python benchmarks/worlds.py --quick               # 8 logs per kind, 6 truth seeds
    uv run python benchmarks/worlds.py                       # 16 logs per kind, 8 truth seeds
    uv run python benchmarks/worlds.py --logs 4 --worlds skill --kinds run48 --detail

Per world (tests/worlds/world.py): simulated training of every config for `--horizon` steps
(`--seeds` seeds, common random numbers) gives the truth. Per log kind (`world.LOG_KINDS`: `run12`
and `run48`, the first 12 and 48 steps of a shaping-off run; `fixed`, 12 steps all drawn from the
starting policy), `--logs` independent logs of `--log-groups` groups a step (seeds 100, 101, ...)
are replayed by the tool with the forecast at the same horizon (2 seeds, 150 problems per bucket).

The table, per world × kind: how many picks are right (check 1, tests/worlds/checks.py:
the pick against training's best), the picks, the median Spearman ρ and separated-pair share of
the rule's own numbers against training's (check 2: the long-problem resolve ratio, the bar; the
change of solve minutes, the rank) and on how many logs either passes, and the mean stated
confidence against how often the pick repeats over the kind's logs (check 3).

The last column reads the tool's own fit and backtest (on by default wherever a log names its
problems, docs/report.md): the long level's α, the step size, skill, and on how many logs the
backtest of the forecast used passed (the hand backtest of earlier sessions, now the tool's).
`--detail` adds per config the truth and the tool's numbers on the `run48` logs.
"""

from __future__ import annotations

import argparse
import math
import re
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


def _median(values: list[float]) -> float | None:
    kept = [v for v in values if v is not None and not math.isnan(v)]
    return float(np.median(kept)) if kept else None


def kind_row(world: W.World, kind: str, truth: W.Truth, views: list[K.ToolView]) -> list[str]:
    """One world × log kind: the checks over its logs."""
    bar = [K.rank_agreement(truth, v) for v in views]
    rank = [K.rank_agreement(truth, v, "solve_delta") for v in views]
    repeats = K.Repeats(
        [v.pick for v in views], [v.confidence for v in views], [v.picked_set for v in views]
    )
    picks = ", ".join(f"{p} ×{c}" for p, c in Counter(v.pick for v in views).most_common())
    right = sum(K.pick_right(truth, v) for v in views)

    def agree(found: list[tuple[float, float | None, int]]) -> str:
        return f"{sum(K.ranks_agree(r, p) or n == 0 for r, p, n in found)}/{len(found)}"

    return [
        world.name,
        kind,
        f"{right}/{len(views)}",
        picks,
        _fmt(_median([r for r, _, _ in bar]), "+.2f"),
        _fmt(_median([p for _, p, _ in bar])),
        agree(bar),
        _fmt(_median([r for r, _, _ in rank]), "+.2f"),
        _fmt(_median([p for _, p, _ in rank])),
        agree(rank),
        _fmt(repeats.stated),
        _fmt(repeats.repeat_rate),
        _fmt(repeats.stated - repeats.repeat_rate, "+.2f"),
        fit_cell(views),
    ]


def fit_cell(views: list[K.ToolView]) -> str:
    """The fit over the logs: the long level's α, the step size (× configured), skill in points
    a step, and on how many logs its backtest passed."""
    if all(v.alpha is None for v in views):
        return ""
    sizes = [re.search(r"steps ([0-9.]+)× the configured", v.fit or "") for v in views]
    alphas = " ".join(f"{v.alpha:.2f}" for v in views if v.alpha is not None)
    scale = " ".join(m.group(1) if m else "1" for m in sizes)
    skill = " ".join(f"{100 * (v.skill or 0):+.2f}" for v in views)
    passed = sum(v.backtest == 1 for v in views)
    return f"α {alphas}; δ× {scale}; skill {skill}; backtest {passed}/{len(views)}"


HEAD = (
    "world",
    "log",
    "right",
    "picks over logs",
    "ρ bar (long ratio)",
    "bar pairs agree",
    "bar check, logs",
    "ρ rank (solve Δ)",
    "rank pairs agree",
    "rank check, logs",
    "stated",
    "repeat",
    "stated − repeat",
    "fit: α long, δ×, skill pts/step, backtest",
)


def detail_rows(world: W.World, truth: W.Truth, views: list[K.ToolView]) -> list[str]:
    rows = []
    for cfg in truth.configs:
        label = cfg.label
        tool_long = np.mean([v.long_ratio[label] for v in views])
        tool_solve = np.mean([v.solve_delta[label] for v in views])
        roles = Counter(v.roles[label] for v in views).most_common(1)[0][0]
        rows.append(
            f"| {world.name} | {label} "
            f"| {truth.mean(label, 'long_ratio'):.3f} ± {truth.se(label, 'long_ratio'):.3f} "
            f"| {truth.mean(label, 'ratio'):.3f} "
            f"| {truth.mean(label, 'solve_delta'):+.2f} "
            f"| {'yes' if label != 'off' and truth.clears(label) else ''} "
            f"| {tool_long:.3f} | {tool_solve:+.2f} | {roles} |"
        )
    return rows


def run_world(world: W.World, args: argparse.Namespace) -> tuple[list, list]:
    configs = W.standard_configs()
    truth = W.truth(world, configs, args.horizon, groups=args.log_groups, seeds=args.seeds)
    rows, detail = [], []
    for kind in args.kinds:
        t0 = time.perf_counter()
        logs = [W.world_log(world, kind, 100 + i, args.log_groups) for i in range(args.logs)]
        views = [K.ask_tool(log, configs, args.horizon, fit=args.fit) for log in logs]
        rows.append([*kind_row(world, kind, truth, views), f"{time.perf_counter() - t0:.0f}"])
        print("| " + " | ".join(rows[-1]) + " |", flush=True)
        if kind == "run48":
            detail = detail_rows(world, truth, views)
    return rows, detail


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="8 logs per kind, 6 truth seeds")
    parser.add_argument("--logs", type=int, default=None, help="logs per kind (default 16)")
    parser.add_argument("--seeds", type=int, default=None, help="truth's seeds (default 8)")
    parser.add_argument("--horizon", type=int, default=50, help="T: training and forecast steps")
    parser.add_argument("--log-groups", type=int, default=48)
    parser.add_argument("--worlds", nargs="*", default=list(W.WORLDS), choices=list(W.WORLDS))
    kinds = list(W.LOG_KINDS)
    parser.add_argument("--kinds", nargs="*", default=kinds, choices=kinds)
    parser.add_argument("--detail", action="store_true", help="per config, truth and tool")
    parser.add_argument(
        "--fit",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="the forecast with (--fit) or without (--no-fit) its fit to the log "
        "(forecast/fit.py); default: the tool's default",
    )
    args = parser.parse_args()
    args.logs = args.logs or (8 if args.quick else 16)
    args.seeds = args.seeds or (6 if args.quick else 8)
    started = time.perf_counter()
    print(
        f"T = {args.horizon} steps, truth over {args.seeds} seeds, {args.logs} logs per kind of "
        f"{args.log_groups} groups a step; kinds: "
        + ", ".join(
            f"{k} ({W.LOG_KINDS[k].steps} steps{', fixed policy' if W.LOG_KINDS[k].fixed else ''})"
            for k in args.kinds
        )
        + "\n"
    )
    print("| " + " | ".join((*HEAD, "s")) + " |")
    print("|" + "---|" * (len(HEAD) + 1))
    details = []
    for name in args.worlds:
        details += run_world(W.WORLDS[name], args)[1]
    if args.detail and details:
        print(
            "\nrun48 logs: | world | config | sim long ratio ± se | sim ratio | sim solve Δ min "
            "| clears | tool long ratio (mean) | tool solve Δ min (mean) | tool role (mode) |"
        )
        print("|" + "---|" * 9)
        print("\n".join(details))
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
