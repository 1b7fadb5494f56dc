"""Exceptions raised by the persistence layer: the one error language of both backends.

Callers (the lobby) react differently to "someone else already moved" than to
"this database is from the future", so every failure the lobby is expected to
handle has its own class.  All of them derive from :class:`StoreError` so a
caller can still catch the whole family.

A failure of the database itself is a :class:`BackendError`, sorted by what a caller can do
about it: :class:`TransientError` (busy, locked, a lost connection, a server restarting:
retry later; :class:`FullError`, a full disk or quota, is one of them), :class:`RefusedError`
(a constraint or a value the schema will not take: a bug, so a retry fails the same way) and
:class:`CorruptDatabaseError` (a damaged file or page). Each backend turns its driver's
exceptions (``sqlite3``, ``asyncpg``, the network's ``OSError``) into these at one boundary
(``db.sqlite.translated``, ``db.postgres.translated``), keeping the driver's message and
chaining its exception as the cause, so nothing above ``db`` knows which database runs.
"""

from __future__ import annotations


class StoreError(Exception):
    """Base class for every error raised on purpose by ``db``."""


class StoreClosedError(StoreError):
    """The store was used after :meth:`Store.close`."""


class SchemaTooNewError(StoreError):
    """The file was written by a newer version of the bot.

    We refuse to open it rather than guess: older code writing into a newer
    schema could silently violate invariants the newer code relies on.
    """

    def __init__(self, path: str, found: int, known: int) -> None:
        super().__init__(
            f"database {path!r} has schema version {found}, but this code only knows "
            f"versions up to {known}; upgrade the bot (the file was left untouched)"
        )
        self.path = path
        self.found = found
        self.known = known


class MigrationError(StoreError):
    """A migration failed; its transaction was rolled back, the file is unchanged."""


class NotFoundError(StoreError, LookupError):
    """A row the caller referred to by id does not exist."""


class MatchNotFoundError(NotFoundError):
    def __init__(self, match_id: int) -> None:
        super().__init__(f"match {match_id} does not exist")
        self.match_id = match_id


class PlayerNotFoundError(NotFoundError):
    def __init__(self, player_id: int) -> None:
        super().__init__(f"player {player_id} does not exist")
        self.player_id = player_id


class MatchNotLiveError(StoreError):
    """A move/finish was attempted on a match that is already over.

    Typical cause: a click that raced with a resignation or a time forfeit.
    The lobby should re-render the final state, not retry.
    """

    def __init__(self, match_id: int, status: str) -> None:
        super().__init__(f"match {match_id} is {status}, not live")
        self.match_id = match_id
        self.status = status


class StaleMoveError(StoreError):
    """The caller's view of the match is out of date (someone moved first).

    This is how two concurrent clicks on the same position are made to apply
    exactly once: both pass the ply they saw, only the first one matches.
    """

    def __init__(self, match_id: int, expected_ply: int, actual_ply: int) -> None:
        super().__init__(
            f"match {match_id}: expected ply {expected_ply} but the match is at ply {actual_ply}"
        )
        self.match_id = match_id
        self.expected_ply = expected_ply
        self.actual_ply = actual_ply


class StaleRatingError(StoreError):
    """A rating update was computed from an outdated rating row.

    Two matches of the same player (typically an agent) finishing at the same
    time would otherwise silently lose one rating update.  Re-read the ratings
    and retry, or give ``commit_step`` a callable so the new ratings are
    computed inside the transaction.
    """

    def __init__(self, player_id: int, game: str, stored_games: int, new_games: int) -> None:
        super().__init__(
            f"rating of player {player_id} in {game}: update has games={new_games} but the "
            f"stored row has games={stored_games} (expected {stored_games + 1})"
        )
        self.player_id = player_id
        self.game = game
        self.stored_games = stored_games
        self.new_games = new_games


class CorruptError(StoreError):
    """Stored data the store cannot read: a retry reads the same; it needs repair by hand."""


class CorruptRowError(CorruptError):
    """A stored row does not decode into the expected Python value.

    Raised instead of returning garbage; names the table, the row and the column
    so the row can be inspected and repaired by hand.
    """

    def __init__(self, table: str, key: str, column: str, detail: str) -> None:
        super().__init__(f"corrupt row in {table} ({key}): column {column!r}: {detail}")
        self.table = table
        self.key = key
        self.column = column
        self.detail = detail


class BadValueError(StoreError, ValueError):
    """A value the store will not keep (a preference or a server's setting it does not know,
    or out of its range); nothing was written. The message names the value."""

    def __init__(self, what: str, value: object, expected: str) -> None:
        super().__init__(f"{what}: {value!r:.80} is not {expected}")
        self.what = what
        self.value = value


class ChallengeClosedError(StoreError):
    """A challenge was answered already, or expired (the other clicks of a burst get this)."""

    def __init__(self, challenge_id: int, status: str) -> None:
        super().__init__(f"challenge {challenge_id} is {status}")
        self.challenge_id = challenge_id
        self.status = status


class TournamentClosedError(StoreError):
    """A tournament that cannot take this change: `why` is its status (`finished`,
    `cancelled`, `running`, `open`), `full`, `joined` (the player is in already) or
    `missing`."""

    def __init__(self, tournament_id: int, why: str) -> None:
        super().__init__(f"tournament {tournament_id}: {why}")
        self.tournament_id = tournament_id
        self.why = why


class BackendError(StoreError):
    """The database failed or refused an operation (its transaction was rolled back); the
    message is the database's own. Raised as itself only for a failure no subclass names (an
    unusable URL, a statement the database cannot run)."""


class TransientError(BackendError):
    """The database could not do it now (busy or locked past the wait, a lost connection, a
    server restarting, a deadlock, an I/O error): a retry later can succeed. A commit whose
    answer was lost may have been applied: a retry must be one that a stored step refuses
    (the expected ply) or repeats harmlessly."""


class FullError(TransientError):
    """The disk or a quota is full. A retry succeeds once space is freed, so it is transient
    to callers that retry; one that reports it can tell it from a busy database."""


class RefusedError(BackendError):
    """The database will not take the data: a constraint (a key, a check, a trigger) or a
    value its column cannot hold. A bug or bad data; a retry fails the same way."""


class CorruptDatabaseError(CorruptError, BackendError):
    """The database's file or pages are damaged (SQLite: malformed, not a database)."""
