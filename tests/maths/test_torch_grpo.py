"""Tests for `--precision torch` (maths/torch_grpo.py): the trainer's own torch operations give the
float32 emulation's values within its rounding bound and bit for bit where the bound is 0, the
trainer's exact bits on the platform that logged the shared fixture, and clear errors without
torch or without a CUDA device. CI installs torch's CPU build; so should a developer (README)."""

import json
import os
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from replay_cli.cli.app import app
from replay_cli.engine.run import run_replay
from replay_cli.errors import ConfigError
from replay_cli.rollouts.validation import rollouts_from_frame

from factories import config, rollouts
from float32_fixture import SETS, fixture_dir

SAMPLES = Path(__file__).resolve().parents[2] / "data_samples"
SMALL = SAMPLES / "rollouts_small.parquet"
MEDIUM = SAMPLES / "rollouts_medium.parquet"


@pytest.fixture(scope="module")
def torch():
    try:
        import torch
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail(
                "CI installs torch's CPU build (.ci/run) so that --precision torch is tested"
            )
        pytest.skip("needs torch: .ci/run installs its CPU build (uv pip install torch)")
    return torch


SETTINGS = [
    {"enabled": False},
    {"apply_to": "all"},
    {"apply_to": "correct", "lambda_time": 1 / 240},
    {"apply_to": "all", "floor": -1.0},
]
ESTIMATORS = [
    {},
    {"baseline": "mean"},
    {"std_guard": "legacy"},
    {"exclude_masked": True},
    {"normalize": False, "clip_low": -3.0, "clip_high": 3.0},
    {"filter": "nemo-rl"},  # the polars plans: the survivors' groups, with their own bound
]


def both(frame, shaping, advantage):
    """(float32 emulation rows, torch rows) of one setting, row for row."""
    cfgs = [config(shaping, {**advantage, "precision": p}) for p in ("float32", "torch")]
    rows = run_replay(rollouts_from_frame(frame), cfgs).rows.filter(pl.col("split") == "train")
    emulated, real = (rows.filter(pl.col("config_id") == c.config_id, pl.col("kept")) for c in cfgs)
    return emulated, real


@pytest.mark.parametrize("advantage", ESTIMATORS)
@pytest.mark.parametrize("shaping", SETTINGS)
def test_torch_lies_within_the_emulations_bound_and_equals_it_where_the_bound_is_zero(
    torch, shaping, advantage
):
    frame = pl.read_parquet(MEDIUM)
    emulated, real = both(frame, shaping, advantage)
    assert real.height == emulated.height > 0
    assert (real["rollout_index"] == emulated["rollout_index"]).all()
    mine = real["advantage_unclipped"].to_numpy()
    em = emulated["advantage_unclipped"].to_numpy()
    bound = emulated["advantage_f32_bound"].to_numpy()
    assert emulated["advantage_f32_bound"].null_count() == 0
    assert (np.abs(mine - em) <= bound).all()
    exact = bound == 0
    assert (mine[exact] == em[exact]).all()
    if not shaping.get("enabled", True):
        assert exact.any()  # rewards 0 and 1: all-equal groups are exact
    # The rest of the trainer's formula is shared: the clip, the guard's flags, the shaping.
    for column in ("reward_shaped", "peers_all_equal"):
        assert (real[column] == emulated[column]).all()
    clipped = np.clip(mine, advantage.get("clip_low", -np.inf), advantage.get("clip_high", np.inf))
    assert (real["advantage"].to_numpy() == clipped).all()


def test_the_residue_row_goes_through_torchs_own_sums(torch):
    """`[0] + [0.3]*7` under the legacy guard: whatever residue torch's sums leave is the value
    replayed, the same as calling torch directly on the group (the spec's torch example)."""
    frame = rollouts(reward=[0.0] + [0.3] * 7)
    adv = {"std_guard": "legacy", "precision": "torch"}
    result = run_replay(rollouts_from_frame(frame), [config({"enabled": False}, adv)])
    r = torch.tensor([0.0] + [0.3] * 7)
    mask = 1 - torch.eye(8)
    b = mask @ r / torch.tensor(7.0)
    q = mask @ r.pow(2) / torch.tensor(7.0)
    std = ((q - b.square()) * (torch.tensor(7.0) / torch.tensor(6.0))).sqrt().nan_to_num(0)
    want = torch.where(std > 0, (r - b) / (std + 1e-6), r - b).numpy()
    got = result.rows["advantage"].to_numpy()
    assert (got == want.astype(np.float64)).all()
    assert result.rows["std"][0] == float(std[0])


