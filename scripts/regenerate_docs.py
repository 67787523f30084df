"""Regenerate the real output the docs show: README's demo and replay example, every console
block of docs/guide.md, and docs/cli.md (tests/test_docs.py holds them equal to a fresh run).

    uv run python scripts/regenerate_docs.py
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COLUMNS = {"README.md": "160", "docs/guide.md": "200"}


def run(command: str, columns: str) -> str:
    """A replay-cli command's output in a scratch directory beside a link to data_samples."""
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "data_samples").symlink_to(ROOT / "data_samples")
        done = subprocess.run(
            ["uv", "run", "--project", str(ROOT), "replay-cli", *shlex.split(command)],
            cwd=tmp,
            capture_output=True,
            text=True,
            env={**os.environ, "COLUMNS": columns},
            check=True,
        )
    return "\n".join(line.rstrip() for line in done.stdout.rstrip("\n").splitlines())


def blocks(path: str) -> None:
    """Every ```-block that starts with `$ uv run replay-cli ...` and shows its whole output."""
    file = ROOT / path
    text = file.read_text()
    pattern = re.compile(r"```\n\$ uv run replay-cli ((?:[^\n]*\\\n)*[^\n]*)\n(.*?)```", re.DOTALL)

    def again(m: re.Match[str]) -> str:
        if "\n…\n" in m.group(2):  # an excerpt (README's replay example): its row is replaced below
            return m.group(0)
        command = m.group(1).replace("\\\n", " ")
        return f"```\n$ uv run replay-cli {m.group(1)}\n{run(command, COLUMNS[path])}\n```"

    file.write_text(pattern.sub(again, text))


def readme_replay_row() -> None:
    """README's excerpt of the replay example: its one table row."""
    file = ROOT / "README.md"
    text = file.read_text()
    out = run(
        "replay data_samples/rollouts_small.parquet --out report "
        "++grpo.time_efficiency.apply_to=correct ++grpo.advantage_clip_low=-3 "
        "++grpo.advantage_clip_high=3",
        COLUMNS["README.md"],
    )
    row = re.search(r"│ λ=1/60 correct clip\[-3,3\] .*│", out).group(0)
    excerpt = re.search(r"Report: report/index.html\n…\n(│.*│)\n```", text)
    start, end = excerpt.span(1)
    file.write_text(text[:start] + row + text[end:])


def cli_reference(output: Path = ROOT / "docs" / "cli.md") -> subprocess.CompletedProcess:
    """Write `typer replay_cli.cli.app utils docs` to `output` (docs/cli.md by default; the
    docs test writes a copy elsewhere and compares)."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "typer",
            "replay_cli.cli.app",
            "utils",
            "docs",
            "--name",
            "replay-cli",
            "--title",
            "replay-cli command reference",
            "--output",
            str(output),
        ],
        cwd=ROOT,
        check=False,
        capture_output=True,
        text=True,
    )


if __name__ == "__main__":
    blocks("README.md")
    readme_replay_row()
    blocks("docs/guide.md")
    done = cli_reference()
    if done.returncode:
        raise SystemExit(done.stderr)
