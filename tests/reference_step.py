"""A slow, independent reference of the first-step diagnostic (docs/report.md, "The effort
model and the first step's direction"), written as plain loops over groups and levels from the per-row report: the levels,
the effort model, the natural-gradient direction, the step size that spends the budget (by
bisection on the exact KL), and the changes it makes. Tests hold engine/first_step.py to it."""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import polars as pl

LEVELS = 4
BUDGET = 0.001
SCOPES = ("", "@short", "@medium", "@long")


def _seconds(rt):
    return 0.0 if rt is None or not math.isfinite(rt) else max(rt, 0.0)


def _groups(rows: pl.DataFrame) -> dict:
    train = rows.filter(pl.col("split") != "validation").sort("step", "group_id", "rollout_index")
    out = defaultdict(list)
    for r in train.iter_rows(named=True):
        out[(r["step"], r["group_id"])].append(r)
    return dict(out)


def levels_of(groups: dict) -> tuple[dict, dict]:
    """Per group its bucket, per row (step, group, index) its level."""
    medians = {
        k: float(np.median([_seconds(r["openhands_run_time"]) for r in g]))
        for k, g in groups.items()
    }
    lo, hi = np.quantile(list(medians.values()), [1 / 3, 2 / 3]) if medians else (0.0, 0.0)
    bucket = {k: 0 if m <= lo else 2 if m > hi else 1 for k, m in medians.items()}
    minutes = [r["minutes"] for g in groups.values() for r in g]
    longest = max(minutes) if minutes else 0.0
    start = longest - max(1.0, 0.02 * longest)
    near = sum(m >= start for m in minutes)
    limit = start if minutes and near >= 0.005 * len(minutes) else None
    edges = {}
    for b in range(3):
        below = [
            r["minutes"]
            for k, g in groups.items()
            if bucket[k] == b
            for r in g
            if limit is None or r["minutes"] < limit
        ]
        qs = np.linspace(0, 1, LEVELS)[1:-1]
        edges[b] = list(np.quantile(below, qs)) if below else [0.0] * len(qs)
    level = {}
    for k, g in groups.items():
        for r in g:
            if limit is not None and r["minutes"] >= limit:
                lv = LEVELS - 1
            else:
                lv = sum(r["minutes"] > e for e in edges[bucket[k]])
            level[(k, r["rollout_index"])] = lv
    return bucket, level


def model_of(groups: dict, bucket: dict, level: dict) -> dict:
    """Per group (each its own problem): pi, p, m over the levels."""
    count = {k: [0] * LEVELS for k in groups}
    success = {k: [0] * LEVELS for k in groups}
    msum = {k: [0.0] * LEVELS for k in groups}
    for k, g in groups.items():
        for r in g:
            lv = level[(k, r["rollout_index"])]
            count[k][lv] += 1
            success[k][lv] += bool(r["resolved"])
            msum[k][lv] += r["minutes"]
    model = {}
    for b in range(3):
        mine = [k for k in groups if bucket[k] == b]
        c = [sum(count[k][j] for k in mine) for j in range(LEVELS)]
        s = [sum(success[k][j] for k in mine) for j in range(LEVELS)]
        m = [sum(msum[k][j] for k in mine) for j in range(LEVELS)]
        total = sum(c)
        mix = [x / total if total else 0.0 for x in c]
        rate = [s[j] / c[j] if c[j] else 0.0 for j in range(LEVELS)]
        mean = [m[j] / c[j] if c[j] else 0.0 for j in range(LEVELS)]
        for k in mine:
            n = sum(count[k])
            pi = [(count[k][j] + mix[j]) / (n + 1) for j in range(LEVELS)]
            p = [(success[k][j] + 2 * rate[j]) / (count[k][j] + 2) for j in range(LEVELS)]
            p = [min(max(x, 1e-4), 1 - 1e-4) for x in p]
            mm = [msum[k][j] / count[k][j] if count[k][j] else mean[j] for j in range(LEVELS)]
            model[k] = (pi, p, mm)
    return model


