"""A report as offline W&B runs, one per config, written with the `wandb` library itself (nothing
sent; `wandb sync` uploads them): config, history, summary, tag and group as docs/guide.md, "W&B",
lists them. The optional extra `replay-cli[wandb]`."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from replay_cli import catalogue as C
from replay_cli import schema as S
from replay_cli.advice.words import param_text
from replay_cli.config import ReplayConfig
from replay_cli.errors import ReplayError, missing_extra
from replay_cli.io.files import staged_directory
from replay_cli.progress import Tick
from replay_cli.report.model import Report
from replay_cli.report.run_tags import headline, run_names, step_scalars

PROJECT = "replay-cli"
JOB_TYPE = "replay"
FLUSH_WAIT_S = 60.0
"""How long a run's log may take to be complete on disk after W&B's writer was shut down."""


def wandb_module() -> Any:
    """The `wandb` library, or a ConfigError (exit 2) naming the extra to install."""
    try:
        import wandb
    except ImportError:
        raise missing_extra("Writing W&B runs", "wandb") from None
    return wandb


SETTINGS = {"mode": "offline", "silent": True, "console": "off", "save_code": False}
SETTINGS |= dict.fromkeys(("disable_git", "x_disable_stats", "x_disable_meta"), True)
SETTINGS |= {"x_disable_machine_info": True}
"""`wandb.Settings` of a run: offline, quiet, and nothing about this machine (the replay alone)."""


def run_config(
    config: ReplayConfig, label: str, overrides: str, shaping_off: bool = False
) -> dict[str, Any]:
    """A run's W&B config: the config's parameters as the run launches them (λ a number, the
    float the overrides launch, for a numeric axis; `lambda_time_text` as every surface writes it,
    1/60), its id, label and launch overrides. A config that changes no reward (`shaping_off`:
    λ 0, no bonus, no floor) launches with `enabled=false`, and its config says so."""
    flat = config.flat()
    return {
        **flat,
        "enabled": bool(flat["enabled"]) and not shaping_off,
        "lambda_time": float(flat["lambda_time"]),
        "lambda_time_text": param_text("lambda_time", flat["lambda_time"]),
        S.CONFIG_ID: config.config_id,
        "label": label,
        C.OVERRIDES: overrides,
    }


def write_runs(
    report: Report,
    out: str | Path,
    *,
    force: bool = False,
    group: str | None = None,
    project: str = PROJECT,
    tick: Tick | None = None,
) -> list[Path]:
    """Write one offline W&B run per config of a report under `out` (as `out/wandb/
    offline-run-*`), atomically (an existing `out` is refused unless `force`); returns the run
    directories. `group` names the sweep (default: `out`'s name)."""
    wandb = wandb_module()
    out = Path(out)
    verdict = {row[S.CONFIG_ID]: row for row in report.verdict.recommendation.iter_rows(named=True)}
    configs = {c.config_id: c for c in report.result.configs}
    group = group or out.name
    names = run_names(report.result.summary)
    with staged_directory(out, force) as tmp:
        made = []
        for row, name in zip(report.result.summary.iter_rows(named=True), names, strict=True):
            cid = row[S.CONFIG_ID]
            decided = verdict[cid]
            config = run_config(
                configs[cid], row["label"], decided[C.OVERRIDES], bool(decided[S.SHAPING_OFF])
            )
            run = wandb.init(
                dir=str(tmp),
                project=project,
                group=group,
                job_type=JOB_TYPE,
                name=name,
                tags=[decided[C.ROLE]],
                config=config,
                settings=wandb.Settings(**SETTINGS),
                reinit="create_new",
            )
            logged = 0
            for step, scalars in step_scalars(report.result.steps, cid):
                run.log(scalars, step=step)
                logged += 1
            won = decided[C.WON_SHARE]  # a fraction: in % like every other _pct key
            won_pct = None if won is None else 100.0 * won
            run.summary.update({**headline(row), C.ROLE: decided[C.ROLE], "won_pct": won_pct})
            made.append((Path(run.dir).parent.name, logged))
            run.finish()
            if tick is not None:
                tick(len(made), report.result.summary.height)
        # run.finish() returns before W&B's writer has flushed the log: shut the writer down,
        # then read every run back, so no run is reported written before its log is whole.
        wandb.teardown()
        for name, logged in made:
            _wait_complete(tmp / "wandb" / name, logged)
    return [out / "wandb" / name for name, _ in made]


def _wait_complete(run_dir: Path, logged: int, wait_s: float = FLUSH_WAIT_S) -> None:
    """Wait until the run's `.wandb` log holds its `logged` history records and its summary."""
    from replay_cli.io.wandb_run import read_log

    deadline = time.monotonic() + wait_s
    while True:
        logs = list(run_dir.glob("*.wandb"))
        if len(logs) == 1:
            run = read_log(logs[0])
            if len(run.history) >= logged and C.ROLE in run.summary:
                return
        if time.monotonic() > deadline:
            raise ReplayError(
                f"The W&B run {run_dir.name} was not complete on disk after {wait_s:.0f} s "
                "(the wandb writer did not flush its log); no runs were written."
            )
        time.sleep(0.1)


def sync_command(out: str | Path) -> str:
    """The command that uploads the written runs."""
    return f"wandb sync {Path(out) / 'wandb'}/offline-run-*"
