"""The lobby: match lifecycle, turns, clocks, agent moves and ratings, for any front end.

Both front ends (Discord cogs and the local console) call this; it knows nothing of Discord.
The lobby owns the whole life of a match; front ends only render what it announces:

* Every step is ONE transaction: a move, the forced passes after it, and the finish with its
  ratings and the outbox row of its learning (`Store.commit_step`), committed before it is
  returned or announced, under a per-match lock so that concurrent clicks apply once (the
  store's expected-ply check backs this up).
* After every commit (a start, a move, a resume) the lobby itself schedules the agent's turn
  when an agent is to move, and announces the new snapshot to its listeners. A front end that
  fails to show a change cannot stop the game; the clock tick also restarts any agent turn
  that is not running (after a store error, say).
* Agents think in the engine pool without holding the lock, and their move is only stored if
  the match is still where it was when they started. A job that fails (a crash, a hang past
  its cap) is replaced by a cheaper agent's move (the level below, recorded with the move),
  never by a random one.
* A restart (`resume`) finishes what a kill interrupted, gives people whose clock ran out while
  the bot was down a grace, announces every live board once, and restarts agent turns. A
  match that fails there or in the clock tick is set aside on its own; the others go on.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import math
import random
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from db import errors as dberr
from db.models import (
    Challenge,
    Finish,
    HistoryEntry,
    LeaderboardEntry,
    Match,
    MoveRow,
    NewMove,
    Player,
    PlayerStats,
    Rating,
    Result,
)
from db.store import Store
from engine.agents import opponents, registry
from engine.agents.base import AgentSpec, Budget, Decision
from engine.games import new_game
from engine.games.base import GameState, IllegalMoveError, Move, NotationError
from engine.games.catalog import Offer, offer
from lobby.boundary import boundary
from lobby.errors import (
    BadMove,
    BadRequest,
    ChallengeOver,
    LimitReached,
    MatchNotFound,
    MatchOver,
    NotInMatch,
    NotYourTurn,
    StaleAction,
)
from lobby.learning import (
    LEARN,
    AgentOverview,
    LearningHub,
    TrainingJob,
    TrainingRefused,
    agents_overview,
)
from lobby.pool import EnginePool, JobFailed, PoolClosed
from lobby.ratings import Skill, rate_1v1

log = logging.getLogger(__name__)

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
    challenge_seconds: float = 300.0  # a challenge expires after this
    #: Only the bot's own learning opponents (engine/agents/opponents.py) write learned memory;
    #: `learn_any` lets every learning agent learn (tests of other learning agents).
    learn_any: bool = False
    #: Every request may name agents by raw spec (still checked and bounded): for offline
    #: tools and tests; the bot passes `raw_ok` per request instead (its owner only).
    raw_specs: bool = False
    seed: int | None = None


@dataclass(slots=True)
class _Cached:
    state: GameState
    last_move: Move | None


#: Errors a retry can mend: the database was busy, full for a moment, or failed an I/O.
TRANSIENT: tuple[type[BaseException], ...] = (sqlite3.OperationalError,)


@dataclass(slots=True)
class Lobby:
    store: Store
    pool: EnginePool
    config: LobbyConfig = field(default_factory=LobbyConfig)
    clock: Callable[[], float] = time.time
    listeners: list[Listener] = field(default_factory=list)
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep  # injectable for fast tests
    #: Memory of learning agents, learning from finished matches, training jobs.
    learning: LearningHub = field(init=False)
    #: Announced when a challenge expires (the front end greys its message).
    challenge_listeners: list[ChallengeListener] = field(default_factory=list)
    _locks: dict[int, _MatchLock] = field(default_factory=dict)
    _states: dict[int, _Cached] = field(default_factory=dict)
    _players: dict[int, Player] = field(default_factory=dict)
    #: The running agent turn of each match (at most one).
    _turns: dict[int, asyncio.Task[Snapshot]] = field(default_factory=dict)
    _failures: dict[int, int] = field(default_factory=dict)
    _rng: random.Random = field(default_factory=random.Random)
    _tasks: set[asyncio.Task[Any]] = field(default_factory=set)
    _closing: bool = False

    def __post_init__(self) -> None:
        if self.config.seed is not None:
            self._rng.seed(self.config.seed)
        self.learning = LearningHub(self.store, seat_specs=self._agent_specs)

    # ------------------------------------------------------------------ identities

    @boundary
    async def player_for(self, person: Person) -> Player:
        if person.kind == "user":
            player = await self.store.get_or_create_user(int(person.ident), person.name)
        else:
            player = await self.store.get_or_create_local(str(person.ident), person.name)
        self._remember(player)
        return player

    async def _known(self, person: Person) -> Player | None:
        """The stored player of a person, without creating one (a refused request by someone
        new must leave no row behind)."""
        if person.kind == "user":
            player = await self.store.find_user(int(person.ident))
        else:
            player = await self.store.find_local(str(person.ident))
        if player is not None:
            self._remember(player)
        return player

    def _remember(self, player: Player) -> None:
        if len(self._players) >= MAX_CACHED_PLAYERS:  # bounded: players come and go
            self._players.clear()
        self._players[player.id] = player

    @boundary
    async def known_user(self, discord_id: int) -> Person:
        """A Discord user as last seen (their stored name), for ids taken from a custom id."""
        player = await self.store.find_user(discord_id)
        name = player.display_name if player is not None else f"Player {discord_id}"
        return Person("user", discord_id, name)

    def _agent_choice(self, game: str, text: str, raw_ok: bool) -> _AgentChoice:
        """An opponent by name from the curated list; a raw agent spec only if `raw_ok` (the
        bot's owner, or the local console), and even then every value is checked and every
        budget bounded by the registry."""
        raw_ok = raw_ok or self.config.raw_specs
        try:
            opp = opponents.opponent(game, text)
        except ValueError as exc:
            if not raw_ok:
                raise BadRequest(str(exc)) from None
        else:
            key = f"{game}:{opp.name}"
            return _AgentChoice(opp.spec, opp.budget, opp.level, key, f"Bot ({opp.name})")
        try:
            spec, budget = registry.resolve(text, game)
        except ValueError as exc:
            raise BadRequest(str(exc)) from None
        label = spec.label()
        return _AgentChoice(spec, budget, None, f"{game}:{label}", f"Bot {label}"[:64])

    async def _agent_seat(self, choice: _AgentChoice) -> Seat:
        player = await self.store.get_or_create_agent(choice.key, choice.name)
        self._remember(player)
        return Seat(player, choice.spec, choice.budget, choice.level)

    # ------------------------------------------------------------------ creating matches

    @boundary
    async def start_pve(
        self,
        person: Person,
        game: str,
        level: str,
        first: str = "me",
        where: Where = Where(),
        *,
        raw_ok: bool = False,
    ) -> Snapshot:
        """A person against an opponent: a level or a curated agent by name (any agent spec
        with `raw_ok`). `game`: one of the offers (a game, or a variant of one)."""
        chosen = self._offer(game)
        if first not in ("me", "bot", "random"):
            raise BadRequest("first must be me, bot or random")
        choice = self._agent_choice(chosen.game, level, raw_ok)
        await self._limit_bot_games(person)
        human = Seat(await self.player_for(person))
        bot = await self._agent_seat(choice)
        if first == "random":
            first = self._rng.choice(["me", "bot"])
        seats = (human, bot) if first == "me" else (bot, human)
        return await self._create(chosen, "pve", seats, where, rated=True)

    @boundary
    async def start_pvp(
        self,
        first: Person,
        second: Person,
        game: str,
        where: Where = Where(),
        *,
        accepts: int | None = None,
    ) -> Snapshot:
        """Two people; `first` moves first (the front end decides who, e.g. the challenger).
        `accepts`: the challenge this match answers (accepted in the same transaction)."""
        chosen = self._offer(game)
        if first.kind == second.kind and first.ident == second.ident:
            raise BadRequest("you cannot challenge yourself")
        a, b = await self.player_for(first), await self.player_for(second)
        rated = await self._pair_may_be_rated(a.id, b.id)
        seats = (Seat(a), Seat(b))
        return await self._create(chosen, "pvp", seats, where, rated=rated, accepts=accepts)

    @boundary
    async def start_eve(
        self,
        game: str,
        first: str,
        second: str,
        where: Where = Where(),
        delay: float | None = None,
        starter: Person | None = None,
        *,
        raw_ok: bool = False,
    ) -> Snapshot:
        """Two agents, for spectators. Unrated unless the config says otherwise."""
        chosen = self._offer(game)
        delay = self.config.botmatch_delay if delay is None else delay
        if not (math.isfinite(delay) and 0 <= delay <= 60):
            raise BadRequest("delay must be between 0 and 60 seconds")
        choices = [self._agent_choice(chosen.game, text, raw_ok) for text in (first, second)]
        await self._limit_botmatches(starter, where)
        seats = (await self._agent_seat(choices[0]), await self._agent_seat(choices[1]))
        rated = self.config.rate_botmatches and seats[0].player.id != seats[1].player.id
        extra: dict[str, Any] = {"delay": delay}
        if starter is not None:
            extra["starter"] = {"kind": starter.kind, "ident": starter.ident}
        return await self._create(chosen, "eve", seats, where, rated=rated, extra=extra)

    # ------------------------------------------------------------------ limits

    async def _limit_bot_games(self, person: Person) -> None:
        cap = self.config.max_bot_games
        if cap is None or person.kind != "user":
            return
        player = await self._known(person)
        if player is not None and await self.store.count_live("pve", player_id=player.id) >= cap:
            raise LimitReached(
                f"you already have {cap} games against the bot in progress (the limit): "
                "finish or resign one, then start another"
            )

    async def _limit_botmatches(self, starter: Person | None, where: Where) -> None:
        if starter is None or starter.kind != "user":
            return
        cap = self.config.max_botmatches
        if cap is not None and await self.store.count_live("eve", starter=starter.ident) >= cap:
            raise LimitReached(
                f"you already have {cap} bot matches running (the limit): stop one or wait "
                "until one ends"
            )
        cap = self.config.max_guild_botmatches
        guild = where.guild_id if isinstance(where, Where) else None
        if (
            cap is not None
            and guild is not None
            and (await self.store.count_live("eve", guild_id=guild) >= cap)
        ):
            raise LimitReached(
                f"this server already has {cap} bot matches running (the limit): try "
                "again when one ends"
            )

    def _game(self, game: str) -> str:
        if game not in registry.GAMES:
            raise BadRequest(f"unknown game {game!r}: choose one of {', '.join(registry.GAMES)}")
        return game

    def _offer(self, text: str) -> Offer:
        try:
            return offer(text)
        except ValueError as exc:
            raise BadRequest(str(exc)) from None

    async def _create(
        self,
        chosen: Offer,
        kind: Literal["pve", "pvp", "eve"],
        seats: tuple[Seat, Seat],
        where: Where,
        rated: bool,
        extra: dict[str, Any] | None = None,
        accepts: int | None = None,
    ) -> Snapshot:
        """Store a new match (with the message that shows it, if the front end has one
        already) and start the agent's turn if an agent moves first."""
        game = chosen.game
        state = new_game(game, chosen.variant)
        if where.show is not None:  # the request is valid: the front end may show it now
            where = Where(where.guild_id, where.channel_id, await where.show())
        options: dict[str, Any] = {"seats": [_seat_options(s) for s in seats], **(extra or {})}
        deadline = None if seats[0].is_agent else self.clock() + self.config.turn_seconds
        match = await self.store.create_match(
            game,
            kind,
            seats[0].player.id,
            seats[1].player.id,
            variant=state.variant,
            rated=rated,
            guild_id=where.guild_id,
            channel_id=where.channel_id,
            message_id=where.message_id,
            turn_seconds=self.config.turn_seconds,
            turn_deadline=deadline,
            options=options,
            accepts=accepts,
        )
        self._states[match.id] = _Cached(state, None)
        snap = Snapshot(match, state, seats)
        self._schedule(snap)
        return snap

    async def _pair_may_be_rated(self, a: int, b: int) -> bool:
        since = self.clock() - 86400
        played = await self.store.count_rated_between(a, b, since)
        return played < self.config.pair_daily_rated_cap

    @boundary
    async def attach_message(
        self, match_id: int, guild_id: int | None, channel_id: int | None, message_id: int
    ) -> None:
        """Remember which message shows the match, so later moves can edit it."""
        await self.store.set_message(match_id, guild_id, channel_id, message_id)

    # ------------------------------------------------------------------ reading

    @boundary
    async def snapshot(self, match_id: int) -> Snapshot:
        match = await self.store.get_match(match_id)
        if match is None:
            raise MatchNotFound(f"there is no match #{match_id}")
        return await self._snapshot(match)

    async def _snapshot(self, match: Match) -> Snapshot:
        cached = self._states.get(match.id)
        if cached is None or cached.state.ply != match.ply:
            cached = await self._replay(match)
            if match.status == "live":
                self._states[match.id] = cached
        seats = await self._seats(match)
        return Snapshot(match, cached.state, seats, cached.last_move)

    async def _replay(self, match: Match) -> _Cached:
        """Rebuild a match's position from its stored moves (after a restart)."""
        state = new_game(match.game, match.variant)
        last: Move | None = None
        for row in await self.store.moves(match.id):
            try:
                last = state.parse_move(row.move)
                state = state.play(last)
            except (NotationError, IllegalMoveError) as exc:
                raise dberr.CorruptRowError(
                    "moves", f"match {match.id} ply {row.ply}", "move", f"does not replay: {exc}"
                ) from exc
        return _Cached(state, last)

    async def _seats(self, match: Match) -> tuple[Seat, Seat]:
        missing = [pid for pid in match.player_ids if pid not in self._players]
        if missing:
            self._players.update(await self.store.get_players(missing))
        raw = match.options.get("seats") or [None, None]
        seats = []
        try:
            for pid, opts in zip(match.player_ids, raw, strict=True):
                player = self._players[pid]
                if opts is None:
                    seats.append(Seat(player))
                    continue
                spec = AgentSpec(str(opts["agent"]), dict(opts.get("params") or {}))
                budget = Budget(**(opts.get("budget") or {}))
                seats.append(Seat(player, spec, budget, opts.get("level")))
        except (KeyError, TypeError, ValueError) as exc:
            raise dberr.CorruptRowError(
                "matches", f"id {match.id}", "options", f"malformed seats {raw!r:.200}"
            ) from exc
        return seats[0], seats[1]

    async def _agent_specs(self, match: Match) -> list[tuple[int, AgentSpec]]:
        """The (seat, spec) of the agent seats that may learn from a match (the learning hub
        asks): the bot's own learning opponents, never settings a member chose."""
        seats = await self._seats(match)
        return [
            (i, s.spec)
            for i, s in enumerate(seats)
            if s.spec is not None and self._may_learn(match.game, s.spec)
        ]

    def _may_learn(self, game: str, spec: AgentSpec | None) -> bool:
        if spec is None:
            return False
        if self.config.learn_any:
            return self.learning.learns([spec], game)
        return opponents.may_learn(game, spec)

    @boundary
    async def live_matches_of(self, person: Person, channel_id: int | None = None) -> list[Match]:
        player = await self._known(person)  # asking creates no player
        if player is None:
            return []
        matches = await self.store.live_matches(player.id)
        if channel_id is not None:
            matches = [m for m in matches if m.channel_id == channel_id]
        return matches

    # ------------------------------------------------------------------ moves

    @contextlib.asynccontextmanager
    async def _lock(self, match_id: int) -> AsyncIterator[None]:
        """The match's lock; its entry lives only while someone holds or awaits it, so forged
        ids and ended matches leave nothing behind."""
        entry = self._locks.get(match_id)
        if entry is None:
            entry = self._locks[match_id] = _MatchLock()
        entry.users += 1
        try:
            async with entry.lock:
                yield
        finally:
            entry.users -= 1
            if entry.users == 0 and self._locks.get(match_id) is entry:
                del self._locks[match_id]

    @boundary
    async def play(
        self,
        match_id: int,
        person: Person,
        move: str | Move,
        expected_ply: int | None = None,
        via: Where | None = None,
    ) -> Snapshot:
        """A person's move: theirs, their turn, legal, match live; stored before returning.

        `via`: where the request came from (a board message): it must be this match's. The
        agent's reply, if an agent is to move next, starts in the background.
        """
        snap = await self.snapshot(match_id)  # no such match: refused before anything else
        _check_origin(snap.match, via)
        player = await self._known(person)
        if player is None or snap.seat_index(player.id) is None:
            raise NotInMatch(f"match #{match_id} is not yours")
        async with self._lock(match_id):
            snap = await self.snapshot(match_id)
            seat = snap.seat_index(player.id)
            if seat is None:
                raise NotInMatch(f"match #{match_id} is not yours")
            if not snap.live:
                raise MatchOver(f"match #{match_id} is over")
            if expected_ply is not None and expected_ply != snap.match.ply:
                raise StaleAction("that board is out of date; use the latest one")
            if snap.state.to_move() != seat:
                raise NotYourTurn(f"it is {snap.seat_to_move.name}'s turn")
            if isinstance(move, str):
                try:
                    move = snap.state.parse_move(move)
                except NotationError as exc:
                    raise BadMove(str(exc)) from None
            if move not in snap.state.legal_moves():
                try:
                    snap.state.play(move)
                except IllegalMoveError as exc:
                    raise BadMove(str(exc)) from None
                raise BadMove(f"{snap.state.move_to_str(move)} is not legal here")
            snap = await self._commit(snap, [move])
        await self._emit(snap)
        self._schedule(snap)
        return snap

    async def _commit(
        self,
        snap: Snapshot,
        moves: list[Move],
        think_ms: int | None = None,
        fallback: str | None = None,
    ) -> Snapshot:
        """Store `moves` (with the forced passes after them) and, if the game ended, its
        finish, ratings and learning, all in ONE transaction. Called with the match lock held.

        `moves` may be empty: then only the forced passes and the finish (a resume mending a
        match a kill interrupted under an older version).
        """
        state, match = snap.state, snap.match
        new: list[NewMove] = []
        for i, move in enumerate(moves):
            pid = snap.seats[state.to_move()].player.id
            new.append(
                NewMove(
                    state.move_to_str(move),
                    pid,
                    think_ms if i == 0 else None,
                    fallback if i == 0 else None,
                )
            )
            state = state.play(move)
        last = moves[-1] if moves else snap.last_move
        while not state.is_over() and _only_pass(state):
            only = state.legal_moves()[0]
            new.append(NewMove(state.move_to_str(only), snap.seats[state.to_move()].player.id))
            state = state.play(only)
            last = only
        outcome = state.outcome()
        finish = None
        outbox: list[tuple[str, dict[str, Any]]] = []
        deadline: float | None = None
        if outcome is not None:
            finish, outbox = self._finish_of(
                match, snap.seats, "finished", _result(outcome.winner), outcome.termination.value
            )
        elif not snap.seats[state.to_move()].is_agent:
            deadline = self.clock() + (match.turn_seconds or self.config.turn_seconds)
        try:
            stored = await self.store.commit_step(
                match.id, match.ply, new, turn_deadline=deadline, finish=finish, outbox=outbox
            )
        except dberr.StaleMoveError:
            raise StaleAction("someone moved first; use the latest board") from None
        except dberr.MatchNotLiveError:
            raise MatchOver(f"match #{match.id} is over") from None
        self._after_commit(stored, _Cached(state, last), bool(outbox))
        return Snapshot(stored, state, snap.seats, last)

    def _finish_of(
        self,
        match: Match,
        seats: tuple[Seat, Seat],
        status: Literal["finished", "abandoned"],
        result: Result | None,
        termination: str,
    ) -> tuple[Finish, list[tuple[str, dict[str, Any]]]]:
        """How a match ends: its Finish (with the rating function of a rated result) and the
        outbox row of its learning, if an agent seat learns from it."""
        ratings = None
        if match.rated and result is not None:
            score0 = 0.5 if result == "draw" else (1.0 if result == "0" else 0.0)
            ratings = _rating_fn(match.game, match.player0_id, match.player1_id, score0)
        outbox: list[tuple[str, dict[str, Any]]] = []
        learners = [s.spec for s in seats if self._may_learn(match.game, s.spec)]
        if status == "finished" and result is not None and learners:
            outbox.append((LEARN, {}))
        return Finish(status, result, termination, ratings), outbox

    def _after_commit(self, match: Match, cached: _Cached, learns: bool) -> None:
        if match.status == "live":
            self._states[match.id] = cached
            return
        # An ended match is read again from the store if anyone asks; its caches go.
        self._states.pop(match.id, None)
        self._failures.pop(match.id, None)
        if learns:
            self.learning.kick()

    async def _finish(
        self,
        snap: Snapshot,
        status: Literal["finished", "abandoned"],
        result: Result | None,
        termination: str,
        expected_ply: int | None = None,
    ) -> Snapshot:
        """End a live match (resignation, time, stop) in one transaction. Lock held."""
        finish, outbox = self._finish_of(snap.match, snap.seats, status, result, termination)
        stored = await self.store.commit_step(
            snap.id, expected_ply, (), finish=finish, outbox=outbox
        )
        self._after_commit(stored, _Cached(snap.state, snap.last_move), bool(outbox))
        return replace(snap, match=stored)

    @boundary
    async def resign(self, match_id: int, person: Person, via: Where | None = None) -> Snapshot:
        _check_origin((await self.snapshot(match_id)).match, via)
        player = await self._known(person)
        if player is None:
            raise NotInMatch(f"match #{match_id} is not yours")
        async with self._lock(match_id):
            snap = await self.snapshot(match_id)
            seat = snap.seat_index(player.id)
            if seat is None:
                raise NotInMatch(f"match #{match_id} is not yours")
            if not snap.live:
                raise MatchOver(f"match #{match_id} is already over")
            try:
                snap = await self._finish(snap, "finished", _result(1 - seat), "resign")
            except dberr.MatchNotLiveError:
                raise MatchOver(f"match #{match_id} is already over") from None
        await self._emit(snap)
        return snap

    @boundary
    async def stop(
        self, match_id: int, termination: str = "stopped", via: Where | None = None
    ) -> Snapshot:
        """Stop a spectated agent match (the front end checks who may)."""
        _check_origin((await self.snapshot(match_id)).match, via)
        async with self._lock(match_id):
            snap = await self.snapshot(match_id)
            if not snap.live:
                raise MatchOver(f"match #{match_id} is already over")
            if snap.match.kind != "eve":
                raise BadRequest("only bot matches can be stopped; players can resign")
            try:
                snap = await self._finish(snap, "abandoned", None, termination)
            except dberr.MatchNotLiveError:
                raise MatchOver(f"match #{match_id} is already over") from None
        await self._emit(snap)
        return snap

    # ------------------------------------------------------------------ agent turns

    def _schedule(self, snap: Snapshot) -> None:
        """Start the agent's turn if an agent is to move and its turn is not running."""
        if self._closing or not snap.live or not snap.seat_to_move.is_agent:
            return
        running = self._turns.get(snap.id)
        if running is not None and not running.done():
            return
        task: asyncio.Task[Snapshot] = self.spawn(self._turn(snap.id))
        self._turns[snap.id] = task
        task.add_done_callback(functools.partial(self._turn_ended, snap.id))

    def _turn_ended(self, match_id: int, task: asyncio.Task[Snapshot]) -> None:
        if self._turns.get(match_id) is task:
            del self._turns[match_id]

    @boundary
    async def advance(self, match_id: int) -> Snapshot:
        """Wait until the agents to move have moved (starting their turn if needed); the
        snapshot after their moves."""
        snap = await self.snapshot(match_id)
        self._schedule(snap)
        task = self._turns.get(match_id)
        if task is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(task)
        return await self.snapshot(match_id)

    @boundary
    async def run_botmatch(self, match_id: int) -> Snapshot:
        """Wait for a spectated agent match to end (it runs on its own once started)."""
        return await self.advance(match_id)

    async def _turn(self, match_id: int) -> Snapshot:
        """An agent's turn, repeated while an agent is to move (a bot match plays to its end,
        one move per `delay` seconds)."""
        snap = await self.snapshot(match_id)
        moved_at: float | None = None
        while snap.live and snap.seat_to_move.is_agent and not self._closing:
            if snap.match.kind == "eve" and moved_at is not None:
                delay = float(snap.match.options.get("delay", self.config.botmatch_delay))
                await self.sleep(max(0.0, delay - (time.perf_counter() - moved_at)))
                snap = await self.snapshot(match_id)
                if not snap.live:
                    break
            moved_at = time.perf_counter()
            seat = snap.seat_to_move
            move, fallback = await self._agent_move(snap, seat)
            think_ms = int((time.perf_counter() - moved_at) * 1000)
            stored = await self._store_agent_move(snap, move, think_ms, fallback)
            if stored is None:  # resigned, stopped or timed out while the agent thought
                return await self.snapshot(match_id)
            snap = stored
            await self._emit(snap)
        return snap

    async def _store_agent_move(
        self, snap: Snapshot, move: Move, think_ms: int, fallback: str | None
    ) -> Snapshot | None:
        """Commit an agent's move if the match is still where it was; a store error that a
        retry can mend is retried a few times (the move stays right while the ply does)."""
        pause = self.config.store_retry_seconds
        for attempt in range(self.config.store_retries + 1):
            try:
                async with self._lock(snap.id):
                    current = await self.snapshot(snap.id)
                    if not current.live or current.match.ply != snap.match.ply:
                        return None
                    return await self._commit(current, [move], think_ms, fallback)
            except (StaleAction, MatchOver):
                return None
            except TRANSIENT as exc:
                if attempt == self.config.store_retries:
                    raise
                log.warning("match %s: cannot store the agent's move yet (%s)", snap.id, exc)
                await self.sleep(pause)
                pause *= 2
        return None

    async def _agent_move(self, snap: Snapshot, seat: Seat) -> tuple[Move, str | None]:
        """The agent's move, and which fallback chose it if the agent's own job failed.

        A job that crashes its worker, hangs past its cap or raises is replaced by the level
        below (in the pool), then by the easy level computed here: a person waiting for a bot
        must never wait forever, and a rated game is never handed a random move.
        """
        assert seat.spec is not None and seat.budget is not None
        legal = snap.state.legal_moves()
        try:
            move = await self._choose(snap, seat.spec, seat.budget)
            if move in legal:
                return move, None
            log.error("agent %s chose an illegal move %r", seat.spec.label(), move)
        except PoolClosed:
            raise
        except JobFailed as exc:
            log.warning("agent %s in match %s: %s", seat.spec.label(), snap.id, exc)
        except Exception:
            log.exception("agent %s failed in match %s", seat.spec.label(), snap.id)
        game = snap.match.game
        below = _level_below(game, seat)
        if below is not None:
            level = registry.LEVELS[game][below]
            try:
                move = await self._choose(snap, level.spec, level.budget)
                if move in legal:
                    return move, below
            except PoolClosed:
                raise
            except Exception as exc:
                log.warning("fallback %s failed in match %s: %s", below, snap.id, exc)
        easy = registry.LEVELS[game]["easy"]
        seed = self._rng.randrange(2**63)
        decision = await asyncio.to_thread(_choose_here, snap.state, easy.spec, easy.budget, seed)
        return decision.move, "easy (computed in the bot)"

    async def _choose(self, snap: Snapshot, spec: AgentSpec, budget: Budget) -> Move:
        memory = await self._memory_for(spec, snap.state)
        decision = await self.pool.choose(
            snap.state,
            spec,
            budget,
            self._rng.randrange(2**63),
            memory=memory,
            urgent=snap.match.kind == "pve",  # a person waits; spectators can wait a little
        )
        return decision.move

    async def _memory_for(self, spec: AgentSpec, state: GameState) -> dict[bytes, bytes] | None:
        """The memory rows a learning agent asks for here (None for other agents)."""
        try:
            return await self.learning.rows_for(spec, state)
        except Exception:  # play from what the agent has rather than not at all
            log.exception("cannot load the memory of %s", spec.label())
            return {}

    # ------------------------------------------------------------------ training

    def train(
        self,
        game: str,
        agent: str,
        games: int,
        opponent: str | None = None,
        seed: int | None = None,
        *,
        raw_ok: bool = False,
    ) -> TrainingJob:
        """Start training a learning agent's memory in the engine pool (in the background).

        `agent` names one of the bot's own learning opponents and `opponent` (optional) any
        opponent, by name; raw specs only with `raw_ok` (the owner), still checked and
        bounded. The front end checks who may; BadRequest if the agent does not learn, a job
        is already running (one at a time in all) or the numbers are off.
        """
        game = self._game(game)
        raw_ok = raw_ok or self.config.raw_specs
        learner = self._agent_choice(game, agent, raw_ok)
        if not raw_ok and not opponents.may_learn(game, learner.spec):
            learning = [o.name for o in opponents.opponents(game) if o.learns]
            raise BadRequest(f"{agent.strip()} does not learn: train {' or '.join(learning)}")
        opp = None
        if opponent:
            choice = self._agent_choice(game, opponent, raw_ok)
            opp = (choice.spec, choice.budget)
        try:
            return self.learning.start_training(
                self.pool,
                game,
                learner.spec,
                learner.budget,
                games,
                opponent=opp,
                seed=seed,
                label=agent.strip(),
            )
        except (ValueError, TrainingRefused) as exc:
            raise BadRequest(str(exc)) from None

    # ------------------------------------------------------------------ challenges

    @boundary
    async def challenge(
        self, challenger: Person, opponent: Person, game: str, where: Where = Where()
    ) -> Challenge:
        """A challenge from one person to another, expiring after `challenge_seconds`;
        refused past the limits (pending challenges per person, a pause per pair). The
        challenge keeps the offer's key (a game, or a variant of one)."""
        game = self._offer(game).key
        if challenger.kind == opponent.kind and challenger.ident == opponent.ident:
            raise BadRequest("you cannot challenge yourself")
        now = self.clock()
        a, b = await self._known(challenger), await self._known(opponent)
        if a is not None and b is not None and challenger.kind == "user":
            last = await self.store.last_challenge_between(a.id, b.id)
            wait = 0.0 if last is None else last.created_at + self.config.challenge_cooldown - now
            if wait > 0:
                raise LimitReached(
                    f"you challenged {opponent.name} a moment ago: you can challenge them "
                    f"again in {math.ceil(wait)} s"
                )
        cap = self.config.max_pending_challenges
        if (
            a is not None
            and cap is not None
            and challenger.kind == "user"
            and len(await self.store.pending_challenges(challenger_id=a.id)) >= cap
        ):
            raise LimitReached(
                f"you have {cap} challenges waiting for an answer (the limit): wait until "
                "one is answered or expires"
            )
        a, b = await self.player_for(challenger), await self.player_for(opponent)
        return await self.store.create_challenge(
            game,
            a.id,
            b.id,
            now + self.config.challenge_seconds,
            guild_id=where.guild_id,
            channel_id=where.channel_id,
        )

    @boundary
    async def get_challenge(self, challenge_id: int) -> Challenge | None:
        return await self.store.get_challenge(challenge_id)

    @boundary
    async def challenge_shown(self, challenge_id: int, message_id: int) -> None:
        """The message that shows a challenge (its buttons; greyed when it expires)."""
        await self.store.set_challenge_message(challenge_id, message_id)

    @boundary
    async def answer_challenge(
        self, challenge_id: int, person: Person, accept: bool, where: Where = Where()
    ) -> tuple[Challenge, Snapshot | None]:
        """Accept (the challenged person: the match starts, the challenger moves first),
        decline (the challenged) or withdraw (the challenger); one answer wins, every other
        click is told how it was answered."""
        found = await self.store.get_challenge(challenge_id)
        if found is None:
            raise BadRequest("there is no such challenge")
        _check_origin_challenge(found, where)
        player = await self._known(person)
        ids = (found.challenger_id, found.opponent_id)
        if player is None or player.id not in ids:
            raise NotInMatch("this challenge is not for you")
        seat = ids.index(player.id)
        if found.status != "pending" or found.expires_at <= self.clock():
            raise ChallengeOver(_challenge_state(found, self.clock()))
        if not accept:
            status: Literal["declined", "withdrawn"] = "withdrawn" if seat == 0 else "declined"
            try:
                return await self.store.close_challenge(challenge_id, status), None
            except dberr.ChallengeClosedError as exc:
                raise ChallengeOver(f"this challenge was already {exc.status}") from None
        if seat != 1:
            raise NotInMatch("only the challenged player can accept")
        challenger = (await self.store.get_players([found.challenger_id]))[found.challenger_id]
        if challenger.discord_id is not None:
            first = Person("user", challenger.discord_id, challenger.display_name)
        else:
            first = Person("local", str(challenger.local_name), challenger.display_name)
        place = Where(where.guild_id, where.channel_id, where.message_id or found.message_id)
        try:
            snap = await self.start_pvp(first, person, found.game, place, accepts=challenge_id)
        except dberr.ChallengeClosedError as exc:
            raise ChallengeOver(f"this challenge was already {exc.status}") from None
        answered = await self.store.get_challenge(challenge_id)
        assert answered is not None
        return answered, snap

    @boundary
    async def expire_challenges(self) -> list[Challenge]:
        """Expire every challenge whose time is up and announce each (greyed out)."""
        expired = await self.store.expire_challenges(self.clock())
        for challenge in expired:
            for listener in list(self.challenge_listeners):
                try:
                    await listener(challenge)
                except Exception:
                    log.exception("a challenge listener failed")
        return expired

    # ------------------------------------------------------------------ clocks and restarts

    @boundary
    async def expire_turns(self) -> list[Snapshot]:
        """End every match whose player to move ran out of time (each on its own: one that
        fails is logged, and set aside if it keeps failing)."""
        ended = []
        now = self.clock()
        for match_id in await self.store.expired_turn_ids(now):
            try:
                snap = await self._expire(match_id, now)
            except Exception as exc:
                await self._failed(match_id, "clock", exc)
                continue
            if snap is not None:
                ended.append(snap)
                await self._emit(snap)
        return ended

    async def _expire(self, match_id: int, now: float) -> Snapshot | None:
        async with self._lock(match_id):
            snap = await self.snapshot(match_id)
            deadline = snap.match.turn_deadline
            if not snap.live or deadline is None or deadline > now:
                return None
            loser = snap.state.to_move()
            # A player who never moved abandons the match (unrated) rather than losing it.
            never_moved = snap.match.ply <= loser
            try:
                if never_moved:
                    return await self._finish(snap, "abandoned", None, "abandon", snap.match.ply)
                return await self._finish(
                    snap, "finished", _result(1 - loser), "time", snap.match.ply
                )
            except (dberr.StaleMoveError, dberr.MatchNotLiveError):
                return None  # a move or resignation landed at the last moment

    @boundary
    async def tick(self) -> None:
        """One pass of the clock: expire turns and challenges, and start any agent turn that
        is not running (its task failed, say, on a store error). Each part on its own: a busy
        or full database only postpones that part to the next pass."""
        for part in (self.expire_turns, self.expire_challenges, self._restart_turns):
            try:
                await part()
            except TRANSIENT as exc:
                log.warning("clock: %s postponed: %s", part.__name__.strip("_"), exc)

    async def _restart_turns(self) -> None:
        for match_id in await self.store.agent_turn_ids():
            if match_id in self._turns or self._closing:
                continue
            try:
                self._schedule(await self.snapshot(match_id))
            except Exception as exc:
                await self._failed(match_id, "turn", exc)

    @boundary
    async def resume(self, only: Collection[int] | None = None) -> list[Snapshot]:
        """After a restart: mend what a kill interrupted, extend clocks by the grace, announce
        every live board once and restart agent turns; the live matches.

        Each match is handled on its own: one that fails is logged and set aside if it cannot
        be mended, and the others go on. `only`: the matches to take up (those live before
        this process could start any), all live ones if None.
        """
        self.spawn(self.learning.warm())
        self.learning.kick()  # learning a kill left in the outbox
        out = []
        for match_id in await self.store.live_match_ids():
            if only is not None and match_id not in only:
                continue  # started by this process meanwhile (the console's prompt comes first)
            try:
                snap = await self._retrying(functools.partial(self._resume_one, match_id))
            except Exception as exc:
                await self._failed(match_id, "resume", exc, at_once=True)
                continue
            await self._emit(snap)
            if snap.live:
                out.append(snap)
                self._schedule(snap)
        for match_id in await self.store.unshown_finals():  # ended, but maybe not shown so
            try:
                await self._emit(await self.snapshot(match_id))
            except Exception as exc:
                await self._failed(match_id, "resume", exc, at_once=True)
        return out

    @boundary
    async def final_shown(self, match_id: int) -> None:
        """A front end showed the end of this match (a restart need not show it again).
        Only a saving: if a busy or full database refuses the note, a restart shows the end
        once more."""
        try:
            await self.store.final_shown(match_id)
        except TRANSIENT as exc:
            log.warning("match %s: cannot note that its end is shown: %s", match_id, exc)

    async def _retrying(self, step: Callable[[], Awaitable[Snapshot]]) -> Snapshot:
        """A restart's step, tried again after a busy or full database (briefly: a restart
        that skipped it would leave a person without their grace)."""
        pause = self.config.store_retry_seconds
        for attempt in range(self.config.store_retries + 1):
            try:
                return await step()
            except TRANSIENT:
                if attempt == self.config.store_retries:
                    raise
                await self.sleep(pause)
                pause *= 2
        raise AssertionError("unreachable")

    async def _resume_one(self, match_id: int) -> Snapshot:
        async with self._lock(match_id):
            snap = await self.snapshot(match_id)
            if snap.state.is_over() or _only_pass(snap.state):
                # Stored by a version that wrote a move, its passes and the finish apart.
                return await self._commit(snap, [])
            grace_until = self.clock() + self.config.resume_grace
            deadline = snap.match.turn_deadline
            if not snap.seat_to_move.is_agent and (deadline is None or deadline < grace_until):
                match = await self.store.set_turn_deadline(match_id, grace_until)
                snap = replace(snap, match=match)
            return snap

    async def _failed(
        self, match_id: int, where: str, exc: BaseException, *, at_once: bool = False
    ) -> None:
        """A match failed in the clock or at resume: log it; set it aside when a retry cannot
        mend it (a corrupt row, or failing `max_failures` times in a row). A busy or full
        database is never the match's fault: it is only logged (the clock retries)."""
        if isinstance(exc, TRANSIENT):
            log.warning("match %s: %s failed, will retry: %s", match_id, where, exc)
            return
        count = self._failures[match_id] = self._failures.get(match_id, 0) + 1
        corrupt = isinstance(exc, dberr.CorruptRowError | ValueError | KeyError | TypeError)
        if not (corrupt or at_once or count >= self.config.max_failures):
            log.warning("match %s: %s failed (%d): %s", match_id, where, count, exc)
            return
        log.error("match %s set aside: %s failed: %s", match_id, where, exc, exc_info=exc)
        try:
            await self.store.set_aside(match_id, f"{where}: {type(exc).__name__}: {exc}")
        except Exception:
            log.exception("cannot set match %s aside", match_id)
        self._failures.pop(match_id, None)

    async def run_clock(self, interval: float = 1.0) -> None:
        """Enforce turn clocks and keep agent turns running, forever (a background task)."""
        while not self._closing:
            try:
                await self.tick()
            except Exception:  # keep the clock alive; the next tick retries
                log.exception("turn clock tick failed")
            await asyncio.sleep(interval)

    def spawn(self, coro: Awaitable[Any]) -> asyncio.Task[Any]:
        """Run a lobby coroutine in the background, keeping a reference and logging failures."""
        task: asyncio.Task[Any] = asyncio.ensure_future(coro)
        self._tasks.add(task)

        def done(t: asyncio.Task[Any]) -> None:
            self._tasks.discard(t)
            if not t.cancelled() and t.exception() is not None:
                exc = t.exception()
                if isinstance(exc, PoolClosed) and self._closing:
                    return
                log.error("lobby task failed", exc_info=exc)

        task.add_done_callback(done)
        return task

    def turn_running(self, match_id: int) -> bool:
        """Whether an agent's turn is running for this match."""
        task = self._turns.get(match_id)
        return task is not None and not task.done()

    async def close(self, timeout: float = 5.0) -> None:
        """Stop agent turns (a commit in flight completes or rolls back whole), then apply
        the learning still in the outbox (at most `timeout` s; the rest waits for the next
        start)."""
        self._closing = True
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.learning.close(timeout)

    async def _emit(self, snap: Snapshot) -> None:
        for listener in list(self.listeners):
            try:
                await listener(snap)
            except Exception:
                log.exception("a match listener failed")

    # ------------------------------------------------------------------ boards of honour

    @boundary
    async def leaderboard(
        self, game: str, guild_id: int | None = None, limit: int = 10
    ) -> list[LeaderboardEntry]:
        return await self.store.leaderboard(self._game(game), limit=limit, guild_id=guild_id)

    @boundary
    async def agents_overview(self, game: str) -> list[AgentOverview]:
        """Every agent of a game: description, levels, ratings and learned memory."""
        return await agents_overview(self.store, self.learning, self._game(game))

    @boundary
    async def stats(self, person: Person) -> tuple[Player, list[PlayerStats]]:
        player = await self.player_for(person)
        return player, await self.store.player_stats(player.id)

    @boundary
    async def history(self, person: Person, limit: int = 10) -> tuple[Player, list[HistoryEntry]]:
        player = await self.player_for(person)
        return player, await self.store.history(player.id, limit=limit)

    @boundary
    async def moves(self, match_id: int) -> list[MoveRow]:
        """The stored moves of a match, in order."""
        return await self.store.moves(match_id)

    @boundary
    async def live_match_ids(self) -> list[int]:
        return await self.store.live_match_ids()


#: The lobby's cache of players is emptied past this size (players come and go).
MAX_CACHED_PLAYERS = 10_000


@dataclass(slots=True)
class _MatchLock:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    users: int = 0


@dataclass(frozen=True, slots=True)
class _AgentChoice:
    spec: AgentSpec
    budget: Budget
    level: str | None
    key: str  # the agent player's identity
    name: str  # how people see it


def _check_origin(match: Match, via: Where | None) -> None:
    """A component belongs to its match's message and server: a click relayed from any other
    message (a forged custom id) is refused."""
    if via is None:
        return
    other_message = via.message_id is not None and match.message_id is not None
    if (other_message and via.message_id != match.message_id) or (
        match.guild_id is not None and via.guild_id != match.guild_id
    ):
        raise BadRequest(f"that is not the board of match #{match.id}")


def _check_origin_challenge(challenge: Challenge, via: Where) -> None:
    other_message = via.message_id is not None and challenge.message_id is not None
    if (other_message and via.message_id != challenge.message_id) or (
        challenge.guild_id is not None and via.guild_id != challenge.guild_id
    ):
        raise BadRequest("that is not this challenge's message")


def _challenge_state(challenge: Challenge, now: float) -> str:
    if challenge.status == "pending" and challenge.expires_at <= now:
        return "this challenge has expired"
    return f"this challenge was already {challenge.status}"


def _result(winner: int | None) -> Result:
    if winner is None:
        return "draw"
    return "0" if winner == 0 else "1"


def _only_pass(state: GameState) -> bool:
    moves = state.legal_moves()
    return len(moves) == 1 and state.move_to_str(moves[0]) == "pass"


def _level_below(game: str, seat: Seat) -> str | None:
    """The level a failed agent falls back to: the level below its own, or `easy` for an
    agent without a level; None for `easy` itself (the last resort is computed in the bot)."""
    names = list(registry.LEVELS[game])
    if seat.level in names:
        i = names.index(seat.level)
        return names[i - 1] if i > 0 else None
    return names[0] if names else None


def _choose_here(state: GameState, spec: AgentSpec, budget: Budget, seed: int) -> Decision:
    """The last resort: a cheap agent computed in this process (in a thread)."""
    return registry.build(spec, state.game).choose(state, budget, random.Random(seed))


def _seat_options(seat: Seat) -> dict[str, Any] | None:
    if seat.spec is None:
        return None
    budget = seat.budget or Budget()
    return {
        "agent": seat.spec.name,
        "params": dict(seat.spec.params),
        "budget": {k: getattr(budget, k) for k in ("time", "nodes", "depth")},
        "level": seat.level,
    }


def _rating_fn(
    game: str, p0: int, p1: int, score0: float
) -> Callable[[Match, Mapping[int, Rating | None]], list[Rating]]:
    """Rating rows computed inside the finishing transaction, from fresh current ratings."""

    def fn(match: Match, current: Mapping[int, Rating | None]) -> list[Rating]:
        old0 = current.get(p0)
        old1 = current.get(p1)
        s0 = Skill(old0.mu, old0.sigma) if old0 else Skill()
        s1 = Skill(old1.mu, old1.sigma) if old1 else Skill()
        n0, n1 = rate_1v1(s0, s1, score0)
        return [
            _bump(old0, p0, game, n0, score0),
            _bump(old1, p1, game, n1, 1.0 - score0),
        ]

    return fn


def _bump(old: Rating | None, pid: int, game: str, skill: Skill, score: float) -> Rating:
    base = old or Rating(player_id=pid, game=game, mu=skill.mu, sigma=skill.sigma)
    return Rating(
        player_id=pid,
        game=game,
        mu=skill.mu,
        sigma=skill.sigma,
        games=base.games + 1,
        wins=base.wins + (score == 1.0),
        draws=base.draws + (score == 0.5),
        losses=base.losses + (score == 0.0),
    )
