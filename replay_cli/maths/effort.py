"""The effort model of a problem (a softmax `pi` over its bucket's run-time levels, a Bernoulli
`p` per level) and one natural-gradient step of fixed KL size δ on it; docs/report.md derives it
and states what it assumes. Arrays are (..., problems, levels), every function vectorised."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from replay_cli.maths.level_axis import level_max, level_sum

EFFORT_PRIOR = 1.0
"""Pseudo-rollouts of the bucket's level mix added to a problem's logged mix (so a level the
problem never logged keeps a little probability, as a softmax must)."""
SUCCESS_PRIOR = 2.0
"""Pseudo-rollouts of the bucket's success rate at a level added to a problem's own (shrinkage
where the problem has few rollouts at that level)."""
P_EDGE = 1e-4
"""Success rates are kept in [P_EDGE, 1 - P_EDGE] (a logit must stay finite)."""


@dataclass(frozen=True)
class EffortModel:
    """The problems' starting policy: effort `pi`, success per level `p`, minutes per level `m`
    (each (problems, levels)), their length bucket (0 short, 1 medium, 2 long) and weight (the
    training groups that drew them)."""

    pi: np.ndarray
    p: np.ndarray
    m: np.ndarray
    bucket: np.ndarray
    weight: np.ndarray
    rate: np.ndarray | None = None
    """The success rates before they are kept off 0 and 1 for the logits (`p`): a level its bucket
    never resolved at has rate 0, and a forecast never draws a success there."""

    @classmethod
    def of_counts(
        cls,
        count: np.ndarray,
        success: np.ndarray,
        minutes: np.ndarray,
        bucket: np.ndarray,
        weight: np.ndarray,
    ) -> EffortModel:
        """From each problem's logged rollouts per level (count, successes, summed minutes),
        shrunk toward its bucket's: the effort mix by EFFORT_PRIOR pseudo-rollouts, the success
        rate by SUCCESS_PRIOR, minutes only where the problem has none at that level."""
        levels = count.shape[1]
        mix = np.zeros((3, levels))
        rate = np.zeros((3, levels))
        mean_minutes = np.zeros((3, levels))
        for b in range(3):
            mine = bucket == b
            c, s, m = count[mine].sum(0), success[mine].sum(0), minutes[mine].sum(0)
            if c.sum() > 0:
                mix[b] = c / c.sum()
            rate[b] = np.where(c > 0, s / np.maximum(c, 1), 0.0)
            mean_minutes[b] = np.where(c > 0, m / np.maximum(c, 1), 0.0)
        n = count.sum(1, keepdims=True)
        pi = (count + EFFORT_PRIOR * mix[bucket]) / (n + EFFORT_PRIOR)
        p = (success + SUCCESS_PRIOR * rate[bucket]) / (count + SUCCESS_PRIOR)
        m = np.where(count > 0, minutes / np.maximum(count, 1), mean_minutes[bucket])
        clipped = np.clip(p, P_EDGE, 1 - P_EDGE)
        return cls(pi, clipped, m, bucket, weight.astype(np.float64), p)

    def __len__(self) -> int:
        return len(self.bucket)

    @cached_property
    def outcomes(self) -> dict[str, np.ndarray]:
        """Per problem, `outcome_sums` of the model as it is (before any step)."""
        return outcome_sums(self.pi, self.p, self.m)

    @cached_property
    def log_pi(self) -> np.ndarray:
        """log pi (-inf where pi is 0): every step and KL of the model reads it."""
        with np.errstate(divide="ignore"):
            return np.log(self.pi)

    @cached_property
    def logit_p(self) -> np.ndarray:
        """The success logits: every step and KL of the model reads them."""
        return np.log(self.p) - np.log1p(-self.p)

    @cached_property
    def log_outcomes(self) -> tuple[np.ndarray, np.ndarray]:
        """log p and log(1 - p) by softplus of the logits (finite at any logit)."""
        return _log_rates(self.logit_p)

    def take(self, rows: np.ndarray) -> EffortModel:
        """The model of the leading rows `rows` (pi, p and weight with a leading axis), its
        cached logarithms taken along rather than computed again (solve_eta's iterations)."""
        sub = EffortModel(self.pi[rows], self.p[rows], self.m, self.bucket, self.weight[rows])
        for name in ("log_pi", "logit_p"):
            sub.__dict__[name] = getattr(self, name)[rows]
        sub.__dict__["log_outcomes"] = tuple(x[rows] for x in self.log_outcomes)
        return sub


def outcome_sums(pi: np.ndarray, p: np.ndarray, m: np.ndarray) -> dict[str, np.ndarray]:
    """Per problem: the resolve probability P, the minutes-weighted success PM, the failure
    probability F and the minutes-weighted failure FM (failures summed directly: where they are
    rare, 1 − P would cancel)."""
    return {
        "p": level_sum(pi * p),
        "pm": level_sum(pi * p * m),
        "f": level_sum(pi * (1 - p)),
        "fm": level_sum(pi * (1 - p) * m),
    }


@dataclass(frozen=True)
class Direction:
    """The natural-gradient direction of configs: effort `d` and outcome `e` logits, each
    (configs, problems, levels)."""

    d: np.ndarray
    e: np.ndarray

    @classmethod
    def of(cls, model: EffortModel, a: np.ndarray, ay: np.ndarray) -> Direction:
        """From the advantages' per-level means ā (a) and āy (ay), (configs, problems, levels)."""
        pi, p = model.pi, model.p
        with np.errstate(divide="ignore", invalid="ignore"):
            d = np.where(pi > 0, a / pi, 0.0)
            e = np.where(pi > 0, (ay - p * a) / (pi * p * (1 - p)), 0.0)
        return cls(d, e)

    def second_order_kl(self, model: EffortModel) -> np.ndarray:
        """½ · Fisher quadratic form per unit η² (configs, problems): KL ≈ η² times this."""
        pi, p = model.pi, model.p
        outcome = level_sum(pi * p * (1 - p) * self.e**2)
        return 0.5 * (_effort_quadratic(pi, self.d) + outcome)


def _effort_quadratic(pi: np.ndarray, d: np.ndarray) -> np.ndarray:
    """The effort's Fisher quadratic form: the variance of d under pi."""
    mean = level_sum(pi * d, keepdims=True)
    return level_sum(pi * (d - mean) ** 2)


def softmax(logits: np.ndarray) -> np.ndarray:
    z = logits - level_max(logits, keepdims=True)
    e = np.exp(z)
    return e / level_sum(e, keepdims=True)


def _log_rates(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(log σ(z), log σ(-z)), finite at any logit: −softplus(∓z) with the one log1p(exp(−|z|))
    both share (np.logaddexp computes each on its own, twice the transcendental work)."""
    shared = np.log1p(np.exp(-np.abs(z)))
    return -(np.maximum(-z, 0.0) + shared), -(np.maximum(z, 0.0) + shared)


def stepped(
    model: EffortModel, direction: Direction, eta: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(pi', success logits') after a step of size eta (one per config) along the direction;
    `success(logits)` gives the new success rates. Logits, not rates, so that a large step
    neither rounds a rate to 0 or 1 nor saturates its KL."""
    z = model.logit_p + np.asarray(eta, dtype=np.float64)[..., None, None] * direction.e
    return stepped_effort(model, direction, eta), z


def stepped_effort(model: EffortModel, direction: Direction, eta: np.ndarray) -> np.ndarray:
    """pi' after a step of size eta on the effort softmax alone (the success rates stay)."""
    return _stepped_effort(model.pi, model.log_pi, direction.d, eta)


def _stepped_effort(
    pi: np.ndarray, log_pi: np.ndarray, d: np.ndarray, eta: np.ndarray
) -> np.ndarray:
    eta = np.asarray(eta, dtype=np.float64)[..., None, None]
    with np.errstate(over="ignore", invalid="ignore"):
        new = softmax(log_pi + eta * d)
    return np.where(eta == 0, pi, new)  # no step: the policy as it was, not its rounding


def success(logits: np.ndarray) -> np.ndarray:
    """Success rates of logits: the logistic, by tanh (no overflow at any logit)."""
    return 0.5 * (1.0 + np.tanh(0.5 * logits))


def _effort_kl(pi: np.ndarray, log_pi: np.ndarray) -> np.ndarray:
    """KL(new ‖ old) of each problem's effort alone (a step that leaves the success rates)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return level_sum(np.where(pi > 0, pi * (np.log(pi) - log_pi), 0.0))


def kl(model: EffortModel, pi: np.ndarray, z: np.ndarray) -> np.ndarray:
    """KL(new ‖ old) of each problem's joint level-and-outcome distribution, the new outcome
    given by its logits `z` (configs, problems); log-rates by softplus, finite at any logit."""
    log_q, log_not_q = _log_rates(z)
    log_q0, log_not_q0 = model.log_outcomes
    q = np.exp(log_q)
    outcome = q * (log_q - log_q0) + (1 - q) * (log_not_q - log_not_q0)
    with np.errstate(divide="ignore", invalid="ignore"):
        level = np.where(pi > 0, pi * (np.log(pi) - model.log_pi), 0.0)
    return level_sum(level + pi * outcome)


def mean_kl(model: EffortModel, direction: Direction, eta: np.ndarray) -> np.ndarray:
    """Per config, the weighted mean KL over problems of a step of size eta."""
    if not direction.e.any():  # an effort-only step (the forecast's): no outcome term
        pi = stepped_effort(model, direction, eta)
        return _weighted_mean(_effort_kl(pi, model.log_pi), model.weight)
    return _weighted_mean(kl(model, *stepped(model, direction, eta)), model.weight)


def _weighted_mean(values: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Per config, the mean over problems (the last axis) of `values` weighted by `w`."""
    return (values * w).sum(-1) / np.maximum(w.sum(-1), 1e-300)


def solve_eta(
    model: EffortModel, direction: Direction, budget: float, tol: float = 1e-12
) -> np.ndarray:
    """Per config (the direction's leading axes), the step size whose weighted mean exact KL equals
    `budget` (0 for a config whose direction is 0). KL grows like η² near 0, so log KL is nearly
    linear in log η: a step of slope 2 from the second-order estimate, then secant steps in log-log
    space, converge in a few evaluations; a bracket kept on the way falls back to bisection where a
    secant step leaves it. Each evaluation covers only the configs that have not converged."""
    quad, mean_kl_of = _config_kl(model, direction)
    moving = quad > 0
    x0 = np.log(np.sqrt(budget / np.where(moving, quad, 1.0)))  # log η, second order
    target = np.log(budget)

    def f(log_eta: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """log mean KL − log budget of the configs `rows` (KL ≥ 0: rounding can leave a tiny
        negative where the step barely moves anything)."""
        kl_ = mean_kl_of(rows, np.exp(log_eta[rows]))
        return np.log(np.maximum(kl_, 1e-300)) - target

    x = _log_log_root(f, x0, moving, tol)
    return np.where(moving, np.exp(x), 0.0).reshape(direction.d.shape[:-2])


def _config_kl(
    model: EffortModel, direction: Direction
) -> tuple[np.ndarray, Callable[[np.ndarray, np.ndarray], np.ndarray]]:
    """Per config (flattened), the weighted second-order KL per unit η², and `mean_kl_of(rows,
    eta)`, the exact mean KL of configs `rows`: its cheapest form for this model, chosen once."""
    lead, (n_p, n_k) = direction.d.shape[:-2], direction.d.shape[-2:]
    size = int(np.prod(lead))

    def flat(a: np.ndarray, tail: tuple[int, ...]) -> np.ndarray:
        return np.broadcast_to(a, (*lead, *tail)).reshape(size, *tail)

    d, e = flat(direction.d, (n_p, n_k)), flat(direction.e, (n_p, n_k))
    # A model shared by every config (the first-step diagnostic's) is read as it is, its
    # logarithms computed once; one per config (the forecast's) is flattened and taken row by row.
    shared = model.pi.ndim == 2 and model.p.ndim == 2 and model.weight.ndim == 1
    if not e.any():  # an effort-only step (the forecast's): only pi, log pi and weights move
        pi, log_pi, w = model.pi, model.log_pi, model.weight
        if not shared:
            pi, w = flat(model.pi, (n_p, n_k)), flat(model.weight, (n_p,))
            with np.errstate(divide="ignore"):
                log_pi = np.log(pi)

        def effort_only(rows: np.ndarray, eta: np.ndarray) -> np.ndarray:
            p_, log_p_, w_ = (pi, log_pi, w) if shared else (pi[rows], log_pi[rows], w[rows])
            return _weighted_mean(_effort_kl(_stepped_effort(p_, log_p_, d[rows], eta), log_p_), w_)

        return _weighted_mean(0.5 * _effort_quadratic(pi, d), w), effort_only
    one = model
    if not shared:
        pi, p = flat(model.pi, (n_p, n_k)), flat(model.p, (n_p, n_k))
        one = EffortModel(pi, p, model.m, model.bucket, flat(model.weight, (n_p,)))

    def joint(rows: np.ndarray, eta: np.ndarray) -> np.ndarray:
        sub = one if shared else one.take(rows)
        step = stepped(sub, Direction(d[rows], e[rows]), eta)  # e is known not all 0
        return _weighted_mean(kl(sub, *step), sub.weight)

    return _weighted_mean(Direction(d, e).second_order_kl(one), one.weight), joint


def _log_log_root(
    f: Callable[[np.ndarray, np.ndarray], np.ndarray],
    x0: np.ndarray,
    moving: np.ndarray,
    tol: float,
) -> np.ndarray:
    """The root of each moving config's f from x0 (solve_eta's log-log search): a slope-2 step,
    then secant steps, bisecting (or slope-2 while unbracketed) where one leaves the bracket."""
    size = len(x0)
    x = x0
    every = np.flatnonzero(moving)
    lo, hi = np.full(size, -np.inf), np.full(size, np.inf)
    x_prev, f_prev = x.copy(), np.zeros(size)
    f_prev[every] = f(x, every)
    # The first step assumes KL ∝ η² (slope 2 in log-log), then secant steps.
    x = np.clip(x - f_prev / 2, x0 - 40.0, x0 + 40.0)
    fx = np.zeros(size)
    fx[every] = f(x, every)
    lo = np.where(f_prev < 0, x_prev, lo)
    hi = np.where(f_prev > 0, x_prev, hi)
    for _ in range(100):
        lo = np.where(fx < 0, np.maximum(lo, x), lo)
        hi = np.where(fx > 0, np.minimum(hi, x), hi)
        done = ~moving | (np.abs(fx) <= tol) | (hi - lo <= tol)
        if done.all():
            break
        with np.errstate(divide="ignore", invalid="ignore"):  # ±inf bounds, equal values
            step = np.where(fx != f_prev, fx * (x - x_prev) / (fx - f_prev), 0.0)
            middle = (lo + hi) / 2
        guess = x - step
        bracketed = np.isfinite(lo) & np.isfinite(hi)
        outside = ~np.isfinite(guess) | (guess <= lo) | (guess >= hi)
        newton = x - np.clip(fx / 2, -4.0, 4.0)
        halfway = np.where(bracketed, middle, newton)
        guess = np.where(outside, halfway, guess)
        # A budget the step cannot spend (its KL saturates) stops far out, not at infinity.
        guess = np.clip(np.where(done, x, guess), x0 - 40.0, x0 + 40.0)
        active = np.flatnonzero(~done)
        x_prev, f_prev = x, fx.copy()
        x = guess
        fx[active] = f(x, active)
    return x


DEFAULT_LEVELS = 4
"""Effort levels per length bucket: run-time terciles of the bucket's rollouts below the time
limit, and the time limit itself."""
LIMIT_SHARE = 0.005
"""The log has a time limit when at least this share of training rollouts end within
LIMIT_WINDOW of the longest one (agents stopped by the harness, not finishing on their own)."""
LIMIT_WINDOW = 0.02
"""A rollout is at the time limit when its minutes are within this share (and at least one
minute) of the input's longest."""


@dataclass(frozen=True)
class EffortLevels:
    """Where each training rollout's effort level comes from: per length bucket the interior
    edges (minutes) of its run-time bins, and the time limit (minutes; None when the log shows
    none, and the last level stays empty)."""

    edges: tuple[tuple[float, ...], ...]
    limit: float | None

    @property
    def count(self) -> int:
        return len(self.edges[0]) + 2 if self.edges else DEFAULT_LEVELS

    def of_rows(self, minutes: np.ndarray, bucket: np.ndarray) -> np.ndarray:
        """Each row's level (int8): its bin among its bucket's edges (a value on an edge in the lower bin, as the length buckets), the last level at the limit."""
        out = np.zeros(len(minutes), np.int8)
        for b, edges in enumerate(self.edges):
            mine = bucket == b
            out[mine] = np.searchsorted(np.asarray(edges), minutes[mine], side="left")
        if self.limit is not None:
            out[minutes >= self.limit] = self.count - 1
        return out


def limit_of(longest: float, near: int, total: int) -> float | None:
    """The time limit (minutes) given the longest run time and how many of `total` rollouts end
    within LIMIT_WINDOW of it: None where too few do (no harness limit shows in the log)."""
    if total == 0 or near < LIMIT_SHARE * total:
        return None
    return window_start(longest)


def window_start(longest: float) -> float:
    """Minutes from which a rollout counts as stopped at the time limit."""
    return longest - max(1.0, LIMIT_WINDOW * longest)
