"""Tests for replay_cli.parameters and the sweep command: parsing, grids, one-pass equivalence."""

import shutil

import polars as pl
import pytest
from typer.testing import CliRunner

from replay_cli import api
from replay_cli.cli.app import app
from replay_cli.errors import ConfigError
from replay_cli.parameters import (
    base_layer,
    expand,
    is_override,
    parse_list,
    parse_value,
    read_grid,
)

from factories import config

runner = CliRunner()


def test_fractions_none_and_booleans():
    assert parse_list("lambda_time", "0,1/120,1/60") == pytest.approx([0.0, 1 / 120, 1 / 60])
    assert parse_list("floor", "none,0.05") == [None, 0.05]
    assert parse_list("normalize", "true,false") == [True, False]
    assert parse_value("internal_items", "1+3") == (1, 3)
    assert parse_value("internal_items", "none") is None


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("lambda_time", "1/0", "--lambda-time expects a number"),
        ("floor", "low", "--floor expects a number, a fraction like 1/60 or none"),
        ("normalize", "maybe", "--normalize expects true or false"),
        ("internal_items", "1+x", "--internal-items expects item numbers"),
        ("lambda_time", "none", "--lambda-time expects a number, a fraction like 1/60, got 'none'"),
        ("lambda_time", ",", "--lambda-time needs at least one value"),
    ],
)
def test_parse_errors(name, text, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        parse_list(name, text)


def test_cartesian_product_and_dedup():
    configs = expand(
        {}, {"lambda_time": [0.0, 1 / 60], "apply_to": ["all", "correct"], "floor": [None, 0.05]}
    )
    assert len(configs) == 8
    assert len({c.config_id for c in configs}) == 8
    assert len(expand({}, {"apply_to": ["all", "all"]})) == 1


def test_invalid_point_names_the_combination():
    with pytest.raises(ConfigError, match=r"Sweep point \(lambda_call_bonus=0.1\) is invalid"):
        expand({}, {"lambda_call_bonus": [0.1]})


def test_grid_file(tmp_path):
    path = tmp_path / "grid.yaml"
    path.write_text(
        "grid:\n  lambda_time: [0, 1/60]\n  apply_to: [all, correct]\n"
        "configs:\n  - {lambda_time: 1/30, apply_to: correct, floor: 0.05}\n"
        "base:\n  clip_low: -3\n  clip_high: 3\n"
    )
    grid, points, base = read_grid(path)
    configs = expand(base, grid, points)
    assert len(configs) == 5
    assert all(c.advantage.clip_low == -3 for c in configs)
    assert configs[-1].shaping.floor == 0.05


def test_bare_grid_file(tmp_path):
    path = tmp_path / "grid.yaml"
    path.write_text("lambda_time: [0, 1/60]\n")
    grid, points, base = read_grid(path)
    assert len(expand(base, grid, points)) == 2


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("grid: [1, 2]\n", "`grid` must map parameters to lists"),
        ("- 1\n- 2\n", "must be a mapping"),
        ("grid: {lambda: [1]}\n", "Unknown sweep parameter 'lambda'"),
        ("grid: {apply_to: [all]}\nextra: 1\n", "unknown top-level keys ['extra']"),
        ("grid: {apply_to: [all\n", "is not valid YAML"),
        ("configs: [1, 2]\n", "`configs` must be a list of mappings"),
        ("configs: {lambda_time: 1/60}\n", "`configs` must be a list of mappings"),
    ],
)
def test_bad_grid_files(tmp_path, text, message):
    path = tmp_path / "grid.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        read_grid(path)


@pytest.mark.parametrize("where", ["base", "configs", "override"])
def test_a_null_for_a_required_number_is_refused_by_its_field(tmp_path, where):
    """YAML's null (or `~`) is no value: a number the config needs says so in its own words, as
    pydantic words it for the field, not as a failed parse of the text 'None'."""
    path = tmp_path / "grid.yaml"
    if where == "override":
        _, base, _ = base_layer(["++grpo.time_efficiency.lambda_time=null"], None, False)
        grid, points = {}, []
    else:
        path.write_text(
            "base: {lambda_time: ~}\n" if where == "base" else "configs: [{lambda_time: null}]\n"
        )
        grid, points, base = read_grid(path)
    assert parse_value("lambda_time", None) is None
    with pytest.raises(
        ConfigError, match="--lambda-time expects a number, a fraction like 1/60, got 'True'"
    ):
        parse_value("lambda_time", True)  # YAML's true is no number
    with pytest.raises(ConfigError) as refused:
        expand(base, grid, points)
    assert str(refused.value) == (
        "Sweep point (lambda_time=None) is invalid.\n"
        "Invalid parameters:\n  lambda_time: Input should be a valid number (got None)"
    )


