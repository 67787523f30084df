"""Typed replay parameters: shaping (spec §3.1), advantages (§4) and metric granularity (§5)."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

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


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ShapingParams(_Frozen):
    """`grpo.time_efficiency.*` plus the semantics switch; names match NeMo-RL."""

    enabled: bool = Field(True, description="Off = replay the raw rewards.")
    lambda_time: float = Field(1 / 60, allow_inf_nan=False, description="Cost per agent minute.")
    apply_to: Literal["all", "correct"] = Field("all", description="Which rows are charged.")
    floor: float | None = Field(
        None, allow_inf_nan=False, description="Lower clamp on the shaped reward."
    )
    lambda_call_bonus: float = Field(
        0.0, ge=0, allow_inf_nan=False, description="Saturating tool-call bonus."
    )
    call_bonus_ref: float | None = Field(
        None, gt=0, allow_inf_nan=False, description="Calls that saturate the bonus."
    )
    mask_flagged: bool = Field(True, description="env.should_mask_flagged_samples.")
    semantics: Literal["nemo-rl", "internal"] = Field(
        "nemo-rl", description="PR #4029 or the earlier internal code."
    )
    internal_items: tuple[int, ...] | None = Field(
        None,
        description="Items of spec §3.3 that behave the internal way; default: all under "
        "'internal', none under 'nemo-rl'. Used to attribute differences one item at a time.",
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
    ] = Field("grpo", description="grpo = NeMo-RL; the others replay a peer trainer (peers.py).")
    scale_rewards: Literal["group", "batch", "none"] = Field(
        "group",
        description="trl-grpo only: divide by the group std, the step's std, or not at all.",
    )
    baseline: Literal["loo", "mean"] = Field("loo", description="Leave-one-out or group mean.")
    normalize: bool = Field(True, description="Divide by the (LOO) std where the guard passes.")
    std_guard: Literal["legacy", "trivial"] = Field(
        "trivial",
        description="legacy: std > 0 (before PR #4158); trivial: also peers not all equal.",
    )
    exclude_masked: bool = Field(False, description="Masked rows do not vote (NeMo-RL PR #4160).")
    filter: Literal["none", "nemo-rl", "verl", "openrlhf"] = Field(
        "none", description="Dynamic-sampling filter to replay (filters.py)."
    )
    filter_on: Literal["reward", "resolved"] = Field(
        "reward", description="What the filter looks at."
    )
    clip_low: float | None = Field(
        None, allow_inf_nan=False, description="grpo.advantage_clip_low."
    )
    clip_high: float | None = Field(
        None, allow_inf_nan=False, description="grpo.advantage_clip_high."
    )
    precision: Literal["float32", "float64"] = Field(
        "float32", description="float32 emulates torch."
    )

    @model_validator(mode="after")
    def _check(self) -> AdvantageParams:
        if (
            self.clip_low is not None
            and self.clip_high is not None
            and self.clip_low > self.clip_high
        ):
            raise ValueError(f"clip_low ({self.clip_low}) is above clip_high ({self.clip_high})")
        return self


class ReplayConfig(_Frozen):
    """One point of a replay: shaping, advantage estimator and metric granularity."""

    shaping: ShapingParams = ShapingParams()
    advantage: AdvantageParams = AdvantageParams()
    metrics_by: Literal["group", "batch"] = Field(
        "group", description="async (group) or sync (batch) trainer."
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
            parts = ["no shaping"]
        else:
            parts = [f"λ={s.lambda_time:.4g}", s.apply_to]
            if s.floor is not None:
                parts.append(f"floor={s.floor:g}")
            if s.bonus_on:
                parts.append(f"bonus={s.lambda_call_bonus:g}/{s.effective_call_bonus_ref:g}")
            if s.semantics == "internal" or s.internal_items is not None:
                parts.append(f"{s.semantics}[{','.join(map(str, sorted(s.items)))}]")
        if a.estimator != "grpo":
            parts.append(a.estimator + (f"/{a.scale_rewards}" if a.estimator == "trl-grpo" else ""))
        if a.filter != "none":
            parts.append(f"filter={a.filter}:{a.filter_on}")
        if a.clip_low is not None or a.clip_high is not None:
            lo = "-inf" if a.clip_low is None else f"{a.clip_low:g}"
            hi = "inf" if a.clip_high is None else f"{a.clip_high:g}"
            parts.append(f"clip[{lo},{hi}]")
        return " ".join(parts)


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
