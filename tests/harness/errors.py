"""How things fail: the harness's own failures, and Discord's error answers as raised by
discord.py."""

from __future__ import annotations

import discord


class HarnessError(AssertionError):
    """The bot did something Discord would reject, or raised/logged an unhandled error.

    Subclasses ``AssertionError`` so pytest reports it as a test failure, not an error.
    """


class HarnessTimeout(HarnessError):
    """Spawned tasks did not finish within the timeout (likely a hang or a forgotten await)."""


class _FakeResponse:
    """Just enough of ``aiohttp.ClientResponse`` for ``discord.HTTPException.__init__``."""

    def __init__(self, status: int, reason: str) -> None:
        self.status = status
        self.reason = reason
        self.headers: dict[str, str] = {}


def http_error(status: int, code: int, message: str) -> discord.HTTPException:
    """The exception discord.py raises when Discord answers ``status`` with JSON error ``code``
    (raise it from a responder to make a request fail)."""
    cls: type[discord.HTTPException] = {403: discord.Forbidden, 404: discord.NotFound}.get(
        status, discord.HTTPException
    )
    reason = {400: "Bad Request", 403: "Forbidden", 404: "Not Found"}.get(status, "Error")
    return cls(_FakeResponse(status, reason), {"code": code, "message": message})  # type: ignore[arg-type]
