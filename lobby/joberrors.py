"""How a job of the engine pool (`lobby.pool`) fails."""

from __future__ import annotations


class JobFailed(Exception):
    """A pool job produced no result. (An exception of the job's own is re-raised as itself.)"""


class JobTimeout(JobFailed):
    """The job ran past its cap; its worker was killed."""


class WorkerCrashed(JobFailed):
    """The worker died while running the job (crash, os._exit, segfault, OOM kill)."""


class PoolClosed(JobFailed):
    """The pool was closed before the job could finish."""
