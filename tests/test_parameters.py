"""Tests for replay_cli.parameters: every parameter is declared once (its pydantic field) and
reaches every command, override and parser from there; a new one touches three files."""

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.main import get_command

from replay_cli import parameters as P
from replay_cli.cli.app import app

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = get_command(app).commands  # type: ignore[attr-defined]


def _options(command: str) -> dict[str, str]:
    return {
        opt: param.help
        for param in COMMANDS[command].params
        for opt in getattr(param, "opts", [])
        if opt.startswith("--")
    }


@pytest.mark.parametrize("command", ["replay", "sweep", "explain"])
def test_every_parameter_is_an_option_with_its_help(command):
    options = _options(command)
    for p in P.registry().values():
        wanted = {"replay": p.replay, "explain": p.explain, "sweep": True}[command]
        flag = p.switch if command != "sweep" and p.kind == "bool" else p.flag
        assert (flag in options) == wanted, (command, flag)
        if wanted:  # a --no- switch says what passing it does, not the setting's description
            switch = command != "sweep" and p.kind == "bool"
            assert options[flag].startswith(p.switch_help if switch else p.help)


def test_every_trainer_key_reaches_its_parameter():
    samples = {"bool": "false", "number": "0.5", "optional_number": "0.5", "choice": None}
    for key, name in P.trainer_keys().items():
        p = P.registry()[name]
        text = samples.get(p.kind) or p.choices[-1]
        if key.endswith("use_leave_one_out_baseline"):
            text = "false"
        values, ignored = P.parse_overrides([f"++{key}={text}"])
        assert ignored == []
        assert list(values) == [name]


def test_choices_come_from_the_field():
    assert P.registry()["std_guard"].choices == ("legacy", "trivial")
    assert P.registry()["apply_to"].choices == ("all", "correct")


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("lambda_time", "1/60"),
        ("floor", "none"),
        ("lambda_call_bonus", "0"),
        ("apply_to", "all"),
        ("normalize", "true"),
        ("clip_low", "none"),
    ],
)
def test_help_shows_each_default_as_the_option_takes_it(name, text):
    p = P.registry()[name]
    assert p.default_text == text
    assert P.parse_value(name, text) == p.default  # what --help shows parses back to the default


DUMMY = """
    dummy_bonus: float = param(
        0.0,
        "A dummy parameter that only the test adds.",
        trainer=(TE + "dummy_bonus",),
        label="dummy={:g}",
    )
"""


def test_a_new_parameter_touches_config_only(tmp_path):
    """Copy the package, declare one field in config.py (the only edit), and check that the CLI
    options, overrides, run config, grid parser, summary column and label all know it."""
    # Without bytecode: another test worker may be writing a .pyc there (a temporary file that
    # is renamed away while the copy lists the directory).
    shutil.copytree(
        ROOT / "replay_cli", tmp_path / "replay_cli", ignore=shutil.ignore_patterns("__pycache__")
    )
    config = tmp_path / "replay_cli" / "config.py"
    text = config.read_text()
    anchor = "    validation_shaped: bool = param("
    assert anchor in text
    config.write_text(text.replace(anchor, DUMMY.lstrip("\n") + anchor, 1))
    script = textwrap.dedent(
        """
        from typer.testing import CliRunner
        from replay_cli import ReplayConfig
        from replay_cli.cli.app import app
        from replay_cli.parameters import expand, parse_list, parse_overrides, registry

        assert registry()["dummy_bonus"].section == "shaping"
        dummy = ReplayConfig.model_validate({"shaping": {"dummy_bonus": 0.5}})
        assert dummy.config_id != ReplayConfig().config_id  # the id hashes the new field
        for command in ("replay", "sweep", "explain"):
            out = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "200"}).output
            assert "--dummy-bonus" in out, command
        values, _ = parse_overrides(["++grpo.time_efficiency.dummy_bonus=0.25"])
        assert values == {"dummy_bonus": 0.25}
        configs = expand({}, {"dummy_bonus": parse_list("dummy_bonus", "0,1/4")})
        assert [c.label for c in configs] == ["λ=1/60 all", "λ=1/60 all dummy=0.25"]
        assert configs[1].flat()["dummy_bonus"] == 0.25
        print("ok")
        """
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", script],
        env=env,
        check=False,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_architecture_doc_names_the_three_files():
    doc = (ROOT / "docs" / "architecture.md").read_text()
    section = re.search(r"## Where to change what(.*?)(\n## |\Z)", doc, re.DOTALL).group(1)
    assert "config.py" in section
    assert "test_parameters.py" in section


def test_the_snapshot_holds_the_fields_of_config():
    # --help reads param_snapshot.py instead of building the pydantic models: after a change to
    # config.py's fields, rerun `python -m replay_cli.parameters` (it formats the file too).
    assert P.config_sha256() == P.param_snapshot.CONFIG_SHA256
    assert P.registry() == P.derived_registry()
