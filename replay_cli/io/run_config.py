"""Read a NeMo-RL run config YAML as a tree: Hydra-style `defaults:` parents merged (the child
wins) and `${a.b}` interpolations resolved on lookup. parameters.py picks the trainer keys."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from replay_cli.errors import ConfigError


def read_yaml(path: Path, kind: str) -> Any:
    """Parse a YAML file; unreadable or invalid files are a ConfigError naming the file."""
    import yaml  # loaded with the first run config: `--help` does not need it

    try:
        return yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ConfigError(f"Cannot read {kind} {path}: {exc.strerror}.") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{kind[0].upper()}{kind[1:]} {path} is not valid YAML: {exc}") from None


_INTERPOLATION = re.compile(r"\$\{([^}]+)\}")
_MAX_DEPTH = 20


def _merge(base: dict[str, Any], child: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in child.items():
        both = isinstance(value, dict) and isinstance(out.get(key), dict)
        out[key] = _merge(out[key], value) if both else value
    return out


def read_tree(path: Path, depth: int = 0) -> dict[str, Any]:
    """Load a YAML file and its Hydra-style `defaults:` parents (parents first, the child wins)."""
    if depth > _MAX_DEPTH:
        raise ConfigError(f"{path}: `defaults:` chain is deeper than {_MAX_DEPTH} files.")
    data = read_yaml(path, "run config")
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"Run config {path} must be a mapping at the top level.")
    parents = data.pop("defaults", None)
    merged: dict[str, Any] = {}
    for parent in [parents] if isinstance(parents, str) else parents or []:
        if isinstance(parent, str):
            name = parent if parent.endswith((".yaml", ".yml")) else f"{parent}.yaml"
            merged = _merge(merged, read_tree((path.parent / name).resolve(), depth + 1))
    return _merge(merged, data)


def lookup(tree: dict[str, Any], dotted: str) -> Any:
    node: Any = tree
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            raise KeyError(dotted)
        node = node[part]
    return node


def resolve(tree: dict[str, Any], value: Any, key: str, depth: int = 0) -> Any:
    """Resolve `${a.b}` references to other keys of the same config (no resolvers like oc.env)."""
    if not isinstance(value, str) or "${" not in value:
        return value
    if depth > _MAX_DEPTH:
        raise ConfigError(f"Interpolation loop at {key}: {value}")
    whole = _INTERPOLATION.fullmatch(value.strip())
    try:
        if whole:
            return resolve(tree, lookup(tree, whole.group(1).strip()), key, depth + 1)
        return _INTERPOLATION.sub(
            lambda m: str(resolve(tree, lookup(tree, m.group(1).strip()), key, depth + 1)), value
        )
    except KeyError as exc:
        raise ConfigError(
            f"Run config key {key} refers to ${{{exc.args[0]}}}, which is not set."
        ) from None
