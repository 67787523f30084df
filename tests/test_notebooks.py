"""The notebooks run top to bottom against the bundled data (code cells executed in order)."""

import json
from pathlib import Path

import pytest

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
    assert namespace["result"].summary.height >= 3
