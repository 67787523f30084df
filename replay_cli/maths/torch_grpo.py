"""NeMo-RL's GRPO baseline, std and normalisation computed by torch itself (`--precision torch`):
the trainer's own masked-matmul operations, per group, so its float32 advantages come out bit for
bit on its hardware class and torch version (docs/semantics.md, `--precision torch`). torch is
an optional extra (`replay-cli[torch]`), imported only here and only when asked for."""

from __future__ import annotations

from types import ModuleType

import numpy as np

from replay_cli.errors import ConfigError
from replay_cli.maths.segments import Runs

EXTRA_HINT = "pip install 'replay-cli[torch]' (or uv sync --extra torch)"


def load_torch(device: str) -> ModuleType:
    """The torch module, checked to run on `device`; a ConfigError naming the extra without it."""
    try:
        import torch
    except ImportError:
        raise ConfigError(
            f"--precision torch computes the advantages with PyTorch, which is not installed: "
            f"{EXTRA_HINT}"
        ) from None
    if device == "cuda" and not torch.cuda.is_available():
        raise ConfigError(
            f"--device cuda: torch {torch.__version__} sees no CUDA device here; "
            "use --device cpu, or run on a machine with a GPU and a CUDA build of torch"
        )
    return torch


def describe(device: str) -> str:
    """Where the torch arithmetic ran, for the manifest: torch's version and the device's name."""
    torch = load_torch(device)
    name = torch.cuda.get_device_name() if device == "cuda" else "CPU"
    return f"torch {torch.__version__} on {device} ({name})"


def baseline_and_std(
    reward: np.ndarray, valid: np.ndarray, runs: Runs, loo: bool, device: str
) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the trainer's float32 baseline and std (`calculate_baseline_and_std_per_prompt`),
    one masked matmul per group and config as the trainer calls it. `reward` may carry a leading
    config axis; rows are sorted by group, each group's rows in the trainer's order."""
    torch = load_torch(device)
    r_all = np.atleast_2d(reward).astype(np.float32, copy=False)
    v = torch.as_tensor(valid.astype(np.float32), device=device)
    baseline = np.empty_like(r_all)
    std = np.empty_like(r_all)
    masks: dict[int, object] = {}
    # The trainer's `valid_mask[idx].sum() <= 1` test, from the exact counts (no device sync).
    peered = (runs.sum(valid) > 1).tolist()
    groups = list(zip(runs.starts.tolist(), runs.lengths.tolist(), peered, strict=True))
    for k in range(r_all.shape[0]):
        r_k = torch.as_tensor(r_all[k], device=device)
        b_k = r_k.clone()  # no peers to compare with: baseline = own reward, std 0 (advantage 0)
        s_k = torch.zeros_like(r_k)
        for start, n, has_peers in groups:
            if not has_peers:
                continue
            r = r_k[start : start + n]
            vg = v[start : start + n]
            if n not in masks:
                eye = torch.eye(n, device=device)
                masks[n] = (1 - eye) if loo else torch.ones((n, n), device=device)
            # A device tensor, as the trainer's: dividing by a host scalar would multiply by its
            # reciprocal on CUDA, which is not the trainer's rounding.
            m = vg.float().sum() - int(loo)
            b = torch.matmul(masks[n], r * vg) / m
            q = torch.matmul(masks[n], torch.pow(r, 2) * vg) / m
            b_k[start : start + n] = b
            s_k[start : start + n] = ((q - b.square()) * (m / (m - 1))).sqrt().nan_to_num(0)
        baseline[k] = b_k.cpu().numpy()
        std[k] = s_k.cpu().numpy()
    shape = np.shape(reward)
    return baseline.reshape(shape), std.reshape(shape)


def normalized_advantage(
    reward: np.ndarray, baseline: np.ndarray, std: np.ndarray, guard: np.ndarray, device: str
) -> np.ndarray:
    """`GRPOAdvantageEstimator`'s `r - b`, divided by `std + 1e-6` on the rows where `guard`
    holds, as float32 torch operations on `device`."""
    torch = load_torch(device)

    def t(x: np.ndarray) -> object:
        return torch.as_tensor(np.ascontiguousarray(x), device=device)

    adv = t(reward.astype(np.float32)) - t(baseline)
    g = t(guard)
    adv[g] = adv[g] / (t(std)[g] + 1e-6)
    return adv.cpu().numpy()
