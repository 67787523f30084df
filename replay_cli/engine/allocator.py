"""Keep freed memory in the process heap during a replay (glibc only).

A chunk's arrays are tens of MiB each and short-lived. glibc hands blocks that large back to the
kernel when they are freed, so every new array page-faults its memory in again, and on this
project's machines a fault costs more than the arithmetic done on the page. Raising the mmap
threshold to its maximum (32 MiB) and not trimming the heap lets the next chunk reuse the memory: a
quarter of a sweep's time on two threads (docs/benchmarks.md). Peak memory is unchanged; the process
keeps its freed heap for reuse. `run_replay` calls it, once per process."""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from functools import cache

M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3
MMAP_THRESHOLD_MAX = 32 * 2**20  # glibc refuses larger values on 64-bit
KEEP = 2**31 - 1


@cache
def keep_freed_memory() -> bool:
    """Tune glibc's malloc once per process; False where it is not glibc."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    ok = mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_MAX) == 1
    return ok and mallopt(M_TRIM_THRESHOLD, KEEP) == 1 and mallopt(M_TOP_PAD, 64 * 2**20) == 1
