"""Questions asked of an input or a run beside the replay: `inspect` (describe), `explain`
(per-item attribution of nemo-rl vs internal) and `verify` (logged advantages)."""
