"""replay_cli: offline replay and ablation of reward shaping for GRPO training of SWE agents.

The public names load their modules on first use (PEP 562), so importing the package, or `replay-cli
--help`, does not load polars and numpy."""

from __future__ import annotations

import importlib
from typing import Any

_HOME = {
    "load": "api",
    "render_report": "api",
    "replay": "api",
    "replay_to_report": "api",
    "AdvantageParams": "config",
    "ReplayConfig": "config",
    "ShapingParams": "config",
    "build_config": "config",
    "ReplayResult": "result",
    "run_replay": "engine",
    "ConfigError": "errors",
    "ReplayError": "errors",
    "SchemaError": "errors",
    "findings": "advice.findings",
    "frontier": "advice.frontier",
    "highlights": "advice.frontier",
    "recommend": "advice.recommendation",
    "Rule": "advice.rule",
    "judge": "advice.verdict",
    "Report": "report.model",
    "ForecastSettings": "config",
    "Pilot": "config",
    "Verdict": "advice.verdict",
    "EffortSettings": "config",
    "ReportOptions": "report.options",
    "synth_rollouts": "rollouts.synth",
    "load_rollouts": "rollouts.validation",
    "rollouts_from_frame": "rollouts.validation",
}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'replay_cli' has no attribute {name!r}")
    return getattr(importlib.import_module(f"replay_cli.{_HOME[name]}"), name)


__all__ = [
    "AdvantageParams",
    "ConfigError",
    "EffortSettings",
    "ForecastSettings",
    "Pilot",
    "ReplayConfig",
    "ReplayError",
    "ReplayResult",
    "Report",
    "ReportOptions",
    "Rule",
    "SchemaError",
    "ShapingParams",
    "Verdict",
    "build_config",
    "findings",
    "frontier",
    "highlights",
    "judge",
    "load",
    "load_rollouts",
    "recommend",
    "render_report",
    "replay",
    "replay_to_report",
    "rollouts_from_frame",
    "run_replay",
    "synth_rollouts",
]
