"""The README documents every command, its set-up commands are the ones CI runs, and its examples run."""

import re
import runpy
from pathlib import Path

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from replay_cli.cli.app import app

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
COMMANDS = get_command(app).commands  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_has_help_and_is_in_the_readme(name):
    assert COMMANDS[name].help, f"{name} has no help"
    assert f"replay-cli {name}" in README


def test_every_option_has_help(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    for name, command in COMMANDS.items():
        for param in command.params:
            if param.param_type_name == "option":
                assert param.help, f"{name} {param.name} has no help"


def test_readme_set_up_is_the_two_commands():
    block = (
        re.search(r"## Set-up.*?```bash\n(.*?)```", README, re.DOTALL).group(1).strip().splitlines()
    )
    assert block == ["pip install uv && uv run replay-cli demo", "uv run --group test pytest"]
    assert '"${uv_cmd[@]}" run --group test pytest' in (ROOT / ".ci" / "run").read_text()


def test_readme_flags_exist():
    replay = COMMANDS["replay"]
    flags = {opt for p in replay.params for opt in getattr(p, "opts", [])}
    for flag in set(re.findall(r"`(--[a-z-]+)", README)):
        if flag in {"--out", "--force"} or flag in flags:
            continue
        assert any(
            flag in {o for p in c.params for o in getattr(p, "opts", [])} for c in COMMANDS.values()
        ), flag


def test_readme_cli_example_runs(tmp_path):
    result = CliRunner().invoke(
        app,
        [
            "replay",
            str(ROOT / "data_samples" / "rollouts_small.parquet"),
            "--out",
            str(tmp_path / "report"),
            "++grpo.time_efficiency.apply_to=correct",
            "++grpo.advantage_clip_low=-3",
            "++grpo.advantage_clip_high=3",
        ],
        env={"COLUMNS": "160"},
    )
    assert result.exit_code == 0, result.output
    row = re.search(r"│ λ=1/60 correct clip\[-3,3\] .*│", result.output).group(0)
    assert row in README


def test_readme_library_example_runs(tmp_path, monkeypatch, capsys):
    """The README's library snippet, run as written (from a copy of the checkout's layout)."""
    (tmp_path / "data_samples").symlink_to(ROOT / "data_samples")
    monkeypatch.chdir(tmp_path)
    script = tmp_path / "readme_snippet.py"
    script.write_text(re.search(r"```python\n(.*?)```", README, re.DOTALL).group(1))
    report = runpy.run_path(str(script))["report"]
    assert report.result.summary.height == 2
    roles = report.verdict.recommendation["role"]
    assert roles.len() == 2
    assert set(roles) <= {"recommended", "runner-up", "eligible", "avoid"}
    assert "role" in capsys.readouterr().out
    assert (tmp_path / "report" / "summary.parquet").exists()
    assert (tmp_path / "report" / "recommendation.parquet").exists()


GUIDE_BLOCKS = re.findall(
    r"```\n\$ uv run replay-cli ((?:[^\n]*\\\n)*[^\n]*)\n(.*?)```",
    (ROOT / "docs" / "guide.md").read_text(),
    re.DOTALL,
)


@pytest.mark.parametrize(
    ("command", "shown"),
    GUIDE_BLOCKS,
    ids=[c.split("--out ")[1].split()[0] for c, _ in GUIDE_BLOCKS],
)
def test_every_guide_example_prints_what_the_guide_shows(tmp_path, monkeypatch, command, shown):
    """docs/guide.md's console blocks are real output (regenerate them when output changes)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data_samples").symlink_to(ROOT / "data_samples")
    args = command.replace("\\\n", " ").split()
    result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    strip = lambda text: [line.rstrip() for line in text.strip().splitlines()]
    assert strip(result.output) == strip(shown)


def test_the_guides_worked_example_recommends_what_its_prose_reads():
    worked = next(shown for command, shown in GUIDE_BLOCKS if "--out wx" in command)
    assert "Recommended: λ=1/60 correct clip[-3,3]" in worked
    assert "Runner-up: λ=1/120 correct clip[-3,3]" in worked
    prose = (ROOT / "docs" / "guide.md").read_text()
    assert "1. **The verdict: λ=1/60 `correct`.**" in prose
    assert "λ=1/120 `correct` keeps more (97.7% on long problems)" in prose


@pytest.mark.slow
def test_readme_demo_output_is_real(demo_run):
    _, result = demo_run
    assert result.exit_code == 0, result.output
    shown = re.search(r"\$ uv run replay-cli demo\n(.*?)```", README, re.DOTALL).group(1)
    strip = lambda text: [line.rstrip() for line in text.strip().splitlines()]
    assert strip(result.output) == strip(shown)


def test_cli_reference_is_generated_from_the_app(tmp_path):
    """docs/cli.md is `typer replay_cli.cli.app utils docs` output; regenerate it when options change."""
    out = tmp_path / "cli.md"
    done = runpy.run_path(str(ROOT / "scripts" / "regenerate_docs.py"))["cli_reference"](out)
    assert done.returncode == 0, done.stderr
    assert out.read_text() == (ROOT / "docs" / "cli.md").read_text(), (
        "docs/cli.md is stale: uv run python scripts/regenerate_docs.py"
    )


def test_readme_is_short_and_links_the_docs():
    # 11.5 kB: the demo's real output grew by the decision's bar, the pick's warning and the
    # named twin (issue 54), and the forecast's reading and backtest (issue 53); the prose around
    # it did not (it shrank by 150 bytes in issue 53).
    assert len(README.encode()) < 11_500
    for doc in ("guide", "cli", "report", "semantics", "architecture", "benchmarks"):
        assert f"(docs/{doc}.md)" in README
        assert (ROOT / "docs" / f"{doc}.md").exists()


def test_the_findings_table_lists_every_kind_in_the_reports_order():
    """docs/report.md's Findings table names each kind of advice/findings.py's KINDS once, in the
    order the reports print them."""
    from replay_cli.advice.findings import KINDS

    text = (ROOT / "docs" / "report.md").read_text()
    section = text.split("\n## Findings\n")[1].split("\n## ")[0]
    listed = re.findall(r"^\| `([a-z_]+)` \| (hazard|warning|info) \|", section, re.MULTILINE)
    assert [kind for kind, _ in listed] == list(KINDS)
    assert [severity for _, severity in listed] == [KINDS[k][0] for k in KINDS]


def test_readme_commands_run_as_written_after_the_set_up():
    """Every command of the README's shell blocks runs through `uv run` (the set-up installs no
    tool on the PATH), and one that needs an extra names it (`--extra tensorboard`)."""
    blocks = re.findall(r"```bash\n(.*?)```", README, re.DOTALL)
    commands = [
        line for block in blocks for line in block.splitlines() if line and not line[0].isspace()
    ]
    assert any("tensorboard" in c for c in commands)
    for command in commands:
        if command.startswith("pip install"):
            continue
        assert command.startswith("uv run "), command
        if "tensorboard" in command:
            assert command.startswith("uv run --extra tensorboard "), command


def test_readme_states_the_rules_resolve_bar():
    """The promise says the bar the rule uses, not that resolve rate costs nothing."""
    from replay_cli.advice.recommendation import Rule

    rule = Rule()
    promise = README.split("* **One decision you can launch**")[1].split("\n* ")[0]
    assert "without costing" not in promise
    assert rule.min_resolve_vs_off == rule.min_resolve_vs_off_long
    assert f"≥ {rule.min_resolve_vs_off:.0%} of shaping off's" in promise
    assert "interval's low end" in promise
