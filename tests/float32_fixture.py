"""Where the trainer's float32 advantages on three platforms are: the subsample shipped under
tests/fixtures (every clone runs it) and the full set beside the repository (optional)."""

from pathlib import Path

import pytest

SHIPPED = Path(__file__).resolve().parent / "fixtures" / "float32_platforms"
FULL = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "float32_platforms"
SETS = {"shipped": SHIPPED, "full": FULL}


def fixture_dir(name: str) -> Path:
    """The directory of one set; the full one is skipped where the clone has no ../shared."""
    path = SETS[name]
    if not path.is_dir():
        assert name != "shipped", f"{path} is part of the repository"
        pytest.skip(f"the full set is optional: {path} is not here")
    return path
