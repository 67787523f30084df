"""Library entry points used by the CLI and by notebooks: load, replay, write, synthesise, demo."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from replay_cli import schema as S
from replay_cli.config import Pilot, ReplayConfig, build_config, config_warnings
from replay_cli.engine.run import run_replay
from replay_cli.engine.sinks import replay_into
from replay_cli.errors import ConfigError, InputFileError, ReplayError
from replay_cli.io.files import (
    atomic_path,
    check_out_dir,
    check_out_file,
    refuse_existing,
    staged_directory,
)
from replay_cli.io.parquet import ParquetRowSink, parse_mapping
from replay_cli.maths.peers import estimator_notes
from replay_cli.progress import Progress, phase
from replay_cli.report.model import Report
from replay_cli.report.options import ReportOptions
from replay_cli.report.write import write
from replay_cli.result import ReplayResult
from replay_cli.rollouts.fit import inert_settings
from replay_cli.rollouts.synth import synth_batches
from replay_cli.rollouts.validation import Rollouts, load_rollouts, look_alike_notes
from replay_cli.rollouts.value_checks import DURATION_EXAMPLES

if TYPE_CHECKING:
    from replay_cli.io.jsonl import ImportStats


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


def inspect_input(
    sources: Sequence[str | Path],
    *,
    mapping: Sequence[str] | None = None,
    group_size: int | None = None,
    strict: bool = False,
) -> tuple[dict[str, object], list[str], list[str]]:
    """Validate an input and describe it: (statistics, loading notes, hazards: the input's values
    the trainer would coerce, each in words; an input with any is not valid for shaping)."""
    from replay_cli.advice.findings import input_findings
    from replay_cli.analysis.describe import describe_rollouts

    rollouts = load(sources, mapping=mapping, group_size=group_size, strict=strict)
    hazards = [f"{f['severity']}: {f['text']}" for f in input_findings(rollouts.coerced)]
    return describe_rollouts(rollouts), rollouts.notes, hazards


def replay(
    rollouts: Rollouts,
    configs: Sequence[ReplayConfig] | ReplayConfig | None = None,
    options: ReportOptions | None = None,
) -> Report:
    """Replay one or more configs in memory and judge them (default: NeMo-RL defaults with
    shaping on): the `Report` (`report.result`'s tables, `report.verdict`); `options` gives the
    first-step diagnostic's and the forecast's settings and the rule."""
    if configs is None:
        configs = [ReplayConfig()]
    elif isinstance(configs, ReplayConfig):
        configs = [configs]
    options = options or ReportOptions()
    replayed = run_replay(
        rollouts,
        configs,
        settings=options.effort,
        forecast=options.forecast,
        pilots=load_pilots(options),
    )
    return Report.of(annotated(replayed, rollouts), options, rollouts)


def load_pilots(options: ReportOptions, **load_args: Any) -> list[tuple[Pilot, Rollouts]]:
    """Each pilot run's log loaded as the user's is (`load_args`: `mapping`, `group_size`,
    `strict`), before any work: a missing or unreadable pilot is an error naming it, and so is a
    pilot without the forecast (it is checked against the forecast of its config)."""
    if options.pilots and options.forecast is None:
        names = ", ".join(str(p.path) for p in options.pilots)
        raise ConfigError(
            f"--pilot {names}: a pilot is checked by the forecast; drop --no-forecast"
        )
    out = []
    for pilot in options.pilots:
        try:
            out.append((pilot, load([pilot.path], **load_args)))
        except ReplayError as exc:
            raise type(exc)(f"--pilot {pilot.path}: {exc}") from None
    return out


def annotated(result: ReplayResult, rollouts: Rollouts) -> ReplayResult:
    """The result with how its input was read (loading notes) and the warnings about replaying
    its configs on it."""
    columns = rollouts.frame.collect_schema().names()
    return replace(
        result,
        notes=[
            *estimator_notes(columns, {c.advantage.estimator for c in result.configs}),
            *config_warnings(result.configs),
            *inert_settings(rollouts, result.configs),
        ],
        input_notes=list(rollouts.notes),
    )


def report_options(options: ReportOptions | None = None, **fields: Any) -> ReportOptions:
    """`options` with `fields` replaced (validated as ReportOptions): `charts=True`, `rows="none"`."""
    base = (options or ReportOptions()).model_dump()
    return ReportOptions.model_validate({**base, **fields})


def _check_runs_dir(out: Path, force: bool, what: str) -> None:
    """A directory of tracker runs can be made (a regular file there, or an unwritable parent,
    is refused first) and does not exist unless `force`."""
    check_out_dir(Path(out), True, what)
    refuse_existing(Path(out), force, what)


def check_outputs(out: Path, options: ReportOptions) -> None:
    """Before any work: every output path can be written (the report directory, and the
    TensorBoard and W&B directories with their extras installed)."""
    check_out_dir(Path(out), options.force)
    if options.tensorboard is not None:
        from replay_cli.report.tensorboard import summary_writer

        summary_writer()
        _check_runs_dir(options.tensorboard, options.force, "TensorBoard directory")
    if options.wandb is not None:
        from replay_cli.report.wandb_runs import wandb_module

        wandb_module()
        _check_runs_dir(options.wandb, options.force, "W&B directory")


def replay_to_report(
    sources: Sequence[str | Path],
    configs: Sequence[ReplayConfig],
    out: Path,
    options: ReportOptions | None = None,
    *,
    mapping: Sequence[str] | None = None,
    group_size: int | None = None,
    strict: bool = False,
    progress: Progress | None = None,
    **fields: Any,
) -> Report:
    """Load, replay, judge and write a report directory atomically (`engine.sinks.replay_into`
    streams the rows); returns the `Report`; refuses an existing `out` unless `options.force`.
    Options may be given as one `ReportOptions` or as its fields (`charts=True`, `rows="none"`).
    `progress(phase, done, total)` hears each phase as it starts and as its units finish."""
    options = report_options(options, **fields)
    check_outputs(Path(out), options)
    load_kw = {"mapping": parse_mapping(mapping or []), "group_size": group_size, "strict": strict}
    rollouts = load(sources, **load_kw)
    pilots = load_pilots(options, **load_kw)
    load_args = {"sources": [str(s) for s in sources], **load_kw}
    return _report(Path(out), rollouts, configs, options, load_args, progress, pilots)


def export_tensorboard(report: Path, out: Path, *, force: bool = False) -> list[Path]:
    """One TensorBoard run per config of a written report (`replay-cli export tensorboard`)."""
    from replay_cli.report.tensorboard import summary_writer, write_runs

    summary_writer()
    check_out_dir(Path(out), force, "TensorBoard directory")
    return write_runs(Report.read(report), out, force=force)


def export_wandb(
    report: Path, out: Path, *, force: bool = False, group: str | None = None
) -> list[Path]:
    """One offline W&B run per config of a written report (`replay-cli export wandb`), in one
    group (default: the report directory's name)."""
    from replay_cli.report.wandb_runs import wandb_module, write_runs

    wandb_module()
    _check_runs_dir(out, force, "W&B directory")
    group = group or Path(report).resolve().name
    return write_runs(Report.read(report), out, force=force, group=group)


def _report(
    out: Path,
    rollouts: Rollouts,
    configs: Sequence[ReplayConfig],
    options: ReportOptions,
    load_args: dict[str, Any] | None,
    progress: Progress | None,
    pilots: Sequence[tuple[Pilot, Rollouts]] = (),
) -> Report:
    """load → replay → judge → write, into a staged directory renamed into place."""
    with staged_directory(out, options.force) as tmp:
        replayed = replay_into(
            tmp,
            rollouts,
            configs,
            rows=options.rows,
            engine=options.engine,
            ray_address=options.ray_address,
            chunk_rows=options.chunk_rows,
            settings=options.effort,
            forecast=options.forecast,
            load_args=load_args,
            progress=progress,
            pilots=pilots,
        )
        phase(progress, "verdict")
        report = Report.of(annotated(replayed, rollouts), options, rollouts)
        write(report, tmp, charts=options.charts, progress=progress)
    if options.tensorboard is not None:
        from replay_cli.report.tensorboard import write_runs

        # check_outputs checked the extra and the directory before replaying.
        tick = phase(progress, "TensorBoard", report.result.summary.height)
        write_runs(report, options.tensorboard, force=True, tick=tick)
    if options.wandb is not None:
        from replay_cli.report import wandb_runs

        tick = phase(progress, "W&B", report.result.summary.height)
        wandb_runs.write_runs(report, options.wandb, force=True, group=out.name, tick=tick)
    return report


def write_synth(out: Path, *, force: bool = False, **kwargs: float) -> int:
    """Write a synthetic rollout table to Parquet atomically; returns the row count."""
    out = Path(out)
    check_out_file(out, force)
    with atomic_path(out) as tmp:
        sink = ParquetRowSink(tmp)
        try:
            for frame in synth_batches(**kwargs):
                sink(frame)
        finally:
            sink.close()
    return sink.rows


def demo_configs() -> list[ReplayConfig]:
    """A small sweep that shows the main trade-offs: lambda x apply_to under the PR's clip, the
    same unclipped, a lambda large enough to invert, floor with call bonus, internal semantics."""
    clip = {"clip_low": -3.0, "clip_high": 3.0}
    configs = [build_config({"shaping": {"enabled": False}})]
    for lam in (1 / 120, 1 / 60, 1 / 30):
        for apply_to in ("all", "correct"):
            shaping = {"lambda_time": lam, "apply_to": apply_to}
            configs.append(build_config({"shaping": shaping, "advantage": clip}))
    configs += [build_config({"shaping": {"apply_to": a}}) for a in ("all", "correct")]
    invert = {"lambda_time": 1 / 15, "apply_to": "correct"}
    bonus = {"apply_to": "correct", "floor": 0.05, "lambda_call_bonus": 0.1, "call_bonus_ref": 56.0}
    internal = {"semantics": "internal"}
    configs += [build_config({"shaping": s, "advantage": clip}) for s in (invert, bonus, internal)]
    return configs


def run_demo(
    out: Path, scratch: Path, options: ReportOptions | None = None, progress: Progress | None = None
) -> Report:
    """Synthesise rollouts in `scratch`, replay the demo sweep and write a report with charts to
    `out` (replacing an earlier demo report there, and earlier demo TensorBoard runs). The
    manifest names the synthetic input as not kept (`scratch` is the caller's to delete)."""
    out = Path(out)
    force = out.is_dir() and (out / "manifest.json").exists()
    options = report_options(options, force=force, charts=True)
    check_out_dir(out, force)
    if options.tensorboard is not None or options.wandb is not None:
        check_outputs(out, report_options(options, force=True))
    data = scratch / "demo_rollouts.parquet"
    write_synth(data, **DEMO_LOG)
    rollouts = load([data])
    rollouts.files = [replace(f, path=f"{f.path} ({NOT_KEPT})") for f in rollouts.files]
    return _report(out, rollouts, demo_configs(), options, None, progress)


NOT_KEPT = "synthesised by the demo, not kept"
DEMO_LOG: dict[str, int | float] = {
    "steps": 12,
    "groups_per_step": 48,
    "group_size": 8,
    "validation_groups": 8,
    "seed": 7,
    "problems": 192,
    "success_drift": 0.12,
    "effort_drift": 0.02,
}
"""The demo's log: the first 12 steps of a shaping-off run over 192 named problems (`instance_id`),
48 a step (each at every fourth step), success rising where groups split and long successes taking
longer (`synth_rollouts`)."""


def plot_report(report: Path, highlight: Sequence[str] | None = None) -> list[Path]:
    """Judge a report again from its own tables, redraw its charts into report/charts
    (`highlight` replaces the configs the manifest recorded for the per-step charts) and
    rewrite its verdict's tables and index.html; returns the charts."""
    from replay_cli.report.plots import CHARTS

    again = Report.read(report, rows=True).judged_again()
    write(again, Path(report), charts=True, highlight=list(highlight) if highlight else None)
    drawn = [Path(report) / "charts" / f"{n}.png" for n, c in CHARTS.items() if c.draw]
    return [p for p in drawn if p.exists()]


def render_report(report: Path) -> Path:
    """Judge a report again from its own tables under the rule it records, and rewrite its verdict's
    tables (recommendation.parquet, findings.parquet) and index.html; returns the page."""
    from replay_cli.report.html_parts import INDEX

    write(Report.read(report).judged_again(), Path(report))
    return Path(report) / INDEX


def compare_reports(
    reports: Sequence[Path],
    out: Path,
    *,
    reference: str | None = None,
    internal: Path | None = None,
    internal_run: str | None = None,
    config_id: str | None = None,
    force: bool = False,
) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    """Write comparison.parquet (deltas vs a reference config) and, with an internal run's metrics
    (TensorBoard log or CSV), internal_comparison.parquet plus charts/replayed_vs_internal.png;
    returns both tables."""
    from replay_cli.report import compare
    from replay_cli.report.plots import replayed_vs_internal, save
    from replay_cli.report.write import write_directory

    check_out_dir(Path(out), force)
    summary = compare.load_summaries(reports)
    deltas = compare.metric_deltas(summary, reference)
    joined = None
    tables = {"comparison": deltas}
    figures = {}
    if internal is not None:
        chosen = compare.choose_config(summary, config_id)
        read = [Report.read(r) for r in reports]
        report = next(r for r in read if chosen in r.result.summary[S.CONFIG_ID].to_list())
        joined = compare.join_internal(
            report.result.steps, compare.read_internal(internal, internal_run), chosen
        )
        if joined.height == 0:
            raise InputFileError(
                f"No metric of {internal} matches a replayed per-step metric on a common step.\n\n"
                "Check the metric names (train/time_efficiency/..., total_reward/mean) and the steps."
            )
        tables["internal_comparison"] = joined
        figures["replayed_vs_internal"] = replayed_vs_internal(joined)
    write_directory(
        Path(out), tables, lambda d: save(figures, d / "charts") if figures else [], force=force
    )
    return deltas, joined


def explain(
    sources: Sequence[str | Path],
    config: ReplayConfig,
    *,
    out: Path | None = None,
    force: bool = False,
    mapping: Sequence[str] | None = None,
    group_size: int | None = None,
    strict: bool = False,
) -> pl.DataFrame:
    """Attribution table for one config; written to out/attribution.parquet when out is given."""
    from replay_cli.analysis.attribution import attribute
    from replay_cli.report.write import write_directory

    if out is not None:
        check_out_dir(Path(out), force)
    table = attribute(load(sources, mapping=mapping, group_size=group_size, strict=strict), config)
    if out is not None:
        write_directory(Path(out), {"attribution": table}, None, force=force)
    return table


def import_logs(
    fmt: str,
    sources: Sequence[str | Path],
    out: Path,
    *,
    force: bool = False,
    step: int | None = None,
    group_size: int | None = None,
    skip_bad: bool = False,
    progress: Callable[[int, int], None] | None = None,
    mapping: Sequence[str] | None = None,
    split: str | None = None,
    durations: bool = False,
) -> ImportStats:
    """Convert logs or tables of another format into a canonical Parquet file (see
    io/importers.py). A `table` import is checked as a replay would load it; a table that would
    be refused is not written, and the message names its sources; values a replay would read as
    the trainer does (a run time that does not parse: 0 minutes) are counted in a note.
    `durations` reads run times written '12m', '1h02m', '00:12:00', '720s' into seconds."""
    from replay_cli.errors import SchemaError
    from replay_cli.io.importers import import_logs as run_import

    out = Path(out)
    check_out_file(out, force)
    stats = run_import(
        fmt,
        sources,
        out,
        step=step,
        group_size=group_size,
        skip_bad=skip_bad,
        progress=progress,
        mapping=parse_mapping(mapping or []),
        split=split,
        durations=durations,
    )
    if fmt == "table":
        try:
            coerced = load_rollouts([out]).coerced
        except SchemaError as exc:
            out.unlink()
            named = ", ".join(str(s) for s in sources)
            raise SchemaError(str(exc).replace(str(out.resolve()), named)) from None
        # A column kept under another name than the one a setting reads (n_calls for calls).
        stats.notes.extend(look_alike_notes(pl.read_parquet_schema(out).names()))
        for c in coerced:  # values a replay reads as the trainer does
            note = f"{c.what()}; a replay reads them as {c.read_as}, as the trainer does"
            if c.refused_by_strict and not durations:
                note += f" (--durations reads {DURATION_EXAMPLES} into seconds)"
            stats.notes.append(note)
    return stats


def verify_run(
    train_data: Sequence[str | Path],
    *,
    group_size: int | None = None,
    clip: tuple[float | None, float | None] | None = None,
    out: Path | None = None,
    force: bool = False,
):
    """Which estimator settings reproduce a run's logged advantages (see verify.py)."""
    from replay_cli.analysis.verify import verify
    from replay_cli.io.train_data import read_train_data
    from replay_cli.report.write import write_directory

    if out is not None:
        check_out_dir(Path(out), force)
    result = verify(read_train_data(train_data), group_size=group_size, clip=clip)
    if out is not None:
        tables = {
            "candidates": result.candidates,
            "steps": result.steps,
            "differing_rows": result.differing,
        }
        write_directory(Path(out), tables, force=force)
    return result


def split_train_data(
    sources: Sequence[str], train_data: Sequence[str | Path]
) -> tuple[list[str], list[Path]]:
    """`verify`'s positionals and `--train-data`: JSONL files among the positionals are dumps
    (the shell expanded `--train-data train_data_step*.jsonl` into several words), directories in
    `--train-data` are their dumps. Returns (rollout sources, dump files)."""
    from replay_cli.io.train_data import dump_files

    dumps = [s for s in sources if s.endswith(".jsonl")]
    rest = [s for s in sources if not s.endswith(".jsonl")]
    return rest, dump_files([*train_data, *dumps])


def compare_logged_rewards(
    sources: Sequence[str | Path], train_data: Sequence[str | Path], config: ReplayConfig
):
    """Replay `sources` under `config` and compare its shaped rewards with the logged ones per step."""
    from replay_cli.analysis.verify import compare_rewards
    from replay_cli.io.train_data import read_train_data

    replayed = run_replay(load(sources), [config]).rows
    return compare_rewards(read_train_data(train_data), replayed)
