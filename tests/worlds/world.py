"""Simulated-training worlds with a known truth (issue 45), independent of the tool's forecast.

A **world** is a fixed set of problems in three length buckets (short / medium / long median run
times). Each problem offers a few latent **strategies** (quick / normal / thorough): per strategy a
success probability (a logit: the problem's difficulty plus the strategy's offset in the problem's
bucket, plus the policy's skill) and a log-normal run time, one for a success and one for a
failure (failures may quit at other times than successes take). A run that would pass the agent's
time limit is cut there: it fails, times out and is loss-masked (`mask_sample`), as NeMo-Gym does.

A **policy** is a softmax over the strategies, per length bucket (or one for all), plus a skill:
a logit added to every strategy's success, trained when the world has one (success that improves
at fixed effort).

**Training** (`train`): each step draws `groups` distinct problems and `n` rollouts of each from
the current policy, shapes the rewards as NeMo-RL's time-efficiency hook does (`shape`: reward −
lambda_time × minutes, `apply_to=correct` charging only resolved rows, masked rows exempt),
computes GRPO advantages as NeMo-RL does (`grpo_advantages`: leave-one-out baseline, normalised by
std + 1e-6 with the `trivial` guard, masked rows voting, then the clip), and moves the policy by
the REINFORCE gradient, the mean over trainable rows of A × ∇log P(strategy, outcome), with Adam.
Every config is trained on common random numbers (the same uniforms per seed and step), so the
difference between two configs is theirs, not luck's.

**The truth** (`truth`): after T steps, the expected resolve rate overall and on long problems and
the mean minutes of a success, computed exactly from the final policy, per seed; against shaping
off the long-problem resolve ratio and the change of solve minutes, with their noise over seeds.

**The log** (`generate_log`): the first N steps of a shaping-off training run from the same start,
in the canonical rollout schema, with `instance_id` naming the problem (problems recur across
steps) — the log a user would hold before launching a shaped run from the same checkpoint. Or,
`fixed=True`, N steps all drawn from the starting policy (no training between them), as a log
collected from one fixed checkpoint is: the same draws, so its step 0 is the run's step 0.
`LOG_KINDS` names the kinds the checks use (`world_log(world, kind, seed)`): `run12` and `run48`,
the first 12 and 48 steps of the run, and `fixed`, 12 drift-free steps (as many rows as `run12`,
so the two differ only by the drift). The truth and training are the same for every kind.

Nothing here imports the tool's forecast or effort model; the tool is only called by the tests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cache

import numpy as np
import polars as pl

LIMIT_S = 1800.0
"""The agent's time limit (seconds): a run that reaches it times out, fails and is masked."""
BUCKETS = ("short", "medium", "long")
STRATEGIES = ("quick", "normal", "thorough")
EPS = 1e-6
"""NeMo-RL's epsilon in the std normalisation."""


@dataclass(frozen=True)
class Shaping:
    """One config as the simulator applies it (NeMo-RL semantics), and as the tool builds it."""

    enabled: bool = True
    lambda_time: float = 1 / 60
    apply_to: str = "all"
    clip: float | None = 3.0

    @property
    def label(self) -> str:
        if not self.enabled:
            return "off"
        return f"1/{round(1 / self.lambda_time)} {self.apply_to}"

    def tool_config(self):
        """The tool's ReplayConfig of this config (imported here so the simulator runs alone)."""
        from replay_cli import build_config

        if not self.enabled:
            return build_config({"shaping": {"enabled": False}})
        advantage = {} if self.clip is None else {"clip_low": -self.clip, "clip_high": self.clip}
        shaping = {"lambda_time": self.lambda_time, "apply_to": self.apply_to}
        return build_config({"shaping": shaping, "advantage": advantage})


OFF = Shaping(enabled=False)
LAMBDAS = (1 / 240, 1 / 120, 1 / 60, 1 / 30, 1 / 15)


