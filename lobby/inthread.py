"""Engine jobs in threads of the bot's own process, for a pool without workers (`workers=0`:
tests of the code above the pool). One job at a time, in order, like a single worker, with the
same caps; but a thread cannot be killed, so a job past its cap raises `JobTimeout` and goes
on running in the background."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import faults
from engine import warm as warming
from lobby.workers import Job, no_signals


class InThread:
    """The threads that run a worker-less pool's jobs."""

    def __init__(self) -> None:
        self._executor = ThreadPoolExecutor(
            max_workers=4, thread_name_prefix="engine", initializer=no_signals
        )
        self._lock = asyncio.Lock()
        self._closed = False

    async def warm_up(self) -> None:
        """The whole warm-up, before the first job."""
        await asyncio.get_running_loop().run_in_executor(self._executor, warming.warm_up)

    async def run(self, job: Job) -> tuple[str, Any]:
        """Run a job: ("ok", its result), or how it failed: ("closed", None), ("crash",
        None) or ("timeout", None). A job's own exception is raised; `job.started` is set if
        it ran."""
        async with self._lock:  # one job at a time, in order, like a single worker
            if self._closed:
                return "closed", None
            fault = faults.fire("job")  # a thread cannot crash or be killed: act it out
            if fault == "crash":
                return "crash", None
            if fault == "hang":
                await asyncio.sleep(job.cap)
                return "timeout", None
            job.started = time.monotonic()
            loop = asyncio.get_running_loop()
            work = loop.run_in_executor(self._executor, job.fn, *job.args)
            try:
                return "ok", await asyncio.wait_for(work, job.cap)
            except TimeoutError:
                return "timeout", None

    def close(self) -> None:
        """No job starts any more; queued ones are dropped."""
        self._closed = True
        self._executor.shutdown(wait=False, cancel_futures=True)
