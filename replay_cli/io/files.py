"""File safety: outputs appear whole or not at all, and an existing output is replaced only with
--force. Inputs are never written."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from replay_cli.errors import OutputExistsError


def _umask() -> int:
    """The process's umask (read by setting it and setting it back: there is no getter)."""
    umask = os.umask(0o022)
    os.umask(umask)
    return umask


def refuse_existing(path: Path, force: bool, what: str = "Output") -> None:
    """The one refusal of an existing output (checked before any work is done)."""
    if Path(path).exists() and not force:
        raise OutputExistsError(f"{what} {path} already exists.\n\nPass --force to replace it.")


@contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A temporary sibling path that replaces `path` when the block succeeds (readers never see
    a half-written file); on error it is removed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; a written file gets the usual mode
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def check_out_dir(out: Path, force: bool, what: str = "Output directory") -> None:
    """Refuse an existing output directory unless force, and one that cannot be created (a
    regular file in its path, a parent that cannot be written): checked before any work."""
    out = Path(out)
    refuse_existing(out, force, what)
    if out.exists() and not out.is_dir():
        raise OutputExistsError(f"{what} {out} exists and is not a directory.")
    check_writable(out, what)


def check_out_file(out: Path, force: bool, what: str = "Output") -> None:
    """Refuse a directory where an output file is to go, an existing file unless force, and a
    file that cannot be created (a regular file in its path, a parent that cannot be written):
    checked before any work, so no command ends in a traceback from the write."""
    out = Path(out)
    if out.is_dir():
        raise OutputExistsError(f"{what} {out} is a directory; name a file to write.")
    refuse_existing(out, force, what)
    check_writable(out, what)


def check_writable(out: Path, what: str = "Output") -> None:
    """The nearest existing ancestor of `out` is a directory this process may write in."""
    parent = Path(out).absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise OutputExistsError(
            f"{what} {out} cannot be created: {parent} is a file, not a directory."
        )
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputExistsError(f"{what} {out} cannot be created: {parent} is not writable.")


@contextmanager
def staged_directory(out: Path, force: bool = False) -> Iterator[Path]:
    """A temporary sibling directory that replaces `out` by rename when the block succeeds.

    Readers see the whole report or none of it; on any error (or a kill) only the hidden temporary
    directory is left behind, and an error removes it."""
    out = Path(out)
    check_out_dir(out, force)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        # mkdtemp makes 0700; the report gets the mode mkdir gives, so a teammate or a
        # TensorBoard server running as another user can read it where the umask allows.
        os.chmod(tmp, 0o777 & ~_umask())
        yield tmp
        _swap_into_place(tmp, out, force)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _swap_into_place(tmp: Path, out: Path, force: bool) -> None:
    """rename() the finished directory over the target; an old report is removed only after."""
    appeared = OutputExistsError(f"Output directory {out} appeared while the report was written.")
    if out.exists():
        if not force:
            raise appeared
        old = out.with_name(f".{out.name}.old-{os.getpid()}")
        os.replace(out, old)
        os.replace(tmp, out)
        shutil.rmtree(old, ignore_errors=True)
    else:
        try:
            os.replace(tmp, out)
        except OSError:
            raise appeared from None
