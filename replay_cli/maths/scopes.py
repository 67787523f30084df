"""The scopes a measure is read over: every problem, then each length bucket (0 short, 1 medium,
2 long), in that order on every scope axis, with the suffix their summary columns carry."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

LENGTHS = ("short", "medium", "long")
"""The problem-length buckets: terciles of the groups' median agent run time over the input."""


@dataclass(frozen=True)
class Scope:
    """All problems (`bucket` None) or one length bucket."""

    name: str
    bucket: int | None

    @property
    def suffix(self) -> str:
        """The summary columns' suffix: "" for all problems, "@long" for the long bucket."""
        return "" if self.bucket is None else f"@{self.name}"

    def weights(self, weight: np.ndarray, bucket: np.ndarray) -> np.ndarray:
        """`weight` on the scope's problems, 0 elsewhere."""
        return weight * (True if self.bucket is None else bucket == self.bucket)


SCOPES = (Scope("all", None), *(Scope(name, b) for b, name in enumerate(LENGTHS)))
"""Every scope, in the order of a scope axis."""
ALL, LONG = SCOPES[0], SCOPES[-1]
