"""Processes as /proc shows them, for tests that check what a bot leaves behind."""

from __future__ import annotations

from pathlib import Path


def _stat(pid: int | str) -> list[str] | None:
    """The fields after the command name in /proc/PID/stat (None if there is no such pid)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def children_of(pid: int) -> list[int]:
    """The processes whose parent is `pid`."""
    kids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat(entry.name)
            if fields is not None and int(fields[1]) == pid:
                kids.append(int(entry.name))
    return kids


def gone(pid: int) -> bool:
    """Dead and reaped, or a zombie nobody reaps (PID 1 of a container may not)."""
    fields = _stat(pid)
    return fields is None or fields[0] == "Z"
