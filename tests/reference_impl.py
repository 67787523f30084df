"""A slow, independent per-row reference of spec §3 and §4.1, written from the spec in plain Python.

It shares no code with the engine: shaping is an if-chain per row and the leave-one-out statistics
sum each row's peers directly (float64, math.fsum), so it checks the group-sum algebra of the engine.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

INTERNAL_ALL = {1, 2, 3, 4, 5, 8}


def items_for(shaping: dict[str, Any]) -> set[int]:
    if shaping.get("internal_items") is not None:
        return set(shaping["internal_items"])
    return set(INTERNAL_ALL) if shaping.get("semantics") == "internal" else set()


def shape_row(row: dict[str, Any], shaping: dict[str, Any]) -> dict[str, Any]:
    """Shaping of one row per spec §3.2/§3.3."""
    items = items_for(shaping)
    lam = shaping.get("lambda_time", 1 / 60)
    bonus_lam = shaping.get("lambda_call_bonus", 0.0)
    ref = shaping.get("call_bonus_ref")
    if ref is None and bonus_lam > 0 and 8 in items:
        ref = 56.0
    floor = shaping.get("floor")
    rt = row.get("openhands_run_time")
    minutes = max(rt, 0.0) / 60.0 if rt is not None and math.isfinite(rt) else 0.0
    masked = bool(row.get("mask_sample")) and shaping.get("mask_flagged", True)
    reward = row.get("reward")
    out = {
        "minutes": minutes,
        "masked": masked,
        "bonus": 0.0,
        "deduction": 0.0,
        "charged": False,
        "floored": False,
    }
    base = float(reward or 0.0)
    skip = not shaping.get("enabled", True)
    if masked and 1 not in items:
        skip = True
    if shaping.get("apply_to", "all") == "correct":
        gate = (
            bool(row.get("resolved")) if 3 in items else bool(row.get("resolved")) and bool(reward)
        )
        if not gate:
            skip = True
    if row.get("split", "train") == "validation" and 4 not in items:
        skip = True
    if skip:
        out["reward_shaped"] = base
        return out
    if row.get("zeroed_by_penalty") and 2 in items:
        out["reward_shaped"] = 0.0
        return out
    bonus = bonus_lam * min(row.get("calls", 0) / ref, 1.0) if bonus_lam > 0 else 0.0
    new = base + bonus - lam * minutes
    if floor is not None and new < floor:
        new = floor
        out["floored"] = True
    out.update(reward_shaped=new, bonus=bonus, deduction=base - new, charged=True)
    return out


def grpo_group(
    rewards: list[float], valid: list[bool], advantage: dict[str, Any]
) -> list[tuple[float, float, float, float]]:
    """(baseline, std, unclipped, clipped) per row of one group, float64, peers summed directly."""
    loo = advantage.get("baseline", "loo") == "loo"
    n = sum(valid)
    out = []
    for i, r in enumerate(rewards):
        if n <= 1:
            out.append((r, 0.0, 0.0, 0.0))
            continue
        peers = [rewards[j] for j in range(len(rewards)) if valid[j] and (not loo or j != i)]
        m = n - 1 if loo else n
        b = math.fsum(p * 1.0 for p in peers) / m if m else float("nan")
        if m <= 1:
            std = 0.0
        else:
            q = math.fsum(p * p for p in peers) / m
            var = (q - b * b) * m / (m - 1)
            std = math.sqrt(var) if var > 0 else 0.0
        all_equal = len(set(peers)) <= 1
        guard = std > 0 and (advantage.get("std_guard", "trivial") == "legacy" or not all_equal)
        diff = r - b
        unclipped = diff / (std + 1e-6) if advantage.get("normalize", True) and guard else diff
        clipped = unclipped
        if advantage.get("clip_low") is not None:
            clipped = max(clipped, advantage["clip_low"])
        if advantage.get("clip_high") is not None:
            clipped = min(clipped, advantage["clip_high"])
        out.append((b, std, unclipped, clipped))
    return out


def reference_replay(
    rows: list[dict[str, Any]], shaping: dict[str, Any], advantage: dict[str, Any]
) -> list[dict]:
    """Shape every row, then compute advantages per (step, group_id) of training rows."""
    shaped = [{**row, **shape_row(row, shaping)} for row in rows]
    groups: dict[tuple, list[int]] = defaultdict(list)
    for idx, row in enumerate(shaped):
        if row.get("split", "train") == "validation":
            row.update(
                baseline=None,
                std=None,
                advantage_unclipped=None,
                advantage=None,
                advantage_raw=None,
            )
            continue
        groups[(row.get("step", 0), row["group_id"])].append(idx)
    for members in groups.values():
        valid = [
            not shaped[i]["masked"] if advantage.get("exclude_masked") else True for i in members
        ]
        stats = grpo_group([shaped[i]["reward_shaped"] for i in members], valid, advantage)
        raw = grpo_group([float(shaped[i]["reward"] or 0.0) for i in members], valid, advantage)
        for i, (b, s, u, a), (_, _, _, a_raw) in zip(members, stats, raw, strict=True):
            shaped[i].update(
                baseline=b, std=s, advantage_unclipped=u, advantage=a, advantage_raw=a_raw
            )
    return shaped


SIGNAL_EPS = 1e-6


def _mean(xs: list[float]) -> float:
    return math.fsum(xs) / len(xs)


def reference_trainer_metrics(rows: list[dict], shaping: dict[str, Any]) -> dict[str, float]:
    """The PR's time_efficiency/* metrics and total_reward/mean over one postprocess call's rows."""
    items = items_for(shaping)
    sep = "_" if 5 in items else "/"
    minutes = [r["minutes"] for r in rows]
    deductions = [r["deduction"] for r in rows]
    calls = [r["calls"] for r in rows]
    bonus_lam = shaping.get("lambda_call_bonus", 0.0)
    ref = shaping.get("call_bonus_ref")
    if ref is None and bonus_lam > 0 and 8 in items:
        ref = 56.0
    if 5 in items:
        signal = max(minutes) - min(minutes) > SIGNAL_EPS
    else:
        charged = [r["deduction"] for r in rows if not r["masked"]]
        signal = len(charged) >= 2 and max(charged) - min(charged) > SIGNAL_EPS
    te = "time_efficiency/"
    return {
        f"{te}minutes{sep}mean": _mean(minutes),
        f"{te}minutes{sep}max": max(minutes),
        f"{te}deduction{sep}mean": _mean(deductions),
        f"{te}deduction{sep}max": max(deductions),
        f"{te}calls/mean": _mean(calls),
        f"{te}bonus/mean": _mean([r["bonus"] for r in rows]),
        f"{te}seconds_per_call": math.fsum(minutes) * 60.0 / max(sum(calls), 1),
        f"{te}bonus_saturated_frac": (
            _mean([float(c >= ref) for c in calls]) if bonus_lam > 0 and ref is not None else 0.0
        ),
        f"{te}floored_frac": _mean([float(r["floored"]) for r in rows]),
        f"{te}group_has_signal": float(signal),
        "total_reward/mean": _mean([r["reward_shaped"] for r in rows]),
    }


def _trainable(r: dict) -> bool:
    return r["split"] != "validation" and not r["masked"] and r["kept"]


def reference_groups(rows: list[dict], shaping: dict[str, Any]) -> dict[tuple, dict]:
    """Group table of spec §6 from a replay's report rows, one group at a time, pairs by pairs."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        if r["split"] != "validation":
            groups[(r["step"], r["group_id"])].append(r)
    out = {}
    for key, members in groups.items():
        t = [r for r in members if _trainable(r)]
        won = [r for r in t if r["resolved"]]
        lost = [r for r in t if not r["resolved"]]
        inverted_pairs = sum(w["reward_shaped"] < lo["reward_shaped"] for w in won for lo in lost)
        has_signal = any(abs(r["advantage"]) > SIGNAL_EPS for r in t)
        has_raw = any(
            r["advantage_raw"] is not None and abs(r["advantage_raw"]) > SIGNAL_EPS for r in t
        )
        outcomes = {r["resolved"] for r in members}
        top = max((abs(r["advantage_unclipped"]) for r in t), default=None)
        out[key] = {
            "size": len(members),
            "trainable_rows": len(t),
            "resolved_rows": len(won),
            "resolved_pattern": "all_fail"
            if not won
            else ("all_pass" if len(won) == len(t) else "mixed"),
            "has_signal": has_signal,
            "has_signal_raw": has_raw,
            "time_only_signal": has_signal and not has_raw,
            "inverted": bool(won and lost)
            and min(r["reward_shaped"] for r in won) < max(r["reward_shaped"] for r in lost),
            "pairs": len(won) * len(lost),
            "inverted_pairs": inverted_pairs,
            "max_abs_advantage": max((abs(r["advantage"]) for r in t), default=None),
            "max_abs_advantage_unclipped": top,
            "std_at_max_abs": min(
                (r["std"] for r in t if abs(r["advantage_unclipped"]) == top and r["normalized"]),
                default=None,
            ),
            "uncharged_only_signal": has_signal and not has_raw and _uncharged_only(members),
            "kept_rows": sum(r["kept"] for r in members),
            "phantom": any(r["kept"] for r in members) and len(outcomes) == 1,
            **reference_trainer_metrics(members, shaping),
            "inverted_off": bool(won and lost)
            and min(_raw(r) for r in won) < max(_raw(r) for r in lost),
            "floor_tie": any(_on_floor(r, shaping) for r in won)
            and any(_on_floor(r, shaping) for r in lost),
            **reference_pushes(t, "advantage", ""),
            **reference_pushes(t, "advantage_raw", "_off"),
        }
    return out


