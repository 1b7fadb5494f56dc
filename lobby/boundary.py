"""Where a front end's request leaves the lobby: an error of the store becomes the lobby's own
(`lobby.errors.translate`), so front ends know one family of errors and never the store's.

Only the outermost lobby call translates: inside the lobby (a resume reading a snapshot, an
agent's turn a request started) the store's errors keep their type, since the lobby decides on
them (a corrupt row is set aside at once, for one). A failure of the database itself
(`db.errors.BackendError`: busy, full, refused) is not the lobby's to word: it passes as it is,
and front ends tell one a retry can mend by `lobby.records.TRANSIENT`."""

from __future__ import annotations

import contextlib
import contextvars
import functools
import logging
from collections.abc import Awaitable, Callable, Iterator
from typing import ParamSpec, TypeVar

from db.errors import BackendError, CorruptRowError, StoreError
from lobby.errors import translate

log = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")

_inside: contextvars.ContextVar[bool] = contextvars.ContextVar("inside_lobby", default=False)


@contextlib.contextmanager
def front_end() -> Iterator[None]:
    """Run a front end's listener: its calls into the lobby (and the tasks it starts) are
    requests again, translated at their own boundary."""
    token = _inside.set(False)
    try:
        yield
    finally:
        _inside.reset(token)


def boundary(method: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """Mark a lobby coroutine that front ends call."""

    @functools.wraps(method)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        if _inside.get():
            return await method(*args, **kwargs)
        token = _inside.set(True)
        try:
            return await method(*args, **kwargs)
        except StoreError as exc:
            if isinstance(exc, BackendError):  # the database failed: the front end's to report
                raise
            if isinstance(exc, CorruptRowError):
                log.error("%s: %s", method.__qualname__, exc, exc_info=exc)
            raise translate(exc) from exc
        finally:
            _inside.reset(token)

    return wrapper
