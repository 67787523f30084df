"""The trainer's Hydra overrides (`++grpo.time_efficiency.lambda_time=0.0166`) as replay parameters."""

from __future__ import annotations

import difflib
from typing import Any

import yaml

from replay_cli.errors import ConfigError

# trainer key -> (section, replay parameter); values pass through a converter where needed.
TRAINER_KEYS: dict[str, tuple[str, str]] = {
    "grpo.time_efficiency.enabled": ("shaping", "enabled"),
    "grpo.time_efficiency.lambda_time": ("shaping", "lambda_time"),
    "grpo.time_efficiency.apply_to": ("shaping", "apply_to"),
    "grpo.time_efficiency.floor": ("shaping", "floor"),
    "grpo.time_efficiency.lambda_call_bonus": ("shaping", "lambda_call_bonus"),
    "grpo.time_efficiency.call_bonus_ref": ("shaping", "call_bonus_ref"),
    "env.should_mask_flagged_samples": ("shaping", "mask_flagged"),
    "grpo.adv_estimator.name": ("advantage", "estimator"),
    "grpo.adv_estimator.normalize_rewards": ("advantage", "normalize"),
    "grpo.normalize_rewards": ("advantage", "normalize"),
    "grpo.adv_estimator.use_leave_one_out_baseline": ("advantage", "baseline"),
    "grpo.use_leave_one_out_baseline": ("advantage", "baseline"),
    "grpo.advantage_clip_low": ("advantage", "clip_low"),
    "grpo.advantage_clip_high": ("advantage", "clip_high"),
}
# Keys that win over their fallbacks when both are given (NeMo-RL reads adv_estimator.* first).
_PREFERRED = {
    "grpo.normalize_rewards": "grpo.adv_estimator.normalize_rewards",
    "grpo.use_leave_one_out_baseline": "grpo.adv_estimator.use_leave_one_out_baseline",
}


def is_override(arg: str) -> bool:
    """A Hydra override looks like `++a.b=v`, `+a.b=v` or `a.b=v` (a dotted key)."""
    key, sep, _ = arg.lstrip("+").partition("=")
    return sep == "=" and (arg.startswith("+") or ("." in key and "/" not in key))


def _convert(key: str, value: Any) -> Any:
    if key.endswith("use_leave_one_out_baseline"):
        if not isinstance(value, bool):
            raise ConfigError(f"Override {key} expects true or false, got {value!r}.")
        return "loo" if value else "mean"
    if key == "grpo.adv_estimator.name" and value == "grpo":
        return "grpo"
    return value


def trainer_values(pairs: list[tuple[str, Any]]) -> dict[str, dict[str, Any]]:
    """Known trainer keys -> {"shaping": {...}, "advantage": {...}}; adv_estimator.* beats its fallback."""
    values: dict[str, dict[str, Any]] = {"shaping": {}, "advantage": {}}
    seen: dict[str, str] = {}
    for key, value in pairs:
        section, name = TRAINER_KEYS[key]
        preferred = _PREFERRED.get(key)
        if preferred is not None and seen.get(f"{section}.{name}") == preferred:
            continue
        values[section][name] = _convert(key, value)
        seen[f"{section}.{name}"] = key
    return values


def parse_overrides(
    args: list[str], *, ignore_unknown: bool = False
) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Turn override strings into {"shaping": {...}, "advantage": {...}}; returns (values, ignored keys)."""
    pairs: list[tuple[str, Any]] = []
    ignored: list[str] = []
    for arg in args:
        if arg.startswith("~"):
            raise ConfigError(f"Deletion overrides are not supported: {arg}")
        key, sep, raw = arg.lstrip("+").partition("=")
        if not sep:
            raise ConfigError(
                f"Override {arg!r} has no '='.\n\nExample: ++grpo.time_efficiency.lambda_time=0.0166"
            )
        if key not in TRAINER_KEYS:
            if ignore_unknown:
                ignored.append(key)
                continue
            close = difflib.get_close_matches(key, TRAINER_KEYS, n=1, cutoff=0.6)
            hint = (
                f"Did you mean {close[0]}?"
                if close
                else "Pass --ignore-unknown-overrides to skip trainer keys that do not affect rewards."
            )
            raise ConfigError(f"Unknown override key {key!r}.\n\n{hint}")
        try:
            value = yaml.safe_load(raw) if raw != "" else None
        except yaml.YAMLError:
            value = raw
        pairs.append((key, value))
    return trainer_values(pairs), ignored
