"""replay_cli: offline replay and ablation of reward shaping for GRPO training of SWE agents.

The public names load their modules on first use (PEP 562), so importing the package, or `replay-cli
--help`, does not load polars and numpy."""

from __future__ import annotations

import importlib
from typing import Any

_MODULES = {
    "api": ("load", "render_report", "replay", "replay_to_report"),
    "config": (
        "AdvantageParams",
        "EffortSettings",
        "ForecastSettings",
        "Pilot",
        "ReplayConfig",
        "ShapingParams",
        "build_config",
    ),
    "result": ("ReplayResult",),
    "engine": ("run_replay",),
    "errors": ("ConfigError", "ReplayError", "SchemaError"),
    "advice.findings": ("findings",),
    "advice.frontier": ("frontier", "highlights"),
    "advice.recommendation": ("recommend",),
    "advice.rule": ("Rule",),
    "advice.verdict": ("Verdict", "judge"),
    "report.model": ("Report",),
    "report.options": ("ReportOptions",),
    "rollouts.synth": ("synth_rollouts",),
    "rollouts.validation": ("load_rollouts", "rollouts_from_frame"),
}
"""Each public name by the module that defines it, imported on first use."""
_HOME = {name: module for module, names in _MODULES.items() for name in names}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'replay_cli' has no attribute {name!r}")
    return getattr(importlib.import_module(f"replay_cli.{_HOME[name]}"), name)


__all__ = tuple(sorted(_HOME))
"""Every public name of `_MODULES`, sorted."""
