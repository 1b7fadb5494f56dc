"""Errors the lobby raises for people: each message is fit to show as-is (ephemerally)."""

from __future__ import annotations


class LobbyError(Exception):
    """A request that cannot be carried out; nothing was changed."""


class MatchNotFound(LobbyError):
    pass


class NotInMatch(LobbyError):
    """Someone acted on a match that is not theirs."""


class NotYourTurn(LobbyError):
    pass


class MatchOver(LobbyError):
    pass


class StaleAction(LobbyError):
    """A click from an older board: the position has moved on since it was shown."""


class BadMove(LobbyError):
    """An illegal or unparseable move."""


class BadRequest(LobbyError):
    """A bad option: unknown game, level or agent, a bad delay, ..."""
