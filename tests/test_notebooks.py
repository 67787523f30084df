"""The notebooks run top to bottom against the bundled data (code cells executed in order)."""

import json
from pathlib import Path

import polars as pl
import pytest

pytestmark = pytest.mark.slow  # the notebook run end to end: `-m "not slow"` skips it, CI runs it

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path, monkeypatch):
    monkeypatch.chdir(path.parent)
    namespace: dict = {}
    cells = json.loads(path.read_text())["cells"]
    code = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    assert code
    for source in code:
        exec(compile(source, str(path), "exec"), namespace)  # noqa: S102 -- running the notebook is the test
    report = namespace["report"]
    assert report.result.summary.height >= 3
    assert report.verdict.recommendation["config_id"].to_list() != []
    if "best" in namespace:  # the walkthrough ends at the overrides of the recommended config
        from replay_cli.parameters import parse_overrides, to_config

        best = namespace["best"]
        assert best["role"] == "recommended"
        values, _ = parse_overrides(best["overrides"].split())
        launched = to_config(values)
        assert launched.config_id == best["config_id"]
        assert best["config_id"] in [c.config_id for c in report.result.configs]
        # What the notebook shows for the config it recommends is what that config gives when
        # launched alone: the same summary row as in the sweep.
        from polars.testing import assert_frame_equal

        from replay_cli.config import ForecastSettings
        from replay_cli.engine.run import run_replay

        alone = run_replay(namespace["rollouts"], [launched], forecast=ForecastSettings()).summary
        in_sweep = report.result.summary.filter(pl.col("config_id") == launched.config_id)
        assert_frame_equal(alone, in_sweep, check_dtypes=False)
