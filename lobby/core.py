"""The lobby: match lifecycle, turns, clocks, agent moves and ratings, for any front end.

Both front ends (Discord cogs and the local console) call this; it knows nothing of Discord.
Every move is committed to SQLite before it is returned or announced, under a per-match lock so
that concurrent clicks apply once (the store's expected-ply check backs this up across
processes). Agents think in the engine pool without holding the lock, and their move is only
stored if the match is still where it was when they started.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from db import errors as dberr
from db.models import Match, Player, Rating, Result
from db.store import Store
from engine.agents import registry
from engine.agents.base import AgentSpec, Budget
from engine.games import new_game
from engine.games.base import GameState, IllegalMoveError, Move, NotationError
from lobby.errors import (
    BadMove,
    BadRequest,
    MatchNotFound,
    MatchOver,
    NotInMatch,
    NotYourTurn,
    StaleAction,
)
from lobby.learning import (
    AgentOverview,
    LearningHub,
    TrainingJob,
    TrainingRefused,
    agents_overview,
)
from lobby.pool import EnginePool
from lobby.ratings import Skill, rate_1v1

log = logging.getLogger(__name__)

Listener = Callable[["Snapshot"], Awaitable[None]]


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
    seed: int | None = None


@dataclass(slots=True)
class _Cached:
    state: GameState
    last_move: Move | None


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
    _locks: dict[int, asyncio.Lock] = field(default_factory=dict)
    _states: dict[int, _Cached] = field(default_factory=dict)
    _players: dict[int, Player] = field(default_factory=dict)
    _thinking: set[int] = field(default_factory=set)
    _rng: random.Random = field(default_factory=random.Random)
    _tasks: set[asyncio.Task[Any]] = field(default_factory=set)

    def __post_init__(self) -> None:
        if self.config.seed is not None:
            self._rng.seed(self.config.seed)
        self.learning = LearningHub(self.store)

    # ------------------------------------------------------------------ identities

    async def player_for(self, person: Person) -> Player:
        if person.kind == "user":
            player = await self.store.get_or_create_user(int(person.ident), person.name)
        else:
            player = await self.store.get_or_create_local(str(person.ident), person.name)
        self._players[player.id] = player
        return player

    async def known_user(self, discord_id: int) -> Person:
        """A Discord user as last seen (their stored name), for ids taken from a custom id."""
        player = await self.store.find_user(discord_id)
        name = player.display_name if player is not None else f"Player {discord_id}"
        return Person("user", discord_id, name)

    async def _agent_seat(self, game: str, text: str) -> Seat:
        try:
            spec, budget = registry.resolve(text, game)
        except ValueError as exc:
            raise BadRequest(str(exc)) from None
        level = text.strip() if text.strip() in registry.LEVELS[game] else None
        key = f"{game}:{level}" if level else f"{game}:{spec.label()}"
        name = f"Bot ({level})" if level else f"Bot {text.strip()}"
        player = await self.store.get_or_create_agent(key, name)
        self._players[player.id] = player
        return Seat(player, spec, budget, level)

    # ------------------------------------------------------------------ creating matches

    async def start_pve(
        self, person: Person, game: str, level: str, first: str = "me", where: Where = Where()
    ) -> Snapshot:
        """A person against an agent level (or any agent spec)."""
        if first not in ("me", "bot", "random"):
            raise BadRequest("first must be me, bot or random")
        human = Seat(await self.player_for(person))
        bot = await self._agent_seat(self._game(game), level)
        if first == "random":
            first = self._rng.choice(["me", "bot"])
        seats = (human, bot) if first == "me" else (bot, human)
        return await self._create(game, "pve", seats, where, rated=True)

    async def start_pvp(
        self, first: Person, second: Person, game: str, where: Where = Where()
    ) -> Snapshot:
        """Two people; `first` moves first (the front end decides who, e.g. the challenger)."""
        a, b = await self.player_for(first), await self.player_for(second)
        if a.id == b.id:
            raise BadRequest("you cannot challenge yourself")
        rated = await self._pair_may_be_rated(a.id, b.id)
        return await self._create(game, "pvp", (Seat(a), Seat(b)), where, rated=rated)

    async def start_eve(
        self,
        game: str,
        first: str,
        second: str,
        where: Where = Where(),
        delay: float | None = None,
        starter: Person | None = None,
    ) -> Snapshot:
        """Two agents, for spectators. Unrated unless the config says otherwise."""
        game = self._game(game)
        delay = self.config.botmatch_delay if delay is None else delay
        if not 0 <= delay <= 60:
            raise BadRequest("delay must be between 0 and 60 seconds")
        seats = (await self._agent_seat(game, first), await self._agent_seat(game, second))
        rated = self.config.rate_botmatches and seats[0].player.id != seats[1].player.id
        extra: dict[str, Any] = {"delay": delay}
        if starter is not None:
            extra["starter"] = {"kind": starter.kind, "ident": starter.ident}
        return await self._create(game, "eve", seats, where, rated=rated, extra=extra)

    def _game(self, game: str) -> str:
        if game not in registry.GAMES:
            raise BadRequest(f"unknown game {game!r}: choose one of {', '.join(registry.GAMES)}")
        return game

    async def _create(
        self,
        game: str,
        kind: Literal["pve", "pvp", "eve"],
        seats: tuple[Seat, Seat],
        where: Where,
        rated: bool,
        extra: dict[str, Any] | None = None,
    ) -> Snapshot:
        game = self._game(game)
        state = new_game(game)
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
            turn_seconds=self.config.turn_seconds,
            turn_deadline=deadline,
            options=options,
        )
        self._states[match.id] = _Cached(state, None)
        return Snapshot(match, state, seats)

    async def _pair_may_be_rated(self, a: int, b: int) -> bool:
        since = self.clock() - 86400
        played = await self.store.count_rated_between(a, b, since)
        return played < self.config.pair_daily_rated_cap

    async def attach_message(
        self, match_id: int, guild_id: int | None, channel_id: int | None, message_id: int
    ) -> None:
        """Remember which message shows the match, so later moves can edit it."""
        await self.store.set_message(match_id, guild_id, channel_id, message_id)

    # ------------------------------------------------------------------ reading

    async def snapshot(self, match_id: int) -> Snapshot:
        match = await self.store.get_match(match_id)
        if match is None:
            raise MatchNotFound(f"there is no match #{match_id}")
        return await self._snapshot(match)

    async def _snapshot(self, match: Match) -> Snapshot:
        cached = self._states.get(match.id)
        if cached is None or cached.state.ply != match.ply:
            cached = await self._replay(match)
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
        for pid, opts in zip(match.player_ids, raw, strict=True):
            player = self._players[pid]
            if opts is None:
                seats.append(Seat(player))
                continue
            try:
                spec = AgentSpec(str(opts["agent"]), dict(opts.get("params") or {}))
                budget = Budget(**(opts.get("budget") or {}))
            except (KeyError, TypeError) as exc:
                raise dberr.CorruptRowError(
                    "matches", f"id {match.id}", "options", f"malformed agent seat {opts!r}"
                ) from exc
            seats.append(Seat(player, spec, budget, opts.get("level")))
        return seats[0], seats[1]

    async def live_matches_of(self, person: Person, channel_id: int | None = None) -> list[Match]:
        player = await self.player_for(person)
        matches = await self.store.live_matches(player.id)
        if channel_id is not None:
            matches = [m for m in matches if m.channel_id == channel_id]
        return matches

    # ------------------------------------------------------------------ moves

    def _lock(self, match_id: int) -> asyncio.Lock:
        lock = self._locks.get(match_id)
        if lock is None:
            lock = self._locks[match_id] = asyncio.Lock()
        return lock

    async def play(
        self, match_id: int, person: Person, move: str | Move, expected_ply: int | None = None
    ) -> Snapshot:
        """A person's move: theirs, their turn, legal, match live; stored before returning."""
        player = await self.player_for(person)
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
            snap = await self._commit(snap, move, think_ms=None)
        await self._emit(snap)
        return snap

    async def _commit(self, snap: Snapshot, move: Move, think_ms: int | None) -> Snapshot:
        """Store `move` (and any forced passes after it); finish the match if it ended.

        Called with the match lock held.
        """
        state, match = snap.state, snap.match
        moves = [(move, snap.seats[state.to_move()].player.id)]
        state = state.play(move)
        while not state.is_over() and _only_pass(state):
            only = state.legal_moves()[0]
            moves.append((only, snap.seats[state.to_move()].player.id))
            state = state.play(only)
        ply = match.ply
        for i, (mv, pid) in enumerate(moves):
            last = i == len(moves) - 1
            deadline = None
            if last and not state.is_over() and not snap.seats[state.to_move()].is_agent:
                deadline = self.clock() + (match.turn_seconds or self.config.turn_seconds)
            try:
                ply = await self.store.append_move(
                    match.id,
                    ply,
                    snap.state.move_to_str(mv),
                    pid,
                    think_ms=think_ms if i == 0 else None,
                    turn_deadline=deadline,
                )
            except dberr.StaleMoveError:
                raise StaleAction("someone moved first; use the latest board") from None
            except dberr.MatchNotLiveError:
                raise MatchOver(f"match #{match.id} is over") from None
        self._states[match.id] = _Cached(state, moves[-1][0])
        outcome = state.outcome()
        if outcome is not None:
            match = await self._finish(
                match, "finished", _result(outcome.winner), outcome.termination.value
            )
        else:
            match = await self.store.get_match(match.id) or match
        return Snapshot(match, state, snap.seats, moves[-1][0])

    async def advance(self, match_id: int, max_moves: int | None = None) -> Snapshot:
        """Let agents move while it is an agent's turn (at most `max_moves` moves)."""
        made = 0
        while True:
            snap = await self.snapshot(match_id)
            if not snap.live or not snap.seat_to_move.is_agent or match_id in self._thinking:
                return snap
            if max_moves is not None and made >= max_moves:
                return snap
            seat = snap.seat_to_move
            assert seat.spec is not None and seat.budget is not None
            self._thinking.add(match_id)
            try:
                t0 = time.perf_counter()
                move = await self._agent_move(snap, seat)
                think_ms = int((time.perf_counter() - t0) * 1000)
            finally:
                self._thinking.discard(match_id)
            async with self._lock(match_id):
                current = await self.snapshot(match_id)
                if not current.live or current.match.ply != snap.match.ply:
                    return current  # resigned, stopped or timed out while the agent thought
                snap = await self._commit(current, move, think_ms)
            made += 1
            await self._emit(snap)

    async def _agent_move(self, snap: Snapshot, seat: Seat) -> Move:
        """The agent's move; if the agent fails, a random legal move, so no match gets stuck.

        A person waiting for a bot that crashed would otherwise wait forever (agents have no
        clock); the failure is logged for us to fix.
        """
        assert seat.spec is not None and seat.budget is not None
        legal = snap.state.legal_moves()
        try:
            memory = await self._memory_for(seat.spec, snap.state)
            decision = await self.pool.choose(
                snap.state, seat.spec, seat.budget, self._rng.randrange(2**63), memory=memory
            )
            if decision.move in legal:
                return decision.move
            log.error("agent %s chose an illegal move %r", seat.spec.label(), decision.move)
        except Exception:
            log.exception("agent %s failed in match %s", seat.spec.label(), snap.id)
        return self._rng.choice(legal)

    async def _memory_for(self, spec: AgentSpec, state: GameState) -> dict[bytes, bytes] | None:
        """The memory rows a learning agent asks for here (None for other agents)."""
        try:
            return await self.learning.rows_for(spec, state)
        except Exception:  # play from what the agent has rather than not at all
            log.exception("cannot load the memory of %s", spec.label())
            return {}

    async def resign(self, match_id: int, person: Person) -> Snapshot:
        player = await self.player_for(person)
        async with self._lock(match_id):
            snap = await self.snapshot(match_id)
            seat = snap.seat_index(player.id)
            if seat is None:
                raise NotInMatch(f"match #{match_id} is not yours")
            if not snap.live:
                raise MatchOver(f"match #{match_id} is already over")
            match = await self._finish(snap.match, "finished", _result(1 - seat), "resign")
            snap = replace(snap, match=match)
        await self._emit(snap)
        return snap

    async def stop(self, match_id: int) -> Snapshot:
        """Stop a spectated agent match (the front end checks who may)."""
        async with self._lock(match_id):
            snap = await self.snapshot(match_id)
            if not snap.live:
                raise MatchOver(f"match #{match_id} is already over")
            if snap.match.kind != "eve":
                raise BadRequest("only bot matches can be stopped; players can resign")
            match = await self.store.finish_match(match_id, "abandoned", None, "stopped")
            snap = replace(snap, match=match)
        await self._emit(snap)
        return snap

    async def _finish(
        self,
        match: Match,
        status: Literal["finished", "abandoned"],
        result: Result | None,
        termination: str,
        expected_ply: int | None = None,
    ) -> Match:
        updates = None
        if match.rated and result is not None:
            score0 = 0.5 if result == "draw" else (1.0 if result == "0" else 0.0)
            updates = _rating_fn(match.game, match.player0_id, match.player1_id, score0)
        finished = await self.store.finish_match(
            match.id, status, result, termination, updates, expected_ply=expected_ply
        )
        if status == "finished" and result is not None:
            self._learn_later(finished)
        return finished

    def _learn_later(self, match: Match) -> None:
        """Let learning agents of a match with a result learn from it, in the background."""
        raw = match.options.get("seats") or []
        if not any(raw):
            return  # no agent seat
        self.learning.spawn(self._learn(match), f"match #{match.id}")

    async def _learn(self, match: Match) -> None:
        seats = await self._seats(match)
        agents = [(i, s.spec) for i, s in enumerate(seats) if s.spec is not None]
        if match.result is None or not self.learning.learns((s for _, s in agents), match.game):
            return
        await self.learning.learn_match(match.game, match.variant, match.id, agents, match.result)

    # ------------------------------------------------------------------ training

    def train(
        self,
        game: str,
        agent: str,
        games: int,
        opponent: str | None = None,
        seed: int | None = None,
    ) -> TrainingJob:
        """Start training a learning agent's memory in the engine pool (in the background).

        The front end checks who may; BadRequest if the agent does not learn, the memory is
        already training or the numbers are off.
        """
        game = self._game(game)
        try:
            spec, budget = registry.resolve(agent, game)
            opp = registry.resolve(opponent, game) if opponent else None
            return self.learning.start_training(
                self.pool, game, spec, budget, games, opponent=opp, seed=seed, label=agent.strip()
            )
        except (ValueError, TrainingRefused) as exc:
            raise BadRequest(str(exc)) from None

    # ------------------------------------------------------------------ clocks and restarts

    async def expire_turns(self) -> list[Snapshot]:
        """End every match whose player to move ran out of time."""
        ended = []
        now = self.clock()
        for match in await self.store.expired_turns(now):
            async with self._lock(match.id):
                snap = await self.snapshot(match.id)
                deadline = snap.match.turn_deadline
                if not snap.live or deadline is None or deadline > now:
                    continue
                loser = snap.state.to_move()
                # A player who never moved abandons the match (unrated) rather than losing it.
                never_moved = snap.match.ply <= loser
                try:
                    if never_moved:
                        m = await self.store.finish_match(
                            match.id, "abandoned", None, "abandon", expected_ply=snap.match.ply
                        )
                    else:
                        m = await self._finish(
                            snap.match, "finished", _result(1 - loser), "time", snap.match.ply
                        )
                except (dberr.StaleMoveError, dberr.MatchNotLiveError):
                    continue  # a move or resignation landed at the last moment
                snap = replace(snap, match=m)
            ended.append(snap)
            await self._emit(snap)
        return ended

    async def resume(self) -> list[Snapshot]:
        """After a restart: finish matches whose last move ended them, restart agent turns.

        Returns the live matches; agent moves are started as background tasks.
        """
        self.spawn(self.learning.warm())
        out = []
        for match in await self.store.live_matches():
            snap = await self.snapshot(match.id)
            outcome = snap.state.outcome()
            if outcome is not None:  # crashed between the last move and the finish
                async with self._lock(match.id):
                    m = await self._finish(
                        match, "finished", _result(outcome.winner), outcome.termination.value
                    )
                snap = replace(snap, match=m)
                await self._emit(snap)
                continue
            out.append(snap)
            if snap.seat_to_move.is_agent:
                if match.kind == "eve":
                    self.spawn(self.run_botmatch(match.id))
                else:
                    self.spawn(self.advance(match.id))
        return out

    async def run_botmatch(self, match_id: int) -> Snapshot:
        """Play a spectated agent match to its end, one move per `delay` seconds."""
        snap = await self.snapshot(match_id)
        delay = float(snap.match.options.get("delay", self.config.botmatch_delay))
        while snap.live:
            started = time.perf_counter()
            snap = await self.advance(match_id, max_moves=1)
            if snap.live:
                await self.sleep(max(0.0, delay - (time.perf_counter() - started)))
        return snap

    async def run_clock(self, interval: float = 1.0) -> None:
        """Enforce turn clocks forever (a background task of the front end)."""
        while True:
            try:
                await self.expire_turns()
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
                log.error("lobby task failed", exc_info=t.exception())

        task.add_done_callback(done)
        return task

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.learning.close()

    async def _emit(self, snap: Snapshot) -> None:
        for listener in list(self.listeners):
            try:
                await listener(snap)
            except Exception:
                log.exception("a match listener failed")

    # ------------------------------------------------------------------ boards of honour

    async def leaderboard(
        self, game: str, guild_id: int | None = None, limit: int = 10
    ) -> list[Any]:
        return await self.store.leaderboard(self._game(game), limit=limit, guild_id=guild_id)

    async def agents_overview(self, game: str) -> list[AgentOverview]:
        """Every agent of a game: description, levels, ratings and learned memory."""
        return await agents_overview(self.store, self.learning, self._game(game))

    async def stats(self, person: Person) -> tuple[Player, list[Any]]:
        player = await self.player_for(person)
        return player, await self.store.player_stats(player.id)

    async def history(self, person: Person, limit: int = 10) -> tuple[Player, list[Any]]:
        player = await self.player_for(person)
        return player, await self.store.history(player.id, limit=limit)


def _result(winner: int | None) -> Result:
    if winner is None:
        return "draw"
    return "0" if winner == 0 else "1"


def _only_pass(state: GameState) -> bool:
    moves = state.legal_moves()
    return len(moves) == 1 and state.move_to_str(moves[0]) == "pass"


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
