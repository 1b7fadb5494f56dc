"""`python bot.py` as the tests run it: the console on a database of the test's own, with one
engine worker and no Discord token, fed a script through a pipe (`run_bot`) or typed at in a
pseudo-terminal (`Terminals`)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

import pexpect

from tests.machine import scaled

ROOT = Path(__file__).resolve().parent.parent
BOT = ROOT / "bot.py"
NONE: Mapping[str, str] = MappingProxyType({})


def bot_env(db: str | Path, user: str = "you", extra: Mapping[str, str] = NONE) -> dict[str, str]:
    """This process's environment for a console bot on `db` (a SQLite path, or a PostgreSQL
    URL): one engine worker, an empty Discord token (it beats any .env: the console, not
    Discord), no fault hook, `user` as the login name; `extra` last, over all of these."""
    where = "BOARDBOT_DATABASE_URL" if str(db).startswith("postgresql://") else "BOARDBOT_DB"
    return {
        **os.environ,
        where: str(db),
        "BOARDBOT_WORKERS": "1",
        "DISCORD_TOKEN": "",
        "BOARDBOT_FAULT": "",
        "USER": user,
        "LOGNAME": user,
        **extra,
    }


def run_bot(
    db: str | Path,
    script: str,
    cwd: Path,
    *,
    timeout: float = 120,
    extra: Mapping[str, str] = NONE,
) -> subprocess.CompletedProcess[str]:
    """`python bot.py` in `cwd` reading `script`, to its end; its output as UTF-8 text.
    `timeout`: seconds on the reference machine (scaled to this one's speed); `extra`: more
    environment variables (`bot_env`)."""
    return subprocess.run(
        [sys.executable, str(BOT)],
        input=script,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=scaled(timeout),
        env=bot_env(db, extra={"PYTHONIOENCODING": "utf-8", **extra}),
        cwd=cwd,
    )


class Terminals:
    """The bots one test starts in pseudo-terminals; `close` ends those still running (a test
    that fails half-way leaves no bot, with its workers, behind)."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self.spawned: list[pexpect.spawn] = []

    def spawn(
        self,
        *,
        timeout: float,
        user: str = "tester",
        dimensions: tuple[int, int] | None = (50, 120),
        extra: Mapping[str, str] = NONE,
    ) -> pexpect.spawn:
        """`python bot.py` in a pseudo-terminal of `dimensions` (rows, columns; None: pexpect's
        own) on `term.db` in the test's folder; `timeout` is pexpect's for each `expect`."""
        term = pexpect.spawn(
            sys.executable,
            [str(BOT)],
            cwd=str(self.cwd),
            env=bot_env(self.cwd / "term.db", user, extra),
            encoding="utf-8",
            timeout=timeout,
            dimensions=dimensions,
        )
        self.spawned.append(term)
        return term

    def close(self) -> None:
        while self.spawned:
            term = self.spawned.pop()
            if term.isalive():
                term.close(force=True)
