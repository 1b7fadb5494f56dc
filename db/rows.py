"""Rows in and out: the columns each model is read from, how such a row decodes (strictly,
see `Row`), and the checks a value passes before it is written.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any, TypeVar, cast

from .backend import Record
from .errors import CorruptRowError
from .models import (
    CHALLENGE_STATUSES,
    MATCH_KINDS,
    MATCH_STATUSES,
    PLAYER_KINDS,
    RESULTS,
    Challenge,
    ChallengeStatus,
    Match,
    MatchKind,
    MatchStatus,
    MoveRow,
    OutboxItem,
    Player,
    PlayerKind,
    Rating,
    RatingPoint,
    Result,
)

log = logging.getLogger(__name__)

PLAYER_COLS = "id, kind, display_name, discord_id, agent_key, local_name, created_at, updated_at"
MATCH_COLS = (
    "id, game, variant, kind, player0_id, player1_id, status, result, termination, rated, "
    "guild_id, channel_id, message_id, created_at, updated_at, finished_at, turn_deadline, "
    "turn_seconds, options, ply"
)
CHALLENGE_COLS = (
    "id, game, challenger_id, opponent_id, guild_id, channel_id, message_id, status,"
    " created_at, expires_at, answered_at, match_id"
)
OUTBOX_COLS = "id, kind, match_id, payload, created_at, attempts, last_error"
MOVE_COLS = "match_id, ply, move, player_id, created_at, think_ms, fallback"
RATING_COLS = "player_id, game, mu, sigma, games, wins, draws, losses, updated_at"

_GAME_RE = re.compile(r"^[a-z0-9_]+$")


# ---------------------------------------------------------------------- reading


class Row:
    """Strict column access: wrong types raise CorruptRowError naming the row.

    SQLite's type affinity lets e.g. text end up in a REAL column (via a
    manual edit or a bug elsewhere); we would rather fail loudly on read than
    hand the lobby a float that is really a string.
    """

    __slots__ = ("key", "row", "table")

    def __init__(self, table: str, row: Record, key_cols: Sequence[str]) -> None:
        self.table = table
        self.row = row
        self.key = ", ".join(f"{c}={row[c]!r}" for c in key_cols)

    def corrupt(self, column: str, detail: str) -> CorruptRowError:
        return CorruptRowError(self.table, self.key, column, detail)

    def opt_int(self, col: str) -> int | None:
        v = self.row[col]
        if v is None:
            return None
        if type(v) is not int:
            raise self.corrupt(col, f"expected an integer, found {v!r}")
        return v

    def get_int(self, col: str) -> int:
        v = self.opt_int(col)
        if v is None:
            raise self.corrupt(col, "unexpected NULL")
        return v

    def opt_float(self, col: str) -> float | None:
        v = self.row[col]
        if v is None:
            return None
        if type(v) not in (int, float):
            raise self.corrupt(col, f"expected a number, found {v!r}")
        return float(v)

    def get_float(self, col: str) -> float:
        v = self.opt_float(col)
        if v is None:
            raise self.corrupt(col, "unexpected NULL")
        return v

    def opt_str(self, col: str) -> str | None:
        v = self.row[col]
        if v is None:
            return None
        if type(v) is not str:
            raise self.corrupt(col, f"expected text, found {v!r}")
        return v

    def get_str(self, col: str) -> str:
        v = self.opt_str(col)
        if v is None:
            raise self.corrupt(col, "unexpected NULL")
        return v

    def choice(self, col: str, allowed: Collection[str]) -> str:
        v = self.get_str(col)
        if v not in allowed:
            raise self.corrupt(col, f"{v!r} is not one of {sorted(allowed)}")
        return v

    def get_bool(self, col: str) -> bool:
        v = self.get_int(col)
        if v not in (0, 1):
            raise self.corrupt(col, f"expected 0 or 1, found {v!r}")
        return bool(v)

    def blob(self, col: str) -> bytes:
        v = self.row[col]
        if type(v) is not bytes:
            raise self.corrupt(col, f"expected a blob, found {type(v).__name__} {v!r:.60}")
        return v

    def json_object(self, col: str) -> dict[str, Any]:
        text = self.get_str(col)
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise self.corrupt(col, f"not valid JSON ({exc}): {text!r:.80}") from None
        if not isinstance(value, dict):
            raise self.corrupt(col, f"expected a JSON object, found {type(value).__name__}")
        return value


def decode_player(row: Record) -> Player:
    r = Row("players", row, ("id",))
    return Player(
        id=r.get_int("id"),
        kind=cast(PlayerKind, r.choice("kind", PLAYER_KINDS)),
        display_name=r.get_str("display_name"),
        discord_id=r.opt_int("discord_id"),
        agent_key=r.opt_str("agent_key"),
        local_name=r.opt_str("local_name"),
        created_at=r.get_float("created_at"),
        updated_at=r.get_float("updated_at"),
    )


def decode_match(row: Record) -> Match:
    r = Row("matches", row, ("id",))
    result = r.opt_str("result")
    if result is not None and result not in RESULTS:
        raise r.corrupt("result", f"{result!r} is not one of {sorted(RESULTS)}")
    return Match(
        id=r.get_int("id"),
        game=r.get_str("game"),
        variant=r.get_str("variant"),
        kind=cast(MatchKind, r.choice("kind", MATCH_KINDS)),
        player0_id=r.get_int("player0_id"),
        player1_id=r.get_int("player1_id"),
        status=cast(MatchStatus, r.choice("status", MATCH_STATUSES)),
        result=cast(Result | None, result),
        termination=r.opt_str("termination"),
        rated=r.get_bool("rated"),
        guild_id=r.opt_int("guild_id"),
        channel_id=r.opt_int("channel_id"),
        message_id=r.opt_int("message_id"),
        created_at=r.get_float("created_at"),
        updated_at=r.get_float("updated_at"),
        finished_at=r.opt_float("finished_at"),
        turn_deadline=r.opt_float("turn_deadline"),
        turn_seconds=r.opt_float("turn_seconds"),
        options=r.json_object("options"),
        ply=r.get_int("ply"),
    )


def decodable_matches(rows: Iterable[Record]) -> list[Match]:
    return decodable(rows, decode_match)


T = TypeVar("T")

#: The rows already reported as undecodable (each is logged once, not at every read).
_REPORTED: set[tuple[str, str]] = set()
_MAX_REPORTED = 10_000


def decodable(rows: Iterable[Record], decode: Callable[[Record], T]) -> list[T]:
    """The rows that decode; each one that does not is set aside from this answer and
    logged once as a WARNING naming its table and key (a listing, a clock pass or a start
    goes on without it)."""
    out = []
    for row in rows:
        try:
            out.append(decode(row))
        except CorruptRowError as exc:
            report_corrupt(exc)
    return out


def report_corrupt(exc: CorruptRowError) -> None:
    """Log an undecodable row once per process."""
    key = (exc.table, exc.key)
    if key in _REPORTED:
        return
    if len(_REPORTED) >= _MAX_REPORTED:  # bounded: a badly damaged file must not eat memory
        _REPORTED.clear()
    _REPORTED.add(key)
    log.warning("set aside a row that does not decode: %s", exc)


def decode_challenge(row: Record) -> Challenge:
    r = Row("challenges", row, ("id",))
    return Challenge(
        id=r.get_int("id"),
        game=r.get_str("game"),
        challenger_id=r.get_int("challenger_id"),
        opponent_id=r.get_int("opponent_id"),
        guild_id=r.opt_int("guild_id"),
        channel_id=r.opt_int("channel_id"),
        message_id=r.opt_int("message_id"),
        status=cast(ChallengeStatus, r.choice("status", CHALLENGE_STATUSES)),
        created_at=r.get_float("created_at"),
        expires_at=r.get_float("expires_at"),
        answered_at=r.opt_float("answered_at"),
        match_id=r.opt_int("match_id"),
    )


def decode_outbox(row: Record) -> OutboxItem:
    r = Row("outbox", row, ("id",))
    return OutboxItem(
        id=r.get_int("id"),
        kind=r.get_str("kind"),
        match_id=r.opt_int("match_id"),
        payload=r.json_object("payload"),
        created_at=r.get_float("created_at"),
        attempts=r.get_int("attempts"),
        last_error=r.opt_str("last_error"),
    )


def decode_move(row: Record) -> MoveRow:
    r = Row("moves", row, ("match_id", "ply"))
    return MoveRow(
        match_id=r.get_int("match_id"),
        ply=r.get_int("ply"),
        move=r.get_str("move"),
        player_id=r.get_int("player_id"),
        created_at=r.get_float("created_at"),
        think_ms=r.opt_int("think_ms"),
        fallback=r.opt_str("fallback"),
    )


def decode_rating(row: Record) -> Rating:
    r = Row("ratings", row, ("player_id", "game"))
    return Rating(
        player_id=r.get_int("player_id"),
        game=r.get_str("game"),
        mu=r.get_float("mu"),
        sigma=r.get_float("sigma"),
        games=r.get_int("games"),
        wins=r.get_int("wins"),
        draws=r.get_int("draws"),
        losses=r.get_int("losses"),
        updated_at=r.get_float("updated_at"),
    )


def decode_rating_point(row: Record) -> RatingPoint:
    r = Row("rating_history", row, ("player_id", "game", "match_id"))
    return RatingPoint(
        r.get_str("game"),
        r.get_int("match_id"),
        r.get_float("mu"),
        r.get_float("sigma"),
        r.get_int("games"),
        r.get_float("at"),
    )


# ---------------------------------------------------------------------- writing


def nonempty(what: str, value: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{what} must be a non-empty string, got {value!r}")
    return value.strip()


def check_game(game: str) -> None:
    if not isinstance(game, str) or not _GAME_RE.match(game):
        raise ValueError(f"game must match {_GAME_RE.pattern}, got {game!r}")


def dump_json_object(what: str, value: Mapping[str, Any]) -> str:
    if not isinstance(value, Mapping):
        raise TypeError(f"{what} must be a mapping, got {type(value).__name__}")
    # allow_nan=False: NaN/Infinity are not JSON and SQLite's json_valid rejects them.
    return json.dumps(dict(value), allow_nan=False, separators=(",", ":"))
