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
