"""`kill -USR1 <pid>` prints every asyncio task's stack to stderr: what a long run waits on."""

from __future__ import annotations

import asyncio
import signal
import sys
from typing import Any


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