def test_without_torch_the_error_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch raises ImportError
    out = tmp_path / "r"
    res = CliRunner().invoke(app, ["replay", str(SMALL), "--precision", "torch", "--out", str(out)])
    assert res.exit_code == 2
    assert "replay-cli[torch]" in res.output
    assert not out.exists()


def test_cuda_without_a_device_is_refused_before_any_work(torch, monkeypatch, tmp_path):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    out = tmp_path / "r"
    args = ["replay", str(SMALL), "--precision", "torch", "--device", "cuda", "--out", str(out)]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2
    assert "sees no CUDA device" in res.output
    assert "--device cpu" in res.output
    assert not out.exists()
    with pytest.raises(ConfigError, match="no CUDA"):
        run_replay(
            rollouts_from_frame(pl.read_parquet(SMALL)),
            [config({}, {"precision": "torch", "device": "cuda"})],
        )


def test_device_and_estimator_rules_and_the_config_id():
    with pytest.raises(ConfigError, match="device cuda applies to precision torch only"):
        config({}, {"device": "cuda"})
    with pytest.raises(ConfigError, match="estimator verl-grpo"):
        config({}, {"precision": "torch", "estimator": "verl-grpo"})
    # The device at its default leaves earlier config ids as they were; cuda is its own config.
    cpu = config({}, {"precision": "torch"})
    assert cpu.config_id == config({}, {"precision": "torch", "device": "cpu"}).config_id
    cuda = config({}, {"precision": "torch", "device": "cuda"})
    assert cuda.config_id != cpu.config_id
    assert cpu.label.endswith(" torch")
    assert cuda.label.endswith(" torch device=cuda")


def test_the_manifest_says_where_torch_ran(torch, tmp_path):
    out = tmp_path / "r"
    res = CliRunner().invoke(
        app,
        [
            "replay",
            str(SMALL),
            "--precision",
            "torch",
            "--rows",
            "none",
            "--no-charts",
            "--out",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    said = f"computed by torch {torch.__version__} on cpu (CPU)"
    assert json.loads((out / "manifest.json").read_text())["computed_by"] == [
        f"precision torch: baselines, stds and normalisation {said}"
    ]
    assert (
        "Note: precision torch: baselines, stds and normalisation computed by torch" in res.output
    )


PROBE_ROWS = 200
"""The fixture's hand-made rows: they tell the logged platforms apart (docs/semantics.md)."""


@pytest.mark.parametrize("which", list(SETS))
def test_the_trainers_own_bits_on_the_platform_that_logged_them(torch, which):
    """float32 results differ between CPU models, so the platform is recognised by its bits,
    not by its name: the logged platform whose `loo_all` advantages this machine's torch
    reproduces on the hand-made rows. On it, every other row of every config must then be
    bit for bit the logged one (the emulation matches only 47-88% of them). A machine that
    reproduces no logged platform is not one the claim is about."""
    path = fixture_dir(which)
    from test_rounding import parse_flags_for_tests

    frame = pl.read_parquet(path / "rollouts.parquet").with_row_index("fixture_row")
    real = pl.read_parquet(path / "real_advantages.parquet")
    flags = json.loads((path / "configs.json").read_text())
    built = {
        name: parse_flags_for_tests(f.replace("--precision float32", "--precision torch"))
        for name, f in flags.items()
    }
    rows = run_replay(rollouts_from_frame(frame), list(built.values())).rows

    def joined(name: str, platform: str) -> pl.DataFrame:
        mine = rows.filter(pl.col("config_id") == built[name].config_id).select(
            pl.col("fixture_row").alias("source_row"), "advantage_unclipped", "std"
        )
        logged = real.filter(pl.col("config") == name, pl.col("platform") == platform)
        out = logged.join(mine, on="source_row")
        assert out.height == logged.height > 0
        return out

    def equal(j: pl.DataFrame) -> bool:
        same = j["advantage"].cast(pl.Float64) == j["advantage_unclipped"]
        return bool(same.all() and (j["std"].cast(pl.Float64) == j["std_right"]).all())

    platforms = real["platform"].unique().sort().to_list()
    probe = [
        p
        for p in platforms
        if equal(joined("loo_all", p).filter(pl.col("source_row") < PROBE_ROWS))
    ]
    if not probe:
        pytest.skip(
            f"torch {torch.__version__} on this CPU ({torch.backends.cpu.get_cpu_capability()}) "
            f"reproduces none of the logged platforms {platforms} on the hand-made rows"
        )
    assert len(probe) == 1, probe  # the hand-made rows tell the platforms apart
    for name in built:
        j = joined(name, probe[0])
        assert equal(j), (
            name,
            probe[0],
            j.filter(pl.col("advantage") != pl.col("advantage_unclipped")).height,
        )
