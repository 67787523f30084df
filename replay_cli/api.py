"""Library entry points used by the CLI and by notebooks: load, replay, write, synthesise, demo."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from replay_cli.config import ReplayConfig, build_config
from replay_cli.engine import ReplayResult, run_replay
from replay_cli.errors import ConfigError, OutputExistsError
from replay_cli.io.parquet import parse_mapping, write_parquet_atomic
from replay_cli.plots import render_all
from replay_cli.report import check_out_dir, write_report
from replay_cli.synth import synth_rollouts
from replay_cli.validation import Rollouts, load_rollouts


def parse_items(text: str) -> tuple[int, ...]:
    """`1,3` -> (1, 3): the internal-semantics items to switch on."""
    try:
        return tuple(sorted({int(t) for t in text.replace(" ", "").split(",") if t}))
    except ValueError:
        raise ConfigError(
            f"--internal-items expects item numbers like 1,3, got {text!r}."
        ) from None


def load(
    sources: Sequence[str | Path],
    *,
    mapping: Sequence[str] | dict[str, str] | None = None,
    group_size: int | None = None,
    strict: bool = False,
) -> Rollouts:
    """Load and validate rollout files (mapping: `{"src": "dst"}` or `["src=dst"]`)."""
    pairs = mapping if isinstance(mapping, dict) else parse_mapping(mapping or [])
    return load_rollouts(sources, mapping=pairs, group_size=group_size, strict=strict)


def replay(
    rollouts: Rollouts, configs: Sequence[ReplayConfig] | ReplayConfig | None = None
) -> ReplayResult:
    """Replay one or more configs (default: NeMo-RL defaults with shaping on)."""
    if configs is None:
        configs = [ReplayConfig()]
    elif isinstance(configs, ReplayConfig):
        configs = [configs]
    return run_replay(rollouts, configs)


def replay_to_report(
    sources: Sequence[str | Path],
    configs: Sequence[ReplayConfig],
    out: Path,
    *,
    force: bool = False,
    charts: bool = False,
    mapping: Sequence[str] | None = None,
    group_size: int | None = None,
    strict: bool = False,
    argv: list[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ReplayResult:
    """Load, replay and write a report directory atomically; refuses an existing `out` unless force."""
    check_out_dir(Path(out), force)
    rollouts = load(sources, mapping=mapping, group_size=group_size, strict=strict)
    result = run_replay(rollouts, configs, progress=progress)
    write_report(
        Path(out), result, rollouts, force=force, charts=render_all if charts else None, argv=argv
    )
    return result


def write_synth(out: Path, *, force: bool = False, **kwargs: int) -> int:
    """Write a synthetic rollout table to Parquet atomically; returns the row count."""
    out = Path(out)
    if out.exists() and not force:
        raise OutputExistsError(f"{out} already exists.\n\nPass --force to replace it.")
    frame = synth_rollouts(**kwargs)
    write_parquet_atomic(frame, out)
    return frame.height


def demo_configs() -> list[ReplayConfig]:
    """A small sweep that shows the main trade-offs: lambda x apply_to, floor, call bonus, clip, internal."""
    configs = [build_config({"shaping": {"enabled": False}})]
    for lam in (1 / 120, 1 / 60, 1 / 30, 1 / 15):
        for apply_to in ("all", "correct"):
            configs.append(build_config({"shaping": {"lambda_time": lam, "apply_to": apply_to}}))
    configs.append(
        build_config(
            {
                "shaping": {
                    "apply_to": "correct",
                    "floor": 0.05,
                    "lambda_call_bonus": 0.1,
                    "call_bonus_ref": 56.0,
                }
            }
        )
    )
    configs.append(build_config({"shaping": {}, "advantage": {"clip_low": -3.0, "clip_high": 3.0}}))
    configs.append(build_config({"shaping": {"semantics": "internal"}}))
    return configs


def run_demo(
    out: Path,
    scratch: Path,
    argv: list[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ReplayResult:
    """Synthesise rollouts in `scratch`, replay the demo sweep and write a report with charts to `out`."""
    out = Path(out)
    force = out.is_dir() and (out / "manifest.json").exists()
    check_out_dir(out, force)
    data = scratch / "demo_rollouts.parquet"
    write_synth(data, steps=12, groups_per_step=48, group_size=8, validation_groups=8, seed=7)
    rollouts = load([data])
    result = run_replay(rollouts, demo_configs(), progress=progress)
    write_report(out, result, rollouts, force=force, charts=render_all, argv=argv)
    return result