def standard_configs() -> list[Shaping]:
    """Shaping off, then lambda_time in {1/240 .. 1/15} × apply_to {all, correct}, clip [-3, 3]."""
    return [
        OFF,
        *(Shaping(lambda_time=lam, apply_to=a) for a in ("all", "correct") for lam in LAMBDAS),
    ]


@dataclass(frozen=True)
class World:
    """A world's definition; its problems are drawn once from `seed` (`problems(world)`)."""

    name: str
    about: str
    group_size: int
    bucket_minutes: tuple[float, float, float]
    """Median minutes of a `normal` success per bucket (each problem scales it by a log-normal)."""
    success_offsets: tuple[tuple[float, float, float], ...]
    """Per bucket, per strategy: logit added to the problem's difficulty."""
    difficulty: tuple[float, float, float]
    """Mean success logit of a problem per bucket (sd `difficulty_sd`)."""
    time_factors: tuple[float, float, float] = (0.45, 1.0, 1.8)
    """Per strategy: a success's median minutes as a multiple of the problem's."""
    fail_time_factors: tuple[float, float, float] = (0.45, 1.0, 1.8)
    """Per strategy: a failure's median minutes as a multiple of the problem's."""
    init_logits: tuple[float, float, float] = (0.0, 0.5, 0.0)
    difficulty_sd: float = 1.2
    sigma: float = 0.35
    """Log-normal sd of a run time around its median."""
    skill: bool = False
    """The policy's skill (a success logit for every strategy) is trained too."""
    per_bucket: bool = True
    """One softmax per length bucket (else one for all problems)."""
    problems_per_bucket: int = 60
    seed: int = 0
    lr: float = 0.05

    @property
    def policy_rows(self) -> int:
        return len(BUCKETS) if self.per_bucket else 1


@dataclass(frozen=True)
class Problems:
    """A world's problems: bucket, per-strategy success logit, log-medians of run time (seconds)
    for a success and a failure, and per strategy the chance that a success finishes in time and
    its mean minutes when it does (exact, truncated log-normal)."""

    bucket: np.ndarray  # (P,)
    logit: np.ndarray  # (P, K)
    mu_pass: np.ndarray  # (P, K) log seconds
    mu_fail: np.ndarray  # (P, K)
    in_time: np.ndarray  # (P, K) P(success run time < limit)
    pass_minutes: np.ndarray  # (P, K) E[minutes of a success | in time]


