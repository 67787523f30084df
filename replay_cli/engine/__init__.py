"""Replay configs over rollouts chunk by chunk: config batches on threads (batched numpy path and
polars plans), the group, step and diagnostic tables, and the same on Ray.

`from replay_cli.engine import run_replay` is the entry point."""

from replay_cli.engine.run import run_replay

__all__ = ["run_replay"]
