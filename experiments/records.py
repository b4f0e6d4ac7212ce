"""The runner's records on a disk that may fill up or fail (issue 27, item 1).

Every file the runner writes for the record of a run (``meta.json``, ``experiment.yaml``, ``routes.json``,
the node configurations, ``summary.csv``) goes through :func:`write_whole`: written to a temporary file,
synced and renamed over the old one, so a reader sees the old file or the new one, never half of either.
A write that fails raises :class:`routing.drivers.eventlog.WriteError`, which names the file and the reason ("No space left on
device"); the old file is kept as it was.

So that the ending of a run can still be recorded on a full disk, the runner holds a :class:`Reserve`: a
file of ``RESERVE_BYTES`` in the run directory, made before anything runs.  The first write that finds the
disk full frees it and tries once more; the run then stops after the repetition in hand (the runner asks
:meth:`Reserve.used`), its nodes stopped, its ``meta.json`` and ``summary.csv`` written in the room freed.
"""
from __future__ import annotations

import errno
import os
from pathlib import Path

from routing.drivers.eventlog import WriteError

#: Room kept for the records of a run's ending: a repetition's meta.json (a few kB; tens of kB on a large
#: mesh) and summary.csv (about 300 bytes a row).
RESERVE_BYTES = 1 << 20
RESERVE_NAME = ".aspan-reserve"
#: The errors of a disk rather than of a program: the run stops and says so (exit status 1).
DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS, errno.EFBIG})

_reserve: "Reserve | None" = None


def is_disk_error(e: BaseException) -> bool:
    """An OSError of the disk (full, quota, I/O error, read-only): see DISK_ERRNOS."""
    return isinstance(e, OSError) and e.errno in DISK_ERRNOS


class Reserve:
    """``RESERVE_BYTES`` held in ``run_dir`` until a write finds the disk full (see the module docstring)."""

    def __init__(self, run_dir: Path, size: int = RESERVE_BYTES) -> None:
        self.path = Path(run_dir) / RESERVE_NAME
        self.released_by: OSError | None = None   # the write error that found the disk full
        try:
            with open(self.path, "wb") as f:
                # written, not a sparse hole: the blocks are taken (counted at write time, also on file
                # systems that allocate at write-back), so no fsync is needed
                f.write(b"\0" * size)
        except OSError as e:
            self.path.unlink(missing_ok=True)
            raise WriteError(self.path, e) from e

    def release(self, why: OSError) -> bool:
        """Free the room (once); False if it was freed before."""
        if self.released_by is not None:
            return False
        self.released_by = why
        self.path.unlink(missing_ok=True)
        return True

    def used(self) -> OSError | None:
        """The write error that freed the reserve in this process (the disk is full), or None.  (A worker
        process of the runner that meets a full disk raises the error, which ends the run's pool.)"""
        return self.released_by

    def close(self) -> None:
        self.path.unlink(missing_ok=True)


def hold_reserve(run_dir: Path) -> Reserve:
    """Make the run's reserve; :func:`write_whole` frees it on a full disk.  WriteError when even it cannot be
    written (the disk is full before the run starts)."""
    global _reserve
    _reserve = Reserve(run_dir)
    return _reserve


def drop_reserve() -> None:
    """The run has ended: its reserve goes (the run directory keeps no trace of it)."""
    global _reserve
    if _reserve is not None:
        _reserve.close()
        _reserve = None


def write_whole(path: Path, data: str | bytes) -> None:
    """Write ``path`` whole or not at all (temporary file, fsync, rename); on a full disk the run's reserve
    is freed and the write tried once more.  WriteError names the file and the reason."""
    path = Path(path)
    raw = data.encode() if isinstance(data, str) else data
    try:
        _write_renamed(path, raw)
    except OSError as e:
        if e.errno != errno.ENOSPC or _reserve is None or not _reserve.release(WriteError(path, e)):
            raise WriteError(path, e) from e
        try:
            _write_renamed(path, raw)
        except OSError as again:
            raise WriteError(path, again) from again


def _write_renamed(path: Path, raw: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(raw)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
