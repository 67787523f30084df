"""Defaults and number formats shared by the config and the CLI's help, without pydantic:
`--help` reads them before any model is built."""

from __future__ import annotations

DEFAULT_CHUNK_ROWS = 1_000_000
"""Rows per chunk of whole steps a replay holds at once (`--chunk-rows`)."""

# The first-step diagnostic's and the forecast's defaults (`EffortSettings`, `ForecastSettings`, and
# the options `--step-kl`, `--resamples`, `--steps`, `--seeds`, `--problems`, `--fit`).
STEP_KL = 0.001
"""The first step's budget: mean KL per problem (nats)."""
RESAMPLES = 200
"""Bootstrap resamples over problems."""
STEPS = 50
"""The forecast's horizon T (training steps)."""
SEEDS = 4
"""The forecast's seeds S."""
PROBLEMS = 150
"""Problems the forecast samples per length bucket and seed."""
FIT = False
"""Whether the forecast fits its unknowns to the logged run (else the cautious reading)."""


def lambda_text(value: float) -> str:
    """lambda_time as a user writes it: 1/60 when it is exactly one over a whole number of
    minutes, else the float's shortest exact text (0.016667, as the launch overrides carry it;
    never rounded to another number such as 0.01667)."""
    if value != 0:
        k = round(1 / abs(value))
        if 1 < k <= 100_000 and 1 / k == abs(value):
            return f"{'-' if value < 0 else ''}1/{k}"
    text = repr(float(value))
    return text.removesuffix(".0")
