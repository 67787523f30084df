"""λ is written one way on every surface: 1/60 where it is one over whole minutes, else its
float exactly as the launch overrides carry it (never a rounded other number)."""

import pytest

from replay_cli.advice.recommendation import launch_overrides
from replay_cli.defaults import lambda_text

from factories import config


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1 / 60, "1/60"),
        (0.0, "0"),
        (1.0, "1"),
        (0.016667, "0.016667"),
        (2.5e-06, "2.5e-06"),
    ],
)
def test_lambda_text_is_exact(value, text):
    assert lambda_text(value) == text
    assert float(text) == value if "/" not in text else 1 / int(text.split("/")[1]) == value


def test_a_label_writes_lambda_as_its_launch_overrides_do():
    cfg = config({"lambda_time": 0.016667, "apply_to": "correct"})
    assert cfg.label == "λ=0.016667 correct"
    row = cfg.flat()
    assert "lambda_time=0.016667 " in launch_overrides(row) + " "