@pytest.mark.parametrize(
    "path",
    ["./data/step=3/part-0.parquet", "data/step=3/part-0.parquet", "/runs/v1.2/step=3/x.parquet"],
)
def test_a_hive_style_path_is_a_path_not_a_trainer_override(path):
    assert not is_override(path)
    override = "++grpo.time_efficiency.lambda_time=0.01"
    paths, base, ignored = base_layer([path, override], None, False)
    assert (paths, base, ignored) == ([path], {"lambda_time": 0.01}, [])
    assert is_override("grpo.time_efficiency.lambda_time=0.01")  # Hydra's plain a.b=v form


def test_a_hive_style_partition_replays(synth_path, tmp_path, monkeypatch):
    part = tmp_path / "data" / "step=3"
    part.mkdir(parents=True)
    shutil.copy(synth_path, part / "part-0.parquet")
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(
        app, ["replay", "./data/step=3/part-0.parquet", "--out", "r", "--no-charts"]
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "r" / "summary.parquet").is_file()


def test_each_sweep_config_equals_a_single_replay(synth_path):
    configs = expand(
        {},
        {
            "lambda_time": [0.0, 1 / 60],
            "apply_to": ["all", "correct"],
            "precision": ["float32", "float64"],
        },
    )
    rollouts = api.load([synth_path])
    swept = api.replay(rollouts, configs)
    for cfg in configs:
        single = api.replay(rollouts, cfg)
        mine = swept.result.rows.filter(pl.col("config_id") == cfg.config_id)
        assert mine.equals(single.result.rows)
        steps = swept.result.steps.filter(pl.col("config_id") == cfg.config_id).select(
            single.result.steps.columns
        )
        assert steps.equals(single.result.steps)


def test_sweep_command(synth_path, tmp_path):
    out = tmp_path / "sweep"
    result = runner.invoke(
        app,
        [
            "sweep",
            str(synth_path),
            "--out",
            str(out),
            "--lambda-time",
            "0,1/120,1/60",
            "--apply-to",
            "all,correct",
            "--floor",
            "none,0.05",
            "++grpo.advantage_clip_low=-3",
        ],
    )
    assert result.exit_code == 0, result.output
    summary = pl.read_parquet(out / "summary.parquet")
    assert summary.height == 12
    assert summary["clip_low"].to_list() == [-3.0] * 12
    assert sorted(summary["apply_to"].unique().to_list()) == ["all", "correct"]
    assert {"signal_vs_lambda.png", "advantage_distribution.png", "step_curves.png"} <= {
        p.name for p in (out / "charts").iterdir()
    }
    rows = pl.read_parquet(out / "rollouts.parquet")
    assert rows["config_id"].n_unique() == 12


def test_sweep_with_grid_file_and_cli_lists(synth_path, tmp_path):
    grid = tmp_path / "grid.yaml"
    grid.write_text("grid:\n  lambda_time: [0, 1/60]\n  apply_to: [all]\n")
    out = tmp_path / "sweep"
    result = runner.invoke(
        app,
        [
            "sweep",
            str(synth_path),
            "--out",
            str(out),
            "--grid",
            str(grid),
            "--apply-to",
            "correct",
            "--no-charts",
        ],
    )
    assert result.exit_code == 0, result.output
    summary = pl.read_parquet(out / "summary.parquet")
    assert summary["apply_to"].to_list() == ["correct", "correct"]


def test_single_valued_flags_reach_a_grid_files_explicit_points(synth_path, tmp_path):
    grid = tmp_path / "grid.yaml"
    grid.write_text(
        "configs:\n  - {lambda_time: 1/60, apply_to: correct}\n"
        "  - {lambda_time: 1/30, apply_to: all, precision: float32}\n"
    )
    out = tmp_path / "sweep"
    args = ["sweep", str(synth_path), "--out", str(out), "--grid", str(grid)]
    result = runner.invoke(app, [*args, "--precision", "float64", "--no-charts"])
    assert result.exit_code == 0, result.output
    summary = pl.read_parquet(out / "summary.parquet")
    # Two points, no extra config: the flag sets every point that does not name the parameter.
    assert summary.select("lambda_time", "precision").rows() == [
        (1 / 60, "float64"),
        (1 / 30, "float32"),
    ]


def test_sweep_bad_value_exit_2(synth_path, tmp_path):
    result = runner.invoke(
        app, ["sweep", str(synth_path), "--out", str(tmp_path / "s"), "--floor", "none,abc"]
    )
    assert result.exit_code == 2
    assert "--floor expects a number" in result.output


def test_config_labels_are_readable():
    assert (
        config({"lambda_time": 1 / 60, "apply_to": "correct", "floor": 0.05}).label
        == "λ=1/60 correct floor=0.05"
    )
    assert config({"enabled": False}).label == "shaping off"  # the verdict's word
