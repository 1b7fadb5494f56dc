"""Errors the lobby raises for people: each message is fit to show as-is (ephemerally)."""

from __future__ import annotations

from db import errors as dberr
from db.errors import StoreError


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


class LimitReached(BadRequest):
    """A member is at one of the limits on what they may have running."""


class ChallengeOver(LobbyError):
    """A challenge that was already answered, or has expired."""


class TrainingRefused(LobbyError):
    """A training request that cannot run (not a learning agent, a job already running...)."""


class StoreFailed(LobbyError):
    """The store refused or could not read what a request needed (a corrupt row, a store that
    is closing). The lobby logs the store's own error; people see this plain line."""


def translate(exc: StoreError) -> LobbyError:
    """The lobby's words for an error of the store that reached a front end's request."""
    if isinstance(exc, dberr.MatchNotFoundError):
        return MatchNotFound(f"there is no match #{exc.match_id}")
    if isinstance(exc, dberr.MatchNotLiveError):
        return MatchOver(f"match #{exc.match_id} is over")
    if isinstance(exc, dberr.StaleMoveError):
        return StaleAction("that board is out of date: someone moved first")
    if isinstance(exc, dberr.ChallengeClosedError):
        return ChallengeOver("that challenge was already answered or has expired")
    if isinstance(exc, dberr.StoreClosedError):
        return StoreFailed("the bot is shutting down; try again when it is back")
    return StoreFailed("the bot's records for that could not be read; the error has been logged")
