"""Files the gate reads before the installer reads them again: regular files only, and where a
client looks for them.

The gate judges what a requirement file, a manifest, a lockfile or an `.npmrc` says, then the
installer opens the same path again. A named pipe, a device, a socket or `/dev/stdin` can give the
second reader other bytes than the first: a pipe written twice had the gate judge `gamma` and pip
install a denied package from an `--index-url` the gate never saw. Anything but a regular file is
refused. It is opened without blocking, so a pipe nobody writes to cannot hang the gate.

Clients find a project (and the files beside it) from the working directory up: `ancestors`, and
the first of them holding a file, `nearest`.

Standard library only, like the whole gate.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable


class RefusedFile(OSError):
    """A file the gate will not read."""

    def __str__(self) -> str:  # the reader names the file
        return self.strerror


class NotARegularFile(RefusedFile):
    """A pipe, device, socket or directory where the gate reads a file the installer reads too."""


class TooLarge(RefusedFile):
    """A file longer than the bound its reader sets (a hostile tree's file could be any size)."""


def read_regular(path: str, limit: int | None = None) -> bytes:
    """The bytes of the regular file at `path` (OSError otherwise: FileNotFoundError when it is not
    there, NotARegularFile when it is something else, TooLarge past `limit` bytes)."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):  # what was opened, not what the path says now
            raise NotARegularFile(
                errno.EINVAL,
                "not a regular file: a pipe or device could give the installer other bytes than the gate judged",
                path,
            )
        with os.fdopen(descriptor, "rb", closefd=False) as handle:
            data = handle.read() if limit is None else handle.read(limit + 1)
    finally:
        os.close(descriptor)
    if limit is not None and len(data) > limit:
        raise TooLarge(errno.EFBIG, f"larger than the {limit} bytes the gate reads of such a file", path)
    return data


def ancestors(cwd: str) -> list[str]:
    """The working directory and every directory above it, nearest first."""
    found = [os.path.abspath(cwd)]
    while os.path.dirname(found[-1]) != found[-1]:
        found.append(os.path.dirname(found[-1]))
    return found


def nearest(folders: list[str], name: str, there: Callable[[str], bool]) -> str | None:
    """The first of `folders` (nearest first, as `ancestors` lists them) holding `name`, as the
    client tests its path with `there`; None when none does."""
    return next((folder for folder in folders if there(os.path.join(folder, name))), None)
