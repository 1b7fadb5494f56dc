"""Typed rows returned by :class:`db.store.Store`.

All timestamps are UTC seconds since the epoch as ``float`` (``time.time()``):
cheap to compare with a deadline, trivially turned into a Discord ``<t:...>``
timestamp, and free of time-zone parsing.

Rows are frozen so a ``Match`` handed to one coroutine cannot be mutated into
disagreement with the database behind the store's back; re-read it instead.
Discord snowflakes (user/guild/channel/message ids) are ``int``; they fit in
SQLite's signed 64-bit INTEGER.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

PlayerKind = Literal["user", "agent", "local"]
MatchKind = Literal["pve", "pvp", "eve"]
MatchStatus = Literal["live", "finished", "abandoned"]
#: Which seat won: ``"0"`` (player0, who moved first), ``"1"``, or ``"draw"``.
Result = Literal["0", "1", "draw"]
Outcome = Literal["win", "loss", "draw"]

PLAYER_KINDS: frozenset[str] = frozenset({"user", "agent", "local"})
MATCH_KINDS: frozenset[str] = frozenset({"pve", "pvp", "eve"})
MATCH_STATUSES: frozenset[str] = frozenset({"live", "finished", "abandoned"})
RESULTS: frozenset[str] = frozenset({"0", "1", "draw"})
#: Accepted values for ``Match.termination`` on write.  Kept in Python rather
#: than in a SQL CHECK because this list grows with features and SQLite cannot
#: alter a CHECK constraint without rebuilding the table.
TERMINATIONS: frozenset[str] = frozenset(
    {"connect", "board_full", "no_moves", "resign", "time", "abandon", "stopped", "unreachable"}
)


@dataclass(frozen=True, slots=True)
class Player:
    """A participant: a Discord user, an AI agent, or a local console user.

    Exactly one of ``discord_id`` / ``agent_key`` / ``local_name`` is set,
    according to ``kind``; each is unique within its kind.
    """

    id: int
    kind: PlayerKind
    display_name: str
    discord_id: int | None
    agent_key: str | None
    local_name: str | None
    created_at: float
    updated_at: float

    @property
    def is_agent(self) -> bool:
        return self.kind == "agent"

    @property
    def is_human(self) -> bool:
        return self.kind != "agent"


@dataclass(frozen=True, slots=True)
class Match:
    """One game between two seats.  Seat 0 (``player0_id``) moves first."""

    id: int
    game: str
    variant: str
    kind: MatchKind
    player0_id: int
    player1_id: int
    status: MatchStatus
    #: ``None`` while live; may be ``None`` for an abandoned (voided) match.
    result: Result | None
    termination: str | None
    rated: bool
    guild_id: int | None
    channel_id: int | None
    message_id: int | None
    created_at: float
    updated_at: float
    finished_at: float | None
    #: When the player to move loses on time; ``None`` = no clock running.
    turn_deadline: float | None
    #: Clock per move for this match, seconds; ``None`` = untimed.
    turn_seconds: float | None
    #: Free-form JSON object (agent level/budget, start position, spectate delay...).
    options: dict[str, Any]
    #: Number of moves stored; the next move gets this ply number.
    ply: int

    @property
    def player_ids(self) -> tuple[int, int]:
        return (self.player0_id, self.player1_id)

    @property
    def is_live(self) -> bool:
        return self.status == "live"

    def seat_of(self, player_id: int) -> int | None:
        """Seat (0 or 1) of ``player_id``, or ``None`` if not in this match."""
        if player_id == self.player0_id:
            return 0
        if player_id == self.player1_id:
            return 1
        return None

    @property
    def winner_id(self) -> int | None:
        """Player id of the winner; ``None`` for a draw, no result, or live."""
        if self.result == "0":
            return self.player0_id
        if self.result == "1":
            return self.player1_id
        return None

    def outcome_for(self, player_id: int) -> Outcome | None:
        """'win'/'loss'/'draw' from ``player_id``'s point of view, or ``None``."""
        seat = self.seat_of(player_id)
        if seat is None or self.result is None:
            return None
        if self.result == "draw":
            return "draw"
        return "win" if self.result == str(seat) else "loss"


