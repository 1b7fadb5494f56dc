"""The bot's asyncio tasks in a long run: `kill -USR1 <pid>` prints every task's stack to stderr
(what the run waits on), and which tasks are the bot's background work."""

from __future__ import annotations

import asyncio
import signal
import sys
from typing import Any


def background(task: asyncio.Task[Any]) -> bool:
    """Background work of the bot that a request must not wait for (turns, clocks, edits): the
    harness's `ignore_task` in the chaos and fuzz runs."""
    code = getattr(task.get_coro(), "cr_code", None)
    path = getattr(code, "co_filename", "")
    return any(part in path for part in ("/lobby/", "/cogs/editor.py", "/cogs/training.py"))


def dump_tasks_on_sigusr1() -> None:
    """Install the handler in the running loop."""

    def dump() -> None:
        for task in asyncio.all_tasks():
            coro: Any = task.get_coro()
            chain = []
            while coro is not None:
                frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
                if frame is not None:
                    chain.append(f"{frame.f_code.co_name}:{frame.f_lineno}")
                coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
            print(task.get_name(), " -> ".join(chain), file=sys.stderr)
        sys.stderr.flush()

    asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, dump)
