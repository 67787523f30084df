"""The Typer layer: it parses, calls the library (`replay_cli.api`) and prints; no polars code
lives here. `replay_cli.cli:main` is the console script."""

from replay_cli.cli.app import app, main

__all__ = ["app", "main"]
