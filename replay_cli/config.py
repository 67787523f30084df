"""Typed replay parameters: shaping (spec §3.1), advantages (§4) and metric granularity (§5)."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from replay_cli import defaults as D
from replay_cli.defaults import DEFAULT_CHUNK_ROWS, lambda_text  # noqa: F401 (re-exported)
from replay_cli.errors import ConfigError

INTERNAL_ITEMS = (1, 2, 3, 4, 5, 8)
"""The numbered differences of the internal implementation (spec §3.3) that can be switched."""

ITEM_DESCRIPTIONS = {
    1: "masked rows are charged",
    2: "deduction before the reward-zeroing penalties (zeroed rows end at 0.0)",
    3: "correct gate = resolved alone",
    4: "validation rows are charged",
    5: "internal metric names and wall-time group_has_signal",
    8: "call_bonus_ref defaults to 56.0",
}

INTERNAL_CALL_BONUS_REF = 56.0


def param(
    default: Any,
    help: str,
    *,
    trainer: tuple[str, ...] = (),
    explain: bool = True,
    replay: bool = True,
    label: str | None = None,
    off: str | None = None,
    **constraints: Any,
) -> Any:
    """One parameter, declared once: its default, help (also the field's description), trainer
    keys (`++` overrides and run configs; the first wins over the others), whether
    `replay`/`explain` take it, and the label fragment shown when it differs from its default (a
    format string over the parameter's value). `off`: for a switch that is on by default, what
    its `--no-` flag does (the help describes the setting; the flag's help must say what passing
    it changes). parameters.py derives everything else (the CLI panel from the section)."""
    extra = {"trainer": list(trainer), "explain": explain, "replay": replay}
    if label is not None:
        extra["label"] = label
    if off is not None:
        extra["off"] = off
    return Field(default, description=help, json_schema_extra=extra, **constraints)


class _Frozen(BaseModel):
    # built on first use, not at import: `replay-cli --help` never validates (benchmarks/bench_startup.py)
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


TE = "grpo.time_efficiency."


class ShapingParams(_Frozen):
    """`grpo.time_efficiency.*` plus the semantics switch; names match NeMo-RL."""

    enabled: bool = param(
        True,
        "Shaping on (false = replay the raw rewards).",
        off="Shaping off: replay the raw rewards (the default shapes them).",
        trainer=(TE + "enabled",),
        explain=False,
        replay=False,
    )
    lambda_time: float = param(
        1 / 60,
        "Reward cost per agent minute; fractions ok (1/60: an hour costs 1.0).",
        trainer=(TE + "lambda_time",),
        allow_inf_nan=False,
    )
    apply_to: Literal["all", "correct"] = param(
        "all", "Charge every rollout or only correct ones.", trainer=(TE + "apply_to",)
    )
    floor: float | None = param(
        None,
        "Lower clamp on the shaped reward, or none.",
        trainer=(TE + "floor",),
        allow_inf_nan=False,
    )
    lambda_call_bonus: float = param(
        0.0,
        "Saturating tool-call bonus (0 = off).",
        trainer=(TE + "lambda_call_bonus",),
        ge=0,
        allow_inf_nan=False,
    )
    call_bonus_ref: float | None = param(
        None,
        "Calls at which the bonus saturates, or none.",
        trainer=(TE + "call_bonus_ref",),
        gt=0,
        allow_inf_nan=False,
    )
    mask_flagged: bool = param(
        True,
        "env.should_mask_flagged_samples: loss-masked rows are not charged.",
        off="Charge loss-masked rows too, as env.should_mask_flagged_samples=false does (by "
        "default they keep their raw reward).",
        trainer=("env.should_mask_flagged_samples",),
        label="unmasked",
    )
    validation_shaped: bool = param(
        False,
        "Charge validation rows too, as NeMo-RL's single-controller path does (grpo_train_sync: "
        "SyncRolloutActor.rollout_to_tq shapes validate_sync); grpo.validate() does not. Pair "
        "with --metrics-by batch to replay such a run's curves.",
        label="val-shaped",
    )
    semantics: Literal["nemo-rl", "internal"] = param(
        "nemo-rl", "nemo-rl (PR #4029) or internal (the earlier implementation).", explain=False
    )
    internal_items: tuple[int, ...] | None = param(
        None,
        "Internal differences to switch on alone, joined by '+': 1+3 (spec §3.3); default: all "
        "under internal, none under nemo-rl.",
        explain=False,
    )

    @model_validator(mode="after")
    def _check(self) -> ShapingParams:
        if self.internal_items is not None:
            unknown = sorted(set(self.internal_items) - set(INTERNAL_ITEMS))
            if unknown:
                raise ValueError(
                    f"internal_items {unknown} unknown; choose from {list(INTERNAL_ITEMS)}"
                )
        if self.bonus_on and self.effective_call_bonus_ref is None:
            raise ValueError("call_bonus_ref must be > 0 when lambda_call_bonus > 0")
        return self

    @property
    def items(self) -> frozenset[int]:
        """Internal-behaviour items in force."""
        if self.internal_items is not None:
            return frozenset(self.internal_items)
        return frozenset(INTERNAL_ITEMS) if self.semantics == "internal" else frozenset()

    @property
    def bonus_on(self) -> bool:
        return self.lambda_call_bonus > 0

    @property
    def effective_call_bonus_ref(self) -> float | None:
        """The reference call count in force (item 8 supplies 56.0 when unset)."""
        if self.call_bonus_ref is None and self.bonus_on and 8 in self.items:
            return INTERNAL_CALL_BONUS_REF
        return self.call_bonus_ref


class AdvantageParams(_Frozen):
    """`grpo.adv_estimator.*` and clipping, plus emulation knobs (spec §4.1)."""

    estimator: Literal[
        "grpo",
        "verl-grpo",
        "verl-rloo",
        "trl-grpo",
        "openrlhf-group-norm",
        "openrlhf-rloo",
        "reinforce-pp-baseline",
        "dr-grpo",
    ] = param(
        "grpo",
        "grpo (NeMo-RL) or a peer trainer's estimator (peers.py). reinforce-pp-baseline whitens "
        "over response_tokens when the input has that column, else one token per rollout (verl "
        "always weighs tokens).",
        trainer=("grpo.adv_estimator.name",),
    )
    scale_rewards: Literal["group", "batch", "none"] = param(
        "group", "trl-grpo only: divide by the group std, the step's std, or not at all."
    )
    baseline: Literal["loo", "mean"] = param(
        "loo",
        "Leave-one-out or group-mean baseline.",
        trainer=(
            "grpo.adv_estimator.use_leave_one_out_baseline",
            "grpo.use_leave_one_out_baseline",
        ),
        label="baseline={}",
    )
    normalize: bool = param(
        True,
        "Divide by the (leave-one-out) std where the guard passes.",
        off="Do not divide by the std: each advantage stays reward − baseline (by default it is "
        "divided by the (leave-one-out) std where the guard passes).",
        trainer=("grpo.adv_estimator.normalize_rewards", "grpo.normalize_rewards"),
        label="no-normalize",
    )
    std_guard: Literal["legacy", "trivial"] = param(
        "trivial",
        "legacy: std > 0 (before PR #4158); trivial: also peers not all equal.",
        label="guard={}",
    )
    exclude_masked: bool = param(
        False, "Masked rows do not vote in the baseline (NeMo-RL PR #4160).", label="exclude-masked"
    )
    filter: Literal["none", "nemo-rl", "verl", "openrlhf"] = param(
        "none", "Dynamic-sampling filter to replay (filters.py)."
    )
    filter_on: Literal["reward", "resolved"] = param("reward", "What the filter looks at.")
    clip_low: float | None = param(
        None,
        "grpo.advantage_clip_low, or none.",
        trainer=("grpo.advantage_clip_low",),
        allow_inf_nan=False,
    )
    clip_high: float | None = param(
        None,
        "grpo.advantage_clip_high, or none.",
        trainer=("grpo.advantage_clip_high",),
        allow_inf_nan=False,
    )
    precision: Literal["float32", "float64", "torch"] = param(
        "float32",
        "float32 emulates the trainer's torch maths (exact up to a per-row bound); float64 is the "
        "exact maths; torch runs the trainer's own torch operations (needs replay-cli[torch]).",
        label="{}",
    )
    device: Literal["cpu", "cuda"] = param(
        "cpu",
        "Where --precision torch computes: cpu (calculate_advantages_on_gpu: false) or cuda.",
        label="device={}",
    )

    @property
    def clips(self) -> bool:
        """Either advantage clip bound is set: the clipped and unclipped advantages can differ."""
        return self.clip_low is not None or self.clip_high is not None

    @model_validator(mode="after")
    def _check(self) -> AdvantageParams:
        if (
            self.clip_low is not None
            and self.clip_high is not None
            and self.clip_low > self.clip_high
        ):
            raise ValueError(f"clip_low ({self.clip_low}) is above clip_high ({self.clip_high})")
        if self.device != "cpu" and self.precision != "torch":
            raise ValueError(f"device {self.device} applies to precision torch only")
        if self.precision == "torch" and self.estimator != "grpo":
            raise ValueError(
                f"precision torch runs NeMo-RL's own GRPO operations; estimator {self.estimator} "
                "is computed in float32 or float64"
            )
        return self


class ReplayConfig(_Frozen):
    """One point of a replay: shaping, advantage estimator and metric granularity."""

    shaping: ShapingParams = ShapingParams()
    advantage: AdvantageParams = AdvantageParams()
    metrics_by: Literal["group", "batch"] = param(
        "group", "group (async trainer) or batch (sync trainer) metric granularity.", label="by-{}"
    )

    @property
    def config_id(self) -> str:
        """Stable short id: a hash of the parameters, equal across runs and machines."""
        payload = json.dumps(self.model_dump(mode="json"), sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()[:10]

    def flat(self) -> dict[str, Any]:
        """Every parameter as one column-ready value (used for summary and sweep columns)."""
        out: dict[str, Any] = {}
        for k, v in self.shaping.model_dump().items():
            out[k] = ",".join(map(str, v)) if isinstance(v, tuple) else v
        out["internal_items"] = ",".join(str(i) for i in sorted(self.shaping.items))
        out["call_bonus_ref"] = self.shaping.effective_call_bonus_ref
        out.update(self.advantage.model_dump())
        out["metrics_by"] = self.metrics_by
        return out

    @property
    def label(self) -> str:
        """Readable label for charts and tables."""
        s, a = self.shaping, self.advantage
        if not s.enabled:
            parts = ["shaping off"]  # the verdict's word for the baseline, on every surface
        else:
            parts = [f"λ={lambda_text(s.lambda_time)}", s.apply_to]
            if s.floor is not None:
                parts.append(f"floor={s.floor:g}")
            if s.bonus_on:
                parts.append(f"bonus={s.lambda_call_bonus:g}/{s.effective_call_bonus_ref:g}")
            if s.semantics == "internal" or s.internal_items is not None:
                parts.append(f"{s.semantics}[{','.join(map(str, sorted(s.items)))}]")
        parts.extend(_declared_fragments(s))
        if a.estimator != "grpo":
            parts.append(a.estimator + (f"/{a.scale_rewards}" if a.estimator == "trl-grpo" else ""))
        if a.filter != "none":
            parts.append(f"filter={a.filter}:{a.filter_on}")
        if a.clips:
            lo = "-inf" if a.clip_low is None else f"{a.clip_low:g}"
            hi = "inf" if a.clip_high is None else f"{a.clip_high:g}"
            parts.append(f"clip[{lo},{hi}]")
        parts.extend(_declared_fragments(a))
        parts.extend(_declared_fragments(self))
        return " ".join(parts)


class EffortSettings(_Frozen):
    """The effort model and the bootstrap over problems, which the first-step diagnostic and the
    forecast both read (docs/report.md, "The effort model and the first step's direction"): its
    levels, the fixed size of one natural-gradient step, and the paired bootstrap's resamples,
    interval and seed. One object for both, since both read the same model and the CLI's
    `--step-kl`/`--resamples` set it once. Report-wide, not a config parameter."""

    step_kl: float = Field(
        D.STEP_KL,
        gt=0,
        description="the step's budget: the mean KL divergence (nats) of the problems' policies "
        "after one step, the same for every config",
    )
    levels: int = Field(
        4, ge=2, le=12, description="effort levels per length bucket (run-time bins + time limit)"
    )
    resamples: int = Field(
        D.RESAMPLES, ge=0, description="bootstrap resamples over problems (0: no intervals)"
    )
    interval: float = Field(
        0.90,
        gt=0,
        lt=1,
        description="two-sided interval level; its low end is a one-sided bound at "
        "(1 + interval) / 2",
    )
    seed: int = Field(0, description="seed of the bootstrap resamples")


class ForecastSettings(_Frozen):
    """What the forecast alone reads (docs/report.md, "The forecast"): T steps of the effort
    model's step (`EffortSettings`), S seeds, a stratified sample of problems, the checks and
    the fit."""

    steps: int = Field(D.STEPS, ge=1, le=10_000, description="simulated training steps (T)")
    seeds: int = Field(
        D.SEEDS, ge=1, le=62, description="seeds (S): each its own problem sample and draws"
    )
    problems: int = Field(
        D.PROBLEMS,
        ge=1,
        description="problems sampled per length bucket and seed (all where fewer)",
    )
    check_budgets: bool = Field(
        True,
        description="also run at half and twice the step budget, with half the seeds (does the "
        "verdict hold?)",
    )
    seed: int = Field(0, description="seed of the problem samples and the draws")
    fit: bool = Field(
        D.FIT,
        description="fit what each effort level's success owes to the effort (per length "
        "bucket), skill and the step's size to the logged shaping-off trajectory where the log "
        "identifies them (forecast/fit.py; off by default: on 8 logs of every test world and log "
        "kind it picks right on 115 of 120 against 119 without, and its confidence overstates, "
        "docs/testing.md); on or off, the backtest checks the forecast used against the log's "
        "last third",
    )


class Pilot(_Frozen):
    """A run trained with shaping on, read as evidence (`--pilot`): its rollout log (any format
    `api.load` reads) and the config it was trained with. The forecast simulates that config from
    the pilot's own start over its logged steps and backtests it on its last third
    (forecast/pilots.py)."""

    path: str = Field(description="the pilot run's rollout log")
    config: ReplayConfig = Field(description="the config the pilot run was trained with")


def unique_labels(configs: list[ReplayConfig]) -> dict[str, str]:
    """Label per config_id, unique within `configs`: configs whose labels coincide (their
    difference is a parameter the label leaves out, e.g. lambda of a disabled config) get the
    parameters that tell them apart appended, `[name=value ...]`."""
    by_label: dict[str, list[ReplayConfig]] = {}
    for cfg in configs:
        by_label.setdefault(cfg.label, []).append(cfg)
    out = {}
    for label, same in by_label.items():
        if len({c.config_id for c in same}) == 1:
            out.update({c.config_id: label for c in same})
            continue
        flats = [c.flat() for c in same]
        differ = [k for k in flats[0] if len({repr(f[k]) for f in flats}) > 1]
        for cfg, flat in zip(same, flats, strict=True):
            extra = " ".join(f"{_LABEL_KEYS.get(k, k)}={_value_text(k, flat[k])}" for k in differ)
            out[cfg.config_id] = f"{label} [{extra}]"
    return out


_LABEL_KEYS = {"lambda_time": "λ"}
"""Parameters a label names by a symbol (as `λ=1/60` in the label's own start)."""


def _value_text(name: str, value: Any) -> str:
    """A parameter's value in a label, as the user writes it: λ as 1/60, `none` for unset,
    numbers in their shortest form (the exact float is only in the launch overrides)."""
    if value is None or value == "":
        return "none"
    if name == "lambda_time" and isinstance(value, float):
        return lambda_text(value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _extra(field: Any) -> dict[str, Any]:
    extra = field.json_schema_extra
    return extra if isinstance(extra, dict) else {}


def _declared_fragments(model: BaseModel) -> list[str]:
    """Label fragments of the fields that declare one, for values other than the default."""
    return [
        str(fragment).format(value)
        for name, field in type(model).model_fields.items()
        if (fragment := _extra(field).get("label")) is not None
        and (value := getattr(model, name)) != field.default
    ]


def build_config(values: dict[str, Any]) -> ReplayConfig:
    """Build a ReplayConfig from a nested dict, turning pydantic errors into one ConfigError."""
    try:
        return ReplayConfig.model_validate(values)
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            loc = ".".join(str(p) for p in err["loc"] if p not in ("shaping", "advantage"))
            msg = err["msg"].removeprefix("Value error, ")
            got = f" (got {err.get('input')!r})" if loc else ""
            lines.append(f"  {loc or 'config'}: {msg}{got}")
        raise ConfigError("Invalid parameters:\n" + "\n".join(lines)) from None


def config_warnings(configs: list[ReplayConfig]) -> list[str]:
    """Settings the trainer accepts that do not mean what a user of the shaping wants, one
    sentence each (printed with the report and kept in its manifest)."""
    labels = unique_labels(configs)
    out = []
    for cfg in {c.config_id: c for c in configs}.values():
        s = cfg.shaping
        if not s.enabled:
            continue
        name = labels[cfg.config_id]
        if s.lambda_time < 0:
            out.append(
                f"'{name}': lambda_time {lambda_text(s.lambda_time)} is negative: NeMo-RL accepts "
                "it, but it pays for agent time and so rewards longer runs (the opposite of the "
                "time-efficiency shaping)."
            )
        if s.bonus_on and s.apply_to == "all":
            out.append(
                f"'{name}': the call bonus is paid on failures too (apply_to=all); the PR advises "
                "apply_to=correct, since paying it on failures rewards junk calls."
            )
    return out
