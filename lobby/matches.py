"""Matches: who plays whom, starting a match, reading it back, and every step of it as ONE
transaction (a move with its forced passes, a finish with its ratings and learning), under a
per-match lock. The agent's turn after a step is `lobby.turns`' (`_schedule`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from db import errors as dberr
from db.models import Finish, Match, NewMove, Player, Result
from db.store import Store
from engine.agents import opponents, registry
from engine.agents.base import AgentSpec, Budget
from engine.analysis import Analysis
from engine.games import new_game
from engine.games.base import GameState, IllegalMoveError, Move, NotationError
from engine.games.catalog import Offer, offer
from lobby.boundary import boundary, front_end
from lobby.errors import (
    BadMove,
    BadRequest,
    LimitReached,
    MatchNotFound,
    MatchOver,
    NotInMatch,
    NotYourTurn,
    StaleAction,
)
from lobby.learning import LEARN, LearningHub
from lobby.pool import EnginePool, PoolClosed
from lobby.ratings import rating_fn
from lobby.records import (
    TRANSIENT,
    AgentChoice,
    Cached,
    ChallengeListener,
    Listener,
    LobbyConfig,
    MatchLock,
    Person,
    Seat,
    Snapshot,
    Where,
)

log = logging.getLogger(__name__)

#: The lobby's cache of players is emptied past this size (players come and go).
MAX_CACHED_PLAYERS = 10_000


@dataclass(slots=True)
class Matches:
    """The state of the lobby and the life of a match up to the agent's turn."""

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
    _locks: dict[int, MatchLock] = field(default_factory=dict)
    _states: dict[int, Cached] = field(default_factory=dict)
    _players: dict[int, Player] = field(default_factory=dict)
    #: The running agent turn of each match (at most one).
    _turns: dict[int, asyncio.Task[Snapshot]] = field(default_factory=dict)
    _failures: dict[int, int] = field(default_factory=dict)
    #: Matches whose last write failed in a way that may have stored it (a lost answer to
    #: the commit): what is shown may be older than what is stored until they are re-read.
    _unsure: set[int] = field(default_factory=set)
    #: Clock failures already logged (each kind once).
    _clock_faults: set[tuple[str, str, str]] = field(default_factory=set)
    _rng: random.Random = field(default_factory=random.Random)
    _tasks: set[asyncio.Task[Any]] = field(default_factory=set)
    #: Analyses being computed, by match; who waits for which; one runs at a time.
    _analyses: dict[int, asyncio.Task[Analysis]] = field(default_factory=dict)
    _analysis_waiters: dict[tuple[str, str], int] = field(default_factory=dict)
    _analysis_turn: asyncio.Lock = field(default_factory=asyncio.Lock)
    _closing: bool = False
    #: Where nobody can move now, so no person's clock may run out (lobby.clocks,
    #: `pause_clocks`): None while Discord cannot reach the bot, a guild id while that server
    #: is out; and where the link is back but the grace is not given yet.
    _paused: set[int | None] = field(default_factory=set)
    _grace_owed: set[int | None] = field(default_factory=set)

    def __post_init__(self) -> None:
        if self.config.seed is not None:
            self._rng.seed(self.config.seed)
        self.learning = LearningHub(self.store, seat_specs=self._agent_specs)

    # ------------------------------------------------------------------ identities

    @boundary
    async def player_for(self, person: Person) -> Player:
        if person.kind == "user":
            player = await self.store.players.get_or_create_user(int(person.ident), person.name)
        else:
            player = await self.store.players.get_or_create_local(str(person.ident), person.name)
        self._remember(player)
        return player

    async def _known(self, person: Person) -> Player | None:
        """The stored player of a person, without creating one (a refused request by someone
        new must leave no row behind)."""
        if person.kind == "user":
            player = await self.store.players.find_user(int(person.ident))
        else:
            player = await self.store.players.find_local(str(person.ident))
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
        player = await self.store.players.find_user(discord_id)
        name = player.display_name if player is not None else f"Player {discord_id}"
        return Person("user", discord_id, name)

    def _agent_choice(self, game: str, text: str, raw_ok: bool) -> AgentChoice:
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
            return AgentChoice(opp.spec, opp.budget, opp.level, key, f"Bot ({opp.name})")
        try:
            spec, budget = registry.resolve(text, game)
        except ValueError as exc:
            raise BadRequest(str(exc)) from None
        label = spec.label()
        return AgentChoice(spec, budget, None, f"{game}:{label}", f"Bot ({label[:57]})")

    async def _agent_seat(self, choice: AgentChoice) -> Seat:
        player = await self.store.players.get_or_create_agent(choice.key, choice.name)
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
        if (
            player is not None
            and await self.store.matches.count_live("pve", player_id=player.id) >= cap
        ):
            raise LimitReached(
                f"you already have {cap} games against the bot in progress (the limit): "
                "finish or resign one, then start another"
            )

    async def _limit_botmatches(self, starter: Person | None, where: Where) -> None:
        if starter is None or starter.kind != "user":
            return
        cap = self.config.max_botmatches
        if (
            cap is not None
            and await self.store.matches.count_live("eve", starter=starter.ident) >= cap
        ):
            raise LimitReached(
                f"you already have {cap} bot matches running (the limit): stop one or wait "
                "until one ends"
            )
        cap = self.config.max_guild_botmatches
        guild = where.guild_id if isinstance(where, Where) else None
        if (
            cap is not None
            and guild is not None
            and (await self.store.matches.count_live("eve", guild_id=guild) >= cap)
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
        options: dict[str, Any] = {"seats": [seat_options(s) for s in seats], **(extra or {})}
        deadline = None if seats[0].is_agent else self.clock() + self.config.turn_seconds
        match = await self.store.matches.create(
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
        self._states[match.id] = Cached(state, None)
        snap = Snapshot(match, state, seats)
        self._schedule(snap)
        return snap

    async def _pair_may_be_rated(self, a: int, b: int) -> bool:
        since = self.clock() - 86400
        played = await self.store.matches.count_rated_between(a, b, since)
        return played < self.config.pair_daily_rated_cap

    @boundary
    async def attach_message(
        self, match_id: int, guild_id: int | None, channel_id: int | None, message_id: int
    ) -> None:
        """Remember which message shows the match, so later moves can edit it."""
        await self.store.matches.set_message(match_id, guild_id, channel_id, message_id)

    # ------------------------------------------------------------------ reading

    @boundary
    async def snapshot(self, match_id: int) -> Snapshot:
        match = await self.store.matches.get(match_id)
        if match is None:
            raise MatchNotFound(f"there is no match #{match_id}")
        return await self._snapshot(match)

    async def _snapshot(self, match: Match) -> Snapshot:
        cached = self._states.get(match.id)
        if cached is None or cached.state.ply != match.ply:
            cached = await self._replay(match)
            if cached.state.ply != match.ply:  # play on from the wrong ply: never
                raise dberr.CorruptRowError(
                    "matches",
                    f"id={match.id}",
                    "ply",
                    f"says {match.ply} but {cached.state.ply} moves are stored",
                )
            if match.status == "live":
                self._states[match.id] = cached
        seats = await self._seats(match)
        return Snapshot(match, cached.state, seats, cached.last_move)

    async def _replay(self, match: Match) -> Cached:
        """Rebuild a match's position from its stored moves (after a restart)."""
        state = new_game(match.game, match.variant)
        last: Move | None = None
        for row in await self.store.matches.moves(match.id):
            try:
                last = state.parse_move(row.move)
                state = state.play(last)
            except (NotationError, IllegalMoveError) as exc:
                raise dberr.CorruptRowError(
                    "moves", f"match {match.id} ply {row.ply}", "move", f"does not replay: {exc}"
                ) from exc
        return Cached(state, last)

    async def _seats(self, match: Match) -> tuple[Seat, Seat]:
        missing = [pid for pid in match.player_ids if pid not in self._players]
        if missing:
            self._players.update(await self.store.players.get_many(missing))
        for i, pid in enumerate(match.player_ids):
            if pid not in self._players:
                raise dberr.CorruptRowError(
                    "matches",
                    f"id={match.id}",
                    f"player{i}_id",
                    f"player {pid} is missing or does not decode",
                )
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
                "matches", f"id={match.id}", "options", f"malformed seats {raw!r:.200}"
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
        matches = await self.store.matches.live(player.id)
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
            entry = self._locks[match_id] = MatchLock()
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
        check_origin(snap.match, via)
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
        while not state.is_over() and only_pass(state):
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
                match, snap.seats, "finished", result_of(outcome.winner), outcome.termination.value
            )
        elif not snap.seats[state.to_move()].is_agent:
            deadline = self.clock() + (match.turn_seconds or self.config.turn_seconds)
        try:
            stored = await self.store.matches.commit_step(
                match.id, match.ply, new, turn_deadline=deadline, finish=finish, outbox=outbox
            )
        except TRANSIENT:
            self._unsure.add(match.id)  # it may be stored all the same: re-read before showing
            raise
        except dberr.StaleMoveError:
            raise StaleAction("someone moved first; use the latest board") from None
        except dberr.MatchNotLiveError:
            raise MatchOver(f"match #{match.id} is over") from None
        self._after_commit(stored, Cached(state, last), bool(outbox))
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
            ratings = rating_fn(match.game, match.player0_id, match.player1_id, score0)
        outbox: list[tuple[str, dict[str, Any]]] = []
        learners = [s.spec for s in seats if self._may_learn(match.game, s.spec)]
        if status == "finished" and result is not None and learners:
            outbox.append((LEARN, {}))
        return Finish(status, result, termination, ratings), outbox

    def _after_commit(self, match: Match, cached: Cached, learns: bool) -> None:
        self._unsure.discard(match.id)  # the answer came: what follows shows the stored state
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
        try:
            stored = await self.store.matches.commit_step(
                snap.id, expected_ply, (), finish=finish, outbox=outbox
            )
        except TRANSIENT:
            self._unsure.add(snap.id)
            raise
        self._after_commit(stored, Cached(snap.state, snap.last_move), bool(outbox))
        return replace(snap, match=stored)

    @boundary
    async def resign(self, match_id: int, person: Person, via: Where | None = None) -> Snapshot:
        check_origin((await self.snapshot(match_id)).match, via)
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
                snap = await self._finish(snap, "finished", result_of(1 - seat), "resign")
            except dberr.MatchNotLiveError:
                raise MatchOver(f"match #{match_id} is already over") from None
        await self._emit(snap)
        return snap

    @boundary
    async def stop(
        self, match_id: int, termination: str = "stopped", via: Where | None = None
    ) -> Snapshot:
        """Stop a spectated agent match (the front end checks who may)."""
        check_origin((await self.snapshot(match_id)).match, via)
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

    @boundary
    async def abandon(self, match_id: int, termination: str = "unreachable") -> Snapshot:
        """End a live match of any kind unrated, with no result: the front end can no longer
        show it (its board or channel is gone, the bot left the server), which is nobody's
        fault. A match already over is returned as it is."""
        async with self._lock(match_id):
            snap = await self.snapshot(match_id)
            if not snap.live:
                return snap
            try:
                snap = await self._finish(snap, "abandoned", None, termination)
            except dberr.MatchNotLiveError:
                return await self.snapshot(match_id)
        await self._emit(snap)
        return snap

    async def _converge(self, match_id: int) -> Snapshot:
        """The match as stored, after a write whose answer was lost: a person to move gets
        at least the resume grace from now (their board did not show their turn), and the
        match is no longer unsure. The caller shows the snapshot."""
        async with self._lock(match_id):
            self._states.pop(match_id, None)  # the cache may hold the state before the write
            snap = await self.snapshot(match_id)
            grace_until = self.clock() + self.config.resume_grace
            deadline = snap.match.turn_deadline
            if (
                snap.live
                and not snap.seat_to_move.is_agent
                and deadline is not None
                and deadline < grace_until
            ):
                snap = replace(
                    snap, match=await self.store.matches.set_turn_deadline(match_id, grace_until)
                )
            self._unsure.discard(match_id)
            return snap

    # ------------------------------------------------------------------ background

    def _schedule(self, snap: Snapshot) -> None:
        """Start the agent's turn if an agent is to move (`lobby.turns.Turns`)."""
        raise NotImplementedError

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
                if isinstance(exc, TRANSIENT):  # the clock's next pass takes it up again
                    log.warning("lobby task postponed: the store failed: %s", exc)
                    return
                log.error("lobby task failed", exc_info=exc)

        task.add_done_callback(done)
        return task

    async def _emit(self, snap: Snapshot) -> None:
        for listener in list(self.listeners):
            try:
                with front_end():
                    await listener(snap)
            except Exception:
                log.exception("a match listener failed")


def check_origin(match: Match, via: Where | None) -> None:
    """A component belongs to its match's message and server: a click relayed from any other
    message (a forged custom id) is refused."""
    if via is None:
        return
    other_message = via.message_id is not None and match.message_id is not None
    if (other_message and via.message_id != match.message_id) or (
        match.guild_id is not None and via.guild_id != match.guild_id
    ):
        raise BadRequest(f"that is not the board of match #{match.id}")


def result_of(winner: int | None) -> Result:
    if winner is None:
        return "draw"
    return "0" if winner == 0 else "1"


def only_pass(state: GameState) -> bool:
    moves = state.legal_moves()
    return len(moves) == 1 and state.move_to_str(moves[0]) == "pass"


def seat_options(seat: Seat) -> dict[str, Any] | None:
    if seat.spec is None:
        return None
    budget = seat.budget or Budget()
    return {
        "agent": seat.spec.name,
        "params": dict(seat.spec.params),
        "budget": {k: getattr(budget, k) for k in ("time", "nodes", "depth")},
        "level": seat.level,
    }
