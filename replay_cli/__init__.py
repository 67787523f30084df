"""replay_cli: offline replay and ablation of reward shaping for GRPO training of SWE agents."""

from replay_cli.api import load, render_report, replay, replay_to_report
from replay_cli.config import AdvantageParams, ReplayConfig, ShapingParams, build_config
from replay_cli.engine import ReplayResult, run_replay
from replay_cli.errors import ConfigError, ReplayError, SchemaError
from replay_cli.findings import findings, frontier, highlights
from replay_cli.synth import synth_rollouts
from replay_cli.validation import load_rollouts, rollouts_from_frame

__all__ = [
    "AdvantageParams",
    "ConfigError",
    "ReplayConfig",
    "ReplayError",
    "ReplayResult",
    "SchemaError",
    "ShapingParams",
    "build_config",
    "findings",
    "frontier",
    "highlights",
    "load",
    "load_rollouts",
    "render_report",
    "replay",
    "replay_to_report",
    "rollouts_from_frame",
    "run_replay",
    "synth_rollouts",
]