def _direction(g, k, level, pi, p, column):
    t = [r for r in g if not r["masked"] and r["kept"]]
    n = max(len(t), 1)
    if not any(abs(r[column] or 0.0) > 1e-6 for r in t):  # no signal (spec §5): no step
        t = []
    a = [0.0] * LEVELS
    ay = [0.0] * LEVELS
    for r in t:
        lv = level[(k, r["rollout_index"])]
        x = r[column] or 0.0
        a[lv] += x / n
        ay[lv] += x * bool(r["resolved"]) / n
    d = [a[j] / pi[j] if pi[j] > 0 else 0.0 for j in range(LEVELS)]
    e = [
        (ay[j] - p[j] * a[j]) / (pi[j] * p[j] * (1 - p[j])) if pi[j] > 0 else 0.0
        for j in range(LEVELS)
    ]
    return d, e


def _step(pi, p, d, e, eta):
    z = [math.log(pi[j]) + eta * d[j] if pi[j] > 0 else -math.inf for j in range(LEVELS)]
    top = max(z)
    w = [math.exp(x - top) for x in z]
    pi2 = [x / sum(w) for x in w]
    z2 = [math.log(p[j]) - math.log1p(-p[j]) + eta * e[j] for j in range(LEVELS)]
    return pi2, z2


def _softplus(x):
    return max(x, 0.0) + math.log1p(math.exp(-abs(x)))


def _kl(pi, p, pi2, z2):
    """KL of the joint distribution, the new outcome by its logit (log-rates by softplus)."""
    total = 0.0
    for j in range(LEVELS):
        if pi2[j] > 0:
            total += pi2[j] * math.log(pi2[j] / pi[j])
            z0 = math.log(p[j]) - math.log1p(-p[j])
            log_q, log_nq = -_softplus(-z2[j]), -_softplus(z2[j])
            log_q0, log_nq0 = -_softplus(-z0), -_softplus(z0)
            q = math.exp(log_q)
            total += pi2[j] * (q * (log_q - log_q0) + (1 - q) * (log_nq - log_nq0))
    return total


def measure(rows: pl.DataFrame, column: str = "advantage", budget: float = BUDGET) -> dict:
    """The point measure of one config's per-row report (`column`: advantage, or advantage_raw
    for its shaping-off twin): per scope the resolve change, its effort part, and the changes
    of the mean minutes of successes and failures; and the time-only share."""
    groups = _groups(rows)
    bucket, level = levels_of(groups)
    model = model_of(groups, bucket, level)
    dirs = {k: _direction(g, k, level, *model[k][:2], column) for k, g in groups.items()}

    def mean_kl(eta):
        return sum(_kl(*model[k][:2], *_step(*model[k][:2], *dirs[k], eta)) for k in groups) / len(
            groups
        )

    moving = any(abs(x) > 0 for d, e in dirs.values() for x in (*d, *e))
    eta = 0.0
    if moving:
        lo, hi = 0.0, 1.0
        while mean_kl(hi) < budget and hi < 1e15:  # a budget it cannot spend: saturate
            hi *= 2
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if mean_kl(mid) > budget else (mid, hi)
        eta = (lo + hi) / 2
    out = {"eta": eta}
    for s, scope in enumerate(SCOPES):
        mine = [k for k in groups if s == 0 or bucket[k] == s - 1]
        sums = defaultdict(float)
        for k in mine:
            pi, p, m = model[k]
            pi2, z2 = _step(pi, p, *dirs[k], eta)
            p2 = [0.5 * (1 + math.tanh(0.5 * z)) for z in z2]
            for j in range(LEVELS):
                sums["p0"] += pi[j] * p[j]
                sums["p1"] += pi2[j] * p2[j]
                sums["pe"] += pi2[j] * p[j]
                sums["pm0"] += pi[j] * p[j] * m[j]
                sums["pm1"] += pi2[j] * p2[j] * m[j]
                sums["fm0"] += pi[j] * (1 - p[j]) * m[j]
                sums["fm1"] += pi2[j] * (1 - p2[j]) * m[j]
                sums["f0"] += pi[j] * (1 - p[j])
                sums["f1"] += pi2[j] * (1 - p2[j])
        n = len(mine)
        if not n:
            continue
        f0, f1 = sums["f0"], sums["f1"]
        out[f"resolve{scope}"] = (sums["p1"] - sums["p0"]) / n
        out[f"resolve_effort{scope}"] = (sums["pe"] - sums["p0"]) / n
        out[f"solve_minutes{scope}"] = sums["pm1"] / sums["p1"] - sums["pm0"] / sums["p0"]
        out[f"fail_minutes{scope}"] = sums["fm1"] / f1 - sums["fm0"] / f0
    return out