def _on_floor(r: dict, shaping: dict[str, Any]) -> bool:
    """On the floor whichever side was charged: a tie is a tie."""
    floor = shaping.get("floor")
    return floor is not None and r["reward_shaped"] == floor


def _raw(r: dict) -> float:
    return 0.0 if r["reward_raw"] is None else r["reward_raw"]


def reference_pushes(t: list[dict], column: str, suffix: str) -> dict[str, float]:
    """The behaviour pushes of one group, written out from their definition: (1/n) Σ A_i (f_i -
    mean f) over the n trainable rows, and for minutes and calls the same within the failures,
    within the successes, and between the two outcomes' means."""
    n = len(t)
    if n == 0:
        names = ["resolve"] + [
            f"{f}_{p}" for f in ("minutes", "calls") for p in ("fail", "pass", "between")
        ]
        return {f"push_{name}{suffix}": 0.0 for name in names}

    def adv(r: dict) -> float:
        return 0.0 if r[column] is None else r[column]

    def mean(xs: list[float]) -> float:
        return sum(xs) / len(xs) if xs else 0.0

    won = [r for r in t if r["resolved"]]
    lost = [r for r in t if not r["resolved"]]
    share = len(won) / n
    out = {
        f"push_resolve{suffix}": sum(adv(r) * ((1.0 if r["resolved"] else 0.0) - share) for r in t)
        / n
    }
    for name, key in (("minutes", "minutes"), ("calls", "calls")):
        m_won = mean([float(r[key]) for r in won])
        m_lost = mean([float(r[key]) for r in lost])
        m_all = mean([float(r[key]) for r in t])
        out[f"push_{name}_pass{suffix}"] = sum(adv(r) * (r[key] - m_won) for r in won) / n
        out[f"push_{name}_fail{suffix}"] = sum(adv(r) * (r[key] - m_lost) for r in lost) / n
        out[f"push_{name}_between{suffix}"] = (
            sum(adv(r) * ((m_won if r["resolved"] else m_lost) - m_all) for r in t) / n
        )
    return out


