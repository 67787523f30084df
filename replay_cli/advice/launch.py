"""What launches a config in NeMo-RL: the trainer's `++` overrides and the same settings as the
block of its config file, for a summary row. The inverse of `parameters.parse_overrides` and
`parameters.read_run_config` (tests/advice/test_launch.py reads them back); it stays in advice/
because what it writes depends on the verdict's notion of shaping off (`rule.shaping_off`), which
launches as `enabled=false` whatever its λ."""

from __future__ import annotations

from typing import Any

import yaml

from replay_cli.parameters import registry

UNUSED = {"call_bonus_ref": lambda row: not row.get("lambda_call_bonus")}
"""Settings a config does not use, by the setting they depend on: a launch line leaves them out
(the bonus's reference with no bonus)."""


def _launch_values(row: dict[str, Any], is_off: bool) -> list[tuple[str, str, Any]]:
    """(parameter, trainer key, value) of every setting that launches a summary row's config:
    `grpo.time_efficiency.*` (only `enabled=false` for shaping off; all of them when shaping is on),
    and every other trainer setting that is not at its default (the clip, the estimator's baseline
    and normalisation, the mask switch), less those it does not use (`UNUSED`). Emulation-only
    settings (std guard, precision) have no trainer key and are left out."""
    te = "grpo.time_efficiency."
    out = []
    for name, param in registry().items():
        if not param.trainer or name == "estimator" or name not in row:
            continue
        if name in UNUSED and UNUSED[name](row):
            continue
        value, key = row[name], param.trainer[0]
        if key.startswith(te):
            if is_off:
                shown = name == "enabled"
                value = False if shown else value
            else:
                shown = name in ("enabled", "lambda_time", "apply_to") or value != param.default
        else:
            shown = value != param.default
        if shown and value is not None:  # the trainer takes the baseline as its leave-one-out flag
            out.append((name, key, (value == "loo") if name == "baseline" else value))
    return out


def launch_overrides(row: dict[str, Any], is_off: bool = False) -> str:
    """The NeMo-RL `++` overrides that launch a summary row's config (`_launch_values`)."""

    def text(value: Any) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        return repr(value) if isinstance(value, float) else str(value)

    return " ".join(f"++{key}={text(value)}" for _, key, value in _launch_values(row, is_off))


def launch_yaml(row: dict[str, Any], is_off: bool = False) -> str:
    """The same settings as the block of the trainer's config file (`grpo: time_efficiency:
    ...`), values as YAML writes them (the exact float of λ)."""
    tree: dict[str, Any] = {}
    for _, key, value in _launch_values(row, is_off):
        *path, leaf = key.split(".")
        node = tree
        for part in path:
            node = node.setdefault(part, {})
        node[leaf] = value
    return yaml.safe_dump(tree, sort_keys=False)
