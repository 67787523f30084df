"""Tests for replay_cli.cli.terminal: the table after a run at a narrow and a wide terminal."""

import pytest

from replay_cli import api
from replay_cli import catalogue as C
from replay_cli.cli.terminal import fit_columns, print_summary
from replay_cli.report import layouts as L

from factories import config, write_small_synth

CONFIGS = [
    config({"enabled": False}),
    config({"lambda_time": 1 / 120, "floor": 0.05}),
    config({"lambda_time": 1 / 60, "apply_to": "correct", "floor": 0.05}),
]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    path = write_small_synth(tmp_path_factory.mktemp("term") / "rollouts.parquet", seed=3)
    rollouts = api.load([path])
    return api.replay(rollouts, CONFIGS)


def _header(text: str) -> str:
    return next(line for line in text.splitlines() if line.startswith("┃"))


@pytest.mark.parametrize("columns", [80, 200])
def test_the_column_the_rule_ranks_by_is_the_last_to_go(
    report, tmp_path, monkeypatch, capsys, columns
):
    """At 80 columns the table keeps solve Δ@T (what the rule ranks by) and the low ends its bar
    reads, dropping the other columns; at 200 it shows every column, in the layout's order."""
    monkeypatch.setenv("COLUMNS", str(columns))
    print_summary(report, tmp_path)
    text = capsys.readouterr().out
    header = _header(text)
    assert all(len(line) <= columns for line in text.splitlines() if line[:1] in "┏┃┡│└")
    briefs = [C.metric(m).brief for m in L.TERMINAL if m in report.result.summary.columns]
    for name in L.TERMINAL_KEPT[:2]:  # what the rule ranks by and its bar on long problems
        assert C.metric(name).brief in header, (columns, header)
    shown = [b for b in briefs if f" {b} ┃" in header]
    if columns == 80:
        assert C.metric(C.F_RESOLVE_VS_OFF_LONG).brief + " ┃" not in header
        assert "narrow terminal:" in text
        assert "solve Δ@T" not in text.split("narrow terminal:")[1]
    else:
        assert shown == briefs
        assert "narrow terminal" not in text
    positions = [header.index(f" {b} ┃") for b in shown]
    assert positions == sorted(positions)  # the layout's order, whatever is kept


def test_fit_columns_keeps_first_and_takes_an_exact_fit():
    cells = {"a": ["1"], "b": ["22"], "c": ["333"]}
    labels = ["x" * 16]
    base = 4 + 16 + 3
    width = base + (1 + 3) + (3 + 3)
    assert fit_columns(labels, cells, width, header=str, other=0, kept=("c",)) == ["a", "c"]
    assert fit_columns(labels, cells, width - 1, header=str, other=0, kept=("c",)) == ["c"]
    assert fit_columns(labels, cells, width, header=str, other=0) == ["a", "b"]


def test_the_demo_guide_lists_every_table_written(tmp_path):
    from replay_cli.cli.terminal import demo_guide

    names = ["summary", "forecast", "resamples", "findings", "steps", "new_table"]
    for name in names:
        (tmp_path / f"{name}.parquet").write_bytes(b"")
    tables = demo_guide(tmp_path).split("Tables: ")[1]
    assert tables == (
        f"{tmp_path}/*.parquet (summary, findings, forecast, new_table, resamples, steps; "
        "summary: one row per config)."
    )