def _uncharged_only(members: list[dict]) -> bool:
    """All charged rows share one shaped reward and an uncharged row has another."""
    charged = [r["reward_shaped"] for r in members if r["charged"]]
    others = [r["reward_shaped"] for r in members if not r["charged"]]
    if not charged or not others or max(charged) - min(charged) > SIGNAL_EPS:
        return False
    return any(abs(v - charged[0]) > SIGNAL_EPS for v in others)


def reference_steps(
    rows: list[dict], groups: dict[tuple, dict], shaping: dict[str, Any], metrics_by: str
) -> dict[int, dict]:
    """Step table of spec §6: trainer metrics per group folded per step (or per batch), advantages
    and group rates over training rows, validation means."""
    out: dict[int, dict] = {}
    for step in sorted({r["step"] for r in rows}):
        train = [r for r in rows if r["step"] == step and r["split"] != "validation"]
        val = [r for r in rows if r["step"] == step and r["split"] == "validation"]
        mine = [g for (s, _), g in groups.items() if s == step]
        entry: dict[str, Any] = {}
        if train:
            if metrics_by == "batch":
                entry.update(reference_trainer_metrics(train, shaping))
            else:
                for name in reference_trainer_metrics(train, shaping):
                    values = [g[name] for g in mine]
                    rule = max if name.endswith("/max") else _mean
                    entry[name] = rule(values)
            adv = [r["advantage"] for r in train if r["advantage"] is not None]
            entry.update(
                {
                    "advantages/mean": _mean(adv) if adv else None,
                    "advantages/max": max(adv, default=None),
                    "advantages/min": min(adv, default=None),
                    "rows": len(train),
                    "groups": len(mine),
                    "signal/group_rate": _mean([float(g["has_signal"]) for g in mine]),
                    "inversion/group_rate": _mean([float(g["inverted"]) for g in mine]),
                    "signal/time_only_rate": _mean([float(g["time_only_signal"]) for g in mine]),
                    **{
                        f"push/{k}": _mean([g[f"push_{k}"] for g in mine])
                        for k in ("resolve", "minutes_fail", "minutes_pass")
                    },
                }
            )
            trained = [r for r in train if _trainable(r)]
            if trained:
                big = [abs(r["advantage_unclipped"]) > 3 for r in trained]
                entry["adv/explosion_frac"] = sum(big) / len(trained)
        if val:
            entry["validation/accuracy"] = _mean([float(r["reward"] or 0.0) for r in val])
            entry["validation/total_reward/mean"] = _mean([r["reward_shaped"] for r in val])
        out[step] = entry
    return out