ChallengeStatus = Literal["pending", "accepted", "declined", "withdrawn", "expired"]
CHALLENGE_STATUSES: frozenset[str] = frozenset(
    {"pending", "accepted", "declined", "withdrawn", "expired"}
)


@dataclass(frozen=True, slots=True)
class Challenge:
    """One person's challenge to another; answered once (see ``db.challenges``)."""

    id: int
    game: str
    challenger_id: int
    opponent_id: int
    guild_id: int | None
    channel_id: int | None
    message_id: int | None
    status: ChallengeStatus
    created_at: float
    expires_at: float
    answered_at: float | None
    match_id: int | None


@dataclass(frozen=True, slots=True)
class MoveRow:
    """One stored move.  ``ply`` is 0-based: the first move of a match is ply 0."""

    match_id: int
    ply: int
    #: Text notation; the engine owns its meaning (``db`` never parses it).
    move: str
    player_id: int
    created_at: float
    think_ms: int | None
    #: The agent that chose this move instead of the seat's own (its job failed); else None.
    fallback: str | None = None


@dataclass(frozen=True, slots=True)
class NewMove:
    """A move to store with :meth:`db.matches.Matches.commit_step`."""

    move: str
    player_id: int
    think_ms: int | None = None
    fallback: str | None = None


@dataclass(frozen=True, slots=True)
class Finish:
    """How :meth:`db.matches.Matches.commit_step` ends a match (with its rating changes)."""

    status: MatchStatus
    result: Result | None
    termination: str
    #: New ratings: rows, or a function computing them inside the transaction (RatingFn).
    ratings: Any = None


@dataclass(frozen=True, slots=True)
class OutboxItem:
    """Work to do after a commit (see the ``outbox`` table)."""

    id: int
    kind: str
    match_id: int | None
    payload: dict[str, Any]
    created_at: float
    attempts: int
    last_error: str | None


@dataclass(frozen=True, slots=True)
class MemoryWrite:
    """Rows of one memory (kind, name) and how many games they add, for one transaction."""

    kind: str
    name: str
    rows: Mapping[bytes, bytes]
    games: int = 0
    #: Also count the games under this key of the memory's meta ("matches" learned from,
    #: "trained" by jobs), so games_trained can be checked against its sources.
    counter: str | None = None


@dataclass(frozen=True, slots=True)
class Rating:
    """A player's skill rating in one game (OpenSkill-style mu/sigma).

    When passed to ``commit_step``, ``updated_at`` may be left ``None``; the
    store stamps it.  Rows read back always carry a float.
    """

    player_id: int
    game: str
    mu: float
    sigma: float
    games: int = 0
    wins: int = 0
    draws: int = 0
    losses: int = 0
    updated_at: float | None = None

    @property
    def ordinal(self) -> float:
        """Conservative skill estimate used for ranking: mu - 3*sigma."""
        return self.mu - 3.0 * self.sigma


@dataclass(frozen=True, slots=True)
class RatingPoint:
    """A player's rating in one game right after one of their rated games (for charts)."""

    game: str
    match_id: int
    mu: float
    sigma: float
    games: int  # rated games played by then
    at: float

    @property
    def ordinal(self) -> float:
        """The rating shown everywhere: mu - 3 sigma."""
        return self.mu - 3 * self.sigma


@dataclass(frozen=True, slots=True)
class LeaderboardEntry:
    rank: int  # 1-based position in the returned list
    player: Player
    rating: Rating


@dataclass(frozen=True, slots=True)
class PlayerStats:
    """Per-game totals over all finished matches (rated or not), plus the rating."""

    game: str
    played: int
    wins: int
    draws: int
    losses: int
    rating: Rating | None


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    match: Match
    seat: int
    opponent: Player
    outcome: Outcome | None  # None for a match abandoned without result


@dataclass(frozen=True, slots=True)
class MemoryInfo:
    """Summary of one learning agent's stored memory (see ``db.memory.AgentMemory``)."""

    kind: str
    name: str
    rows: int
    games_trained: int
    meta: dict[str, Any] = field(default_factory=dict)
    created_at: float = 0.0
    updated_at: float = 0.0
