"""The lobby's records: who plays, where a match is shown, a match as front ends see it, and
the lobby's settings. Plain data, shared by every part of the lobby and by the front ends."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal

from db.errors import TransientError
from engine.agents.base import AgentSpec, Budget
from engine.games.base import GameState, Move
from lobby.models import Challenge, Match, Player

Listener = Callable[["Snapshot"], Awaitable[None]]
ChallengeListener = Callable[[Challenge], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Person:
    """A human as a front end knows them: a Discord user id, or a local console name."""

    kind: Literal["user", "local"]
    ident: int | str
    name: str


@dataclass(frozen=True, slots=True)
class Where:
    """Where a match is shown (Discord ids; all None in the console)."""

    guild_id: int | None = None
    channel_id: int | None = None
    message_id: int | None = None  # the board's message, when it exists before the match
    #: Makes the message that will show a new match, called once the request is known to be
    #: valid: a Discord front end defers then, so the match is stored with its message.
    show: Callable[[], Awaitable[int | None]] | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Seat:
    player: Player
    spec: AgentSpec | None = None
    budget: Budget | None = None
    level: str | None = None

    @property
    def is_agent(self) -> bool:
        return self.spec is not None

    @property
    def name(self) -> str:
        return self.player.display_name


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A match as stored, with its position: what front ends render."""

    match: Match
    state: GameState
    seats: tuple[Seat, Seat]
    last_move: Move | None = None

    @property
    def id(self) -> int:
        return self.match.id

    @property
    def live(self) -> bool:
        return self.match.status == "live"

    @property
    def seat_to_move(self) -> Seat:
        return self.seats[self.state.to_move()]

    def seat_index(self, player_id: int) -> int | None:
        for i, seat in enumerate(self.seats):
            if seat.player.id == player_id:
                return i
        return None


@dataclass(slots=True)
class LobbyConfig:
    turn_seconds: float = 600.0  # a human's clock per move
    rate_botmatches: bool = False  # agent-vs-agent spectator games leave ratings alone
    pair_daily_rated_cap: int = 10  # rated games per pair of people per day (anti-farming)
    botmatch_delay: float = 1.0  # default seconds between moves of a spectated match
    #: After a restart a person to move has at least this long (the downtime was not theirs).
    resume_grace: float = 120.0
    #: An agent's move that cannot be stored (a locked or full database) is retried this often,
    #: with this first pause (doubling); after that the clock tick starts the turn again.
    store_retries: int = 4
    store_retry_seconds: float = 0.25
    #: A match failing this many clock ticks or resumes in a row is set aside.
    max_failures: int = 3
    #: What one Discord member may have running (None: no limit). The console's local players
    #: own the machine: limits do not apply to them.
    max_bot_games: int | None = 3  # live games against the bot, per member
    max_botmatches: int | None = 2  # live bot matches a member started
    max_guild_botmatches: int | None = 5  # live bot matches in one server
    max_pending_challenges: int | None = 5  # unanswered challenges a member sent
    challenge_cooldown: float = 30.0  # seconds before the same pair may be challenged again
    #: Tournaments open or running in one server (one a channel), and entrants in one.
    max_tournaments: int = 3
    max_tournament_players: int = 32
    challenge_seconds: float = 300.0  # a challenge expires after this
    #: Only the bot's own learning opponents (engine/agents/opponents.py) write learned memory;
    #: `learn_any` lets every learning agent learn (tests of other learning agents).
    learn_any: bool = False
    #: Every request may name agents by raw spec (still checked and bounded): for offline
    #: tools and tests; the bot passes `raw_ok` per request instead (its owner only).
    raw_specs: bool = False
    #: Hints a person may ask for in one game against the bot (each makes the game unrated).
    max_hints: int = 3
    hint_seconds: float = 1.5  # how long the hint's search may take
    #: Seconds an analysis of a finished match may take (None: the engine's budget per game)
    #: and how many analyses may be under way or waiting at once.
    analysis_seconds: float | None = None
    max_analyses: int = 4
    #: The server whose settings (`lobby.settings`) apply to requests from no server: the
    #: console's one server; None (the Discord bot: a DM) means the bot's own settings.
    home_server: int | None = None
    seed: int | None = None


@dataclass(slots=True)
class Cached:
    state: GameState
    last_move: Move | None


#: Errors a retry can mend: the database was busy, full for a moment, or failed an I/O.
TRANSIENT: tuple[type[BaseException], ...] = (TransientError,)


@dataclass(slots=True)
class MatchLock:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    users: int = 0


@dataclass(frozen=True, slots=True)
class AgentChoice:
    spec: AgentSpec
    budget: Budget
    level: str | None
    key: str  # the agent player's identity
    name: str  # how people see it