def float32_grpo_group(
    rewards: list[float], valid: list[bool], advantage: dict[str, Any]
) -> list[dict[str, Any]]:
    """One group's GRPO in the trainer's float32 arithmetic, a row at a time with numpy float32
    scalars: the group totals summed in float64 from the float32 values in row order, then
    totals minus the row rounded to float32, and every mean, variance and division in float32
    (torch's CPU math, spec §4.1). Returns per row: baseline, std, unclipped, advantage,
    peers_equal, normalized (float32 values)."""
    import numpy as np

    f32 = np.float32
    loo = advantage.get("baseline", "loo") == "loo"
    r = [f32(x) for x in rewards]
    n = sum(valid)
    rv = [x if v else f32(0) for x, v in zip(r, valid, strict=True)]
    r2v = [x * x for x in rv]
    s1 = s2 = 0.0
    for a, b in zip(rv, r2v, strict=True):
        s1 += float(a)
        s2 += float(b)
    m = n - 1 if loo else n
    mf = f32(m)
    out = []
    with np.errstate(all="ignore"):
        for i, x in enumerate(r):
            p1 = f32(s1 - float(rv[i])) if loo else f32(s1)
            p2 = f32(s2 - float(r2v[i])) if loo else f32(s2)
            b, q = p1 / mf, p2 / mf
            sd = np.sqrt((q - b * b) * (mf / (mf - f32(1))))
            sd = f32(0) if np.isnan(sd) else (f32(3.4028234663852886e38) if np.isinf(sd) else sd)
            if n <= 1:
                b, sd = x, f32(0)
            elif m <= 1:
                sd = f32(0)
            peers = [r[j] for j in range(len(r)) if valid[j] and not (loo and valid[i] and j == i)]
            equal = n <= 1 or len(set(map(float, peers))) <= 1
            guard = sd > 0 and (advantage.get("std_guard", "trivial") == "legacy" or not equal)
            normalized = bool(guard and advantage.get("normalize", True))
            diff = x - b
            unclipped = diff / (sd + f32(1e-6)) if normalized else diff
            adv = unclipped
            if advantage.get("clip_low") is not None:
                adv = max(adv, f32(advantage["clip_low"]))
            if advantage.get("clip_high") is not None:
                adv = min(adv, f32(advantage["clip_high"]))
            out.append(
                {
                    "baseline": b,
                    "std": sd,
                    "unclipped": unclipped,
                    "advantage": adv,
                    "peers_equal": equal,
                    "normalized": normalized,
                }
            )
    return out