def _phi(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


@cache
def problems(world: World) -> Problems:
    rng = np.random.default_rng([world.seed, 7])
    per = world.problems_per_bucket
    bucket = np.repeat(np.arange(3), per)
    base_min = np.array(world.bucket_minutes)[bucket] * np.exp(0.3 * rng.standard_normal(3 * per))
    diff = np.array(world.difficulty)[bucket] + world.difficulty_sd * rng.standard_normal(3 * per)
    logit = diff[:, None] + np.array(world.success_offsets)[bucket]
    seconds = 60.0 * base_min[:, None]
    mu_pass = np.log(seconds * np.array(world.time_factors))
    mu_fail = np.log(seconds * np.array(world.fail_time_factors))
    s = world.sigma
    z = (math.log(LIMIT_S) - mu_pass) / s
    in_time = _phi(z)
    # E[X | X < L] of a log-normal: exp(mu + s²/2) Φ(z − s) / Φ(z).
    mean_s = np.exp(mu_pass + s * s / 2) * _phi(z - s) / np.maximum(in_time, 1e-300)
    return Problems(bucket, logit, mu_pass, mu_fail, in_time, mean_s / 60.0)


@dataclass
class Policy:
    logits: np.ndarray  # (rows, K)
    skill: float = 0.0

    @classmethod
    def start(cls, world: World) -> Policy:
        return cls(np.tile(np.array(world.init_logits, float), (world.policy_rows, 1)))

    def probs(self) -> np.ndarray:
        e = np.exp(self.logits - self.logits.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)


@dataclass
class Adam:
    """Adam ascending the objective (b1 0.9, b2 0.999, eps 1e-8) over (logits, skill)."""

    lr: float
    m: np.ndarray | None = None
    v: np.ndarray | None = None
    t: int = 0

    def step(self, params: np.ndarray, grad: np.ndarray) -> np.ndarray:
        if self.m is None:
            self.m, self.v = np.zeros_like(grad), np.zeros_like(grad)
        self.t += 1
        self.m = 0.9 * self.m + 0.1 * grad
        self.v = 0.999 * self.v + 0.001 * grad * grad
        m_hat = self.m / (1 - 0.9**self.t)
        v_hat = self.v / (1 - 0.999**self.t)
        return params + self.lr * m_hat / (np.sqrt(v_hat) + 1e-8)


@dataclass(frozen=True)
class Draws:
    """The random numbers of one step, shared by every config (common random numbers)."""

    problem: np.ndarray  # (G,)
    u_strategy: np.ndarray  # (G, n)
    u_success: np.ndarray  # (G, n)
    z_time: np.ndarray  # (G, n)
    u_calls: np.ndarray  # (G, n)

    @classmethod
    def of(cls, world: World, seed: int, step: int, groups: int) -> Draws:
        rng = np.random.default_rng([world.seed, seed, step, 45])
        shape = (groups, world.group_size)
        return cls(
            problem=rng.permutation(3 * world.problems_per_bucket)[:groups],
            u_strategy=rng.random(shape),
            u_success=rng.random(shape),
            z_time=rng.standard_normal(shape),
            u_calls=rng.random(shape),
        )


@dataclass(frozen=True)
class Batch:
    """One step's rollouts, (G, n) arrays."""

    problem: np.ndarray  # (G,)
    row: np.ndarray  # (G,) policy row of each group
    strategy: np.ndarray
    success_p: np.ndarray  # the latent success probability of each rollout's strategy
    latent: np.ndarray  # bool: the policy's success draw
    resolved: np.ndarray
    run_time: np.ndarray  # seconds
    timed_out: np.ndarray
    calls: np.ndarray


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def draw(world: World, policy: Policy, d: Draws) -> Batch:
    """Rollouts of the drawn problems from the current policy, on the step's uniforms."""
    pr = problems(world)
    prob = d.problem
    row = pr.bucket[prob] if world.per_bucket else np.zeros_like(prob)
    cum = np.cumsum(policy.probs()[row], axis=1)  # (G, K)
    strategy = (d.u_strategy[:, :, None] > cum[:, None, :-1]).sum(axis=2)
    g = prob[:, None]
    p = sigmoid(pr.logit[g, strategy] + policy.skill)
    latent = d.u_success < p
    mu = np.where(latent, pr.mu_pass[g, strategy], pr.mu_fail[g, strategy])
    seconds = np.exp(mu + world.sigma * d.z_time)
    timed_out = seconds >= LIMIT_S
    seconds = np.minimum(seconds, LIMIT_S)
    resolved = latent & ~timed_out
    calls = np.floor(seconds / 20.0 * (0.5 + d.u_calls)).astype(np.int64) + 1
    return Batch(prob, row, strategy, p, latent, resolved, seconds, timed_out, calls)


def shape(batch: Batch, cfg: Shaping) -> np.ndarray:
    """NeMo-RL's time-efficiency shaping (spec §3.2) of a binary reward: masked rows exempt,
    `correct` charging only resolved rows (reward 1.0 is truthy)."""
    reward = batch.resolved.astype(np.float64)
    if not cfg.enabled:
        return reward
    charged = ~batch.timed_out  # the timed-out rows are the masked ones
    if cfg.apply_to == "correct":
        charged &= batch.resolved
    return reward - np.where(charged, cfg.lambda_time * batch.run_time / 60.0, 0.0)


def grpo_advantages(rewards: np.ndarray, clip: float | None) -> np.ndarray:
    """NeMo-RL's GRPO advantages per group (spec §4.1, float64): leave-one-out baseline and std
    over every peer (masked rows vote), normalised by std + 1e-6 where the std is positive and the
    peers are not all equal (the `trivial` guard), else r − b; then the clip."""
    _, n = rewards.shape
    peer = ~np.eye(n, dtype=bool)  # peer[i, j]: j is a peer of i
    peers = np.where(peer[None], rewards[:, None, :], 0.0)  # (G, n, n)
    m = n - 1
    b = peers.sum(axis=2) / m
    q = (peers * peers).sum(axis=2) / m
    with np.errstate(invalid="ignore", divide="ignore"):
        var = (q - b * b) * m / (m - 1) if m > 1 else np.zeros_like(b)
    std = np.sqrt(np.where(np.isfinite(var) & (var > 0), var, 0.0))
    hi = np.where(peer[None], rewards[:, None, :], -np.inf).max(axis=2)
    lo = np.where(peer[None], rewards[:, None, :], np.inf).min(axis=2)
    guard = (std > 0) & (hi != lo)
    diff = rewards - b
    adv = np.where(guard, diff / (std + EPS), diff)
    return adv if clip is None else np.clip(adv, -clip, clip)


def gradient(world: World, policy: Policy, batch: Batch, adv: np.ndarray) -> np.ndarray:
    """The REINFORCE gradient, mean over trainable (unmasked) rows of A × ∇log P(strategy, latent
    outcome), flattened as (logits, skill)."""
    trained = ~batch.timed_out
    a = np.where(trained, adv, 0.0)
    pi = policy.probs()[batch.row]  # (G, K)
    k = pi.shape[1]
    onehot = batch.strategy[:, :, None] == np.arange(k)
    per_row = a[:, :, None] * (onehot - pi[:, None, :])  # (G, n, K)
    g_logits = np.zeros_like(policy.logits)
    np.add.at(g_logits, batch.row, per_row.sum(axis=1))
    g_skill = (a * (batch.latent - batch.success_p)).sum() if world.skill else 0.0
    count = max(int(trained.sum()), 1)
    return np.append(g_logits.ravel(), g_skill) / count


def train_step(world: World, policy: Policy, opt: Adam, batch: Batch, cfg: Shaping) -> Policy:
    adv = grpo_advantages(shape(batch, cfg), cfg.clip if cfg.enabled else None)
    params = np.append(policy.logits.ravel(), policy.skill)
    new = opt.step(params, gradient(world, policy, batch, adv))
    return Policy(new[:-1].reshape(policy.logits.shape), float(new[-1]) if world.skill else 0.0)


@dataclass(frozen=True)
class Outcome:
    resolve: float
    resolve_long: float
    solve_minutes: float
    solve_minutes_long: float


def outcome(world: World, policy: Policy) -> Outcome:
    """Expected resolve rate (overall, long problems) and mean minutes of a success, exactly."""
    pr = problems(world)
    row = pr.bucket if world.per_bucket else np.zeros_like(pr.bucket)
    pi = policy.probs()[row]
    solve = pi * sigmoid(pr.logit + policy.skill) * pr.in_time  # (P, K)
    long = pr.bucket == 2
    minutes = solve * pr.pass_minutes
    return Outcome(
        resolve=float(solve.sum(axis=1).mean()),
        resolve_long=float(solve[long].sum(axis=1).mean()),
        solve_minutes=float(minutes.sum() / solve.sum()),
        solve_minutes_long=float(minutes[long].sum() / solve[long].sum()),
    )


def train(world: World, cfg: Shaping, steps: int, groups: int, seed: int) -> Policy:
    policy, opt = Policy.start(world), Adam(world.lr)
    for step in range(steps):
        batch = draw(world, policy, Draws.of(world, seed, step, groups))
        policy = train_step(world, policy, opt, batch, cfg)
    return policy


def generate_log(
    world: World, steps: int, groups: int, seed: int, fixed: bool = False, cfg: Shaping = OFF
) -> pl.DataFrame:
    """The first `steps` steps of a training run under `cfg` (default shaping off: the log a
    user would hold) from the world's start (canonical columns plus `agent_timed_out` and
    `instance_id`; a shaped `cfg` makes a pilot run's log). `seed` picks the run; logs of
    different seeds are independent (their draws are offset from the truth's). `fixed`: every
    step is drawn from the starting policy (a fixed checkpoint's log, no drift), on the same
    random numbers as the run's."""
    policy, opt = Policy.start(world), Adam(world.lr)
    frames = []
    n = world.group_size
    for step in range(steps):
        batch = draw(world, policy, Draws.of(world, 1_000_003 + seed, step, groups))
        frames.append(
            pl.DataFrame(
                {
                    "step": np.full(groups * n, step, np.int64),
                    "group_id": np.repeat(step * groups + np.arange(groups), n),
                    "rollout_index": np.tile(np.arange(n), groups),
                    "reward": batch.resolved.ravel().astype(np.float64),
                    "resolved": batch.resolved.ravel(),
                    "openhands_run_time": batch.run_time.ravel(),
                    "calls": batch.calls.ravel(),
                    "mask_sample": batch.timed_out.ravel(),
                    "agent_timed_out": batch.timed_out.ravel(),
                    "split": ["train"] * (groups * n),
                    "instance_id": [f"{world.name}-{p:04d}" for p in np.repeat(batch.problem, n)],
                }
            )
        )
        if not fixed:
            policy = train_step(world, policy, opt, batch, cfg)
    return pl.concat(frames)


@dataclass(frozen=True)
class LogKind:
    """A kind of log the checks read: how many steps, and whether training moves the policy
    between them (a run's first steps) or not (a fixed checkpoint's)."""

    steps: int
    fixed: bool = False


LOG_KINDS = {
    "run12": LogKind(12),
    "run48": LogKind(48),
    "fixed": LogKind(12, fixed=True),
}


def world_log(world: World, kind: str, seed: int, groups: int = 48) -> pl.DataFrame:
    """The log of kind `kind` (a key of LOG_KINDS) of the world's shaping-off run `seed`."""
    k = LOG_KINDS[kind]
    return generate_log(world, k.steps, groups, seed, fixed=k.fixed)


@dataclass
class Truth:
    """Simulated training of every config over `seeds` seeds: per config and seed the outcome,
    and against shaping off (same seed, common random numbers) the ratios and differences."""

    configs: list[Shaping]
    outcomes: dict[str, list[Outcome]] = field(default_factory=dict)

    def per_seed(self, label: str, what: str) -> np.ndarray:
        """`long_ratio`, `ratio` (resolve vs off), or `solve_delta` (minutes vs off) per seed."""
        mine, off = self.outcomes[label], self.outcomes[OFF.label]
        if what == "long_ratio":
            return np.array(
                [a.resolve_long / b.resolve_long for a, b in zip(mine, off, strict=True)]
            )
        if what == "ratio":
            return np.array([a.resolve / b.resolve for a, b in zip(mine, off, strict=True)])
        if what == "solve_delta":
            return np.array(
                [a.solve_minutes - b.solve_minutes for a, b in zip(mine, off, strict=True)]
            )
        raise ValueError(what)

    def mean(self, label: str, what: str) -> float:
        return float(self.per_seed(label, what).mean())

    def se(self, label: str, what: str) -> float:
        x = self.per_seed(label, what)
        return float(x.std(ddof=1) / math.sqrt(len(x))) if len(x) > 1 else 0.0

    def clears(self, label: str, z: float = 0.0, keep: float = 0.95) -> bool:
        """The config keeps ≥ `keep` of shaping off's long resolve rate and cuts solve minutes;
        z > 0 asks for it beyond z standard errors, z < 0 allows it within them."""
        ratio = self.mean(label, "long_ratio") - z * self.se(label, "long_ratio")
        delta = self.mean(label, "solve_delta") + z * self.se(label, "solve_delta")
        return ratio >= keep and delta < 0

    def separated(self, a: str, b: str, z: float = 2.0, what: str = "long_ratio") -> int:
        """+1 / −1 where training orders a's `what` (its long ratio) above / below b's beyond z
        standard errors of their paired per-seed difference, else 0."""
        d = self.per_seed(a, what) - self.per_seed(b, what)
        se = d.std(ddof=1) / math.sqrt(len(d))
        return int(np.sign(d.mean())) if abs(d.mean()) > z * se else 0


def truth(
    world: World, configs: list[Shaping], steps: int, groups: int = 48, seeds: int = 6
) -> Truth:
    out = Truth(configs)
    for cfg in configs:
        out.outcomes[cfg.label] = [
            outcome(world, train(world, cfg, steps, groups, s)) for s in range(seeds)
        ]
    return out


WORLDS = {
    w.name: w
    for w in (
        World(
            name="effort_pays",
            about="thorough work solves more, most on long problems; its failures time out",
            group_size=8,
            bucket_minutes=(4.0, 8.0, 13.0),
            success_offsets=((-0.3, 0.0, 0.2), (-1.0, 0.0, 0.5), (-2.0, 0.0, 1.0)),
            difficulty=(0.6, -0.2, -0.8),
            fail_time_factors=(0.45, 1.1, 1.7),
            seed=1,
        ),
        World(
            name="effort_buys_nothing",
            about="success ignores the strategy; failures quit sooner than successes take",
            group_size=8,
            bucket_minutes=(4.0, 7.0, 9.0),
            success_offsets=((0.0, 0.0, 0.0),) * 3,
            difficulty=(0.6, -0.2, -0.8),
            fail_time_factors=(0.3, 0.55, 0.9),
            seed=2,
        ),
        World(
            name="skill",
            about="training raises success at any effort (skill); effort pays a little",
            group_size=16,
            bucket_minutes=(4.0, 8.0, 13.0),
            success_offsets=((-0.2, 0.0, 0.1), (-0.6, 0.0, 0.3), (-1.0, 0.0, 0.5)),
            difficulty=(0.3, -0.5, -1.2),
            fail_time_factors=(0.45, 1.1, 2.0),
            skill=True,
            seed=3,
        ),
        World(
            name="timeouts_one_policy",
            about="groups of 4, one softmax for all lengths; effort pays on long problems only, "
            "failures of long work mostly time out",
            group_size=4,
            bucket_minutes=(3.0, 7.0, 15.0),
            success_offsets=((0.0, 0.0, 0.0), (-0.5, 0.0, 0.3), (-2.5, 0.0, 0.8)),
            difficulty=(0.8, 0.0, -0.6),
            fail_time_factors=(0.6, 1.6, 2.5),
            per_bucket=False,
            seed=4,
        ),
        World(
            # Added with issue 53's log kinds, before anything was tuned on it. What it tests:
            # effort whose effect changes sign with the problem's length. Thorough work fails
            # more on short problems (overthinking, over-editing) and solves more on long ones;
            # the start leans thorough. A shaping-off run drifts the opposite way in each bucket
            # (short problems to quick work, long ones to thorough), so pooled over buckets the
            # log's drift mostly cancels: one causal share, or one drift, for all levels and
            # lengths misreads it. Shaping helps short problems while it costs long ones, so the
            # overall resolve rate can rise where the long-problem bar falls. In training, small
            # λ keeps long resolves (the per-bucket policy keeps long work thorough) and
            # λ = 1/30 `all` loses 40% of them.
            name="overthinking",
            about="thorough work hurts on short problems and pays on long ones; the start leans "
            "thorough, so a run drifts opposite ways by length",
            group_size=8,
            bucket_minutes=(3.0, 7.0, 14.0),
            success_offsets=((0.8, 0.0, -1.0), (0.0, 0.0, 0.0), (-1.5, 0.0, 0.9)),
            difficulty=(0.4, -0.2, -0.9),
            init_logits=(0.0, 0.3, 0.6),
            seed=5,
        ),
    )
}
