"""Columns beside the metrics, named here as the metrics are: the recommendation table's
(recommendation.parquet, advice/recommendation.SCHEMA) and the hash of what a config trains on."""

from __future__ import annotations

ROLE = "role"
"""The config's role: recommended, runner-up, eligible, avoid or unrated."""
RANK = "rank"
FAILED = "failed"
"""The criteria of the rule the config fails."""
REASONS = "reasons"
OVERRIDES = "overrides"
"""The Hydra overrides that launch the config."""
YAML = "yaml"
WON_SHARE = "won_share"
"""The share of bootstrap resamples in which the rule picks the config."""
SET_SHARE = "set_share"
"""The recommended row's: the share in which the rule picks it or one of `alike`."""
ALIKE = "alike"
BEST_TRADE = "best_trade"
TRADE = "trade"
BUDGET_CHECK = "budget_check"
TRAINED_DIGEST = "trained_digest"
"""Not a metric: a hash of what a config trains on (rows, shaped rewards, advantages)."""
