"""The lobby front ends use: one object that holds the lobby's parts and speaks for them.

Both front ends (Discord cogs and the local console) call it; it knows nothing of Discord. It
owns the whole life of a match (one transaction a step, the agent's turn started after every
step, matches taken up again after a restart); the rules: docs/architecture.md, "The lobby owns
the life of a match". Each part owns its state and gets what it needs when it is built:

- `people`: players (found or created, cached), opponents chosen by name (`lobby.people`);
- `matches`: live matches' positions, locks and steps (`lobby.matches`);
- `starts`: new matches within the limits (`lobby.starting`);
- `turns`: agent turns (`lobby.turns`); `challenges` (`lobby.challenges`);
- `clocks`: the clock's pass, restarts, pauses (`lobby.clocks`);
- `coach`: hints, replays, analyses (`lobby.coach`); `retries`: retrying one's mistakes
  (`lobby.retries`); `listings` (`lobby.listings`);
- `learning`: learning agents' memory, learning from matches, training (`lobby.learning`);
- `prefs`: what each person prefers, such as how boards are shown (`lobby.prefs`);
- `settings`: each server's settings, checked at every start (`lobby.settings`);
- `tournaments`, `puzzles` (`lobby.tournaments`, `lobby.puzzles`): called by front ends directly.

The agent's turn after a person's move or a new match is started here, after the step.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Collection
from typing import Any

from db.store import Store
from engine.analysis import Review
from engine.games.base import Move
from engine.hints import Hint
from lobby.announce import Announcer
from lobby.boundary import boundary
from lobby.challenges import Challenges
from lobby.clocks import GAP_SECONDS, Clocks
from lobby.coach import AnalysisReport, Coach, ReplayFiles
from lobby.errors import BadRequest, TrainingRefused
from lobby.learning import Learning
from lobby.listings import Listings
from lobby.matches import Matches
from lobby.memory import LearningMemory
from lobby.models import (
    Challenge,
    HistoryEntry,
    LeaderboardEntry,
    Match,
    MoveRow,
    Player,
    PlayerStats,
)
from lobby.overview import AgentOverview
from lobby.people import People
from lobby.pool import EnginePool
from lobby.prefs import Prefs
from lobby.puzzles import Puzzles
from lobby.records import (
    TRANSIENT,
    ChallengeListener,
    Listener,
    LobbyConfig,
    Person,
    Seat,
    Snapshot,
    Where,
)
from lobby.retries import Retries
from lobby.retry import RetryStep
from lobby.settings import ServerSettings, Settings
from lobby.starting import Starts, game_named
from lobby.tasks import Tasks
from lobby.tournaments import Tournaments
from lobby.training import TrainingJob
from lobby.turns import Turns
from tools.pictures import Replay

__all__ = [
    "TRANSIENT",
    "AnalysisReport",
    "Lobby",
    "LobbyConfig",
    "Person",
    "ReplayFiles",
    "Seat",
    "Snapshot",
    "Where",
]


class Lobby:
    """The lobby front ends use, over its parts (see the module's docstring)."""

    def __init__(
        self,
        store: Store,
        pool: EnginePool,
        config: LobbyConfig | None = None,
        clock: Callable[[], float] = time.time,
        listeners: list[Listener] | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,  # injectable for fast tests
        challenge_listeners: list[ChallengeListener] | None = None,
    ) -> None:
        # The parts hold these from here on: they are read-only below (a new one here would
        # leave the parts with the old one). Settings change in place (`lobby.config.x = y`).
        self._store = store
        self._pool = pool
        self._config = LobbyConfig() if config is None else config
        self._clock = clock
        #: Front ends listen to every committed snapshot, and to challenges that expire (the
        #: front end greys their message).
        self.listeners: list[Listener] = [] if listeners is None else listeners
        self.challenge_listeners: list[ChallengeListener] = (
            [] if challenge_listeners is None else challenge_listeners
        )
        rng = random.Random()
        if self.config.seed is not None:
            rng.seed(self.config.seed)
        self.tasks = Tasks()
        self.announce = Announcer(self.listeners, self.challenge_listeners)
        memory = LearningMemory(store)
        self.people = People(store, self.config, memory)
        self.settings = Settings(store, self.config, self.people)
        at = self.settings.config_at  # the clock and limits of the server a match starts in
        #: Memory of learning agents, learning from finished matches, training jobs.
        self.learning = Learning(store, memory, self.people.learning_seats)
        self.matches = Matches(
            store, self.config, clock, self.people, self.announce, self.learning.outbox.kick
        )
        self.starts = Starts(store, self.config, clock, rng, self.people, self.matches, at)
        self.turns = Turns(
            pool, self.config, sleep, rng, self.matches, memory, self.announce, self.tasks
        )
        self.challenges = Challenges(
            store, self.config, clock, self.people, self.starts, self.announce, at
        )
        self.clocks = Clocks(
            store,
            self.config,
            clock,
            sleep,
            matches=self.matches,
            turns=self.turns,
            challenges=self.challenges,
            memory=memory,
            outbox=self.learning.outbox,
            announce=self.announce,
            tasks=self.tasks,
        )
        self.coach = Coach(store, pool, self.config, self.people, self.matches, self.announce)
        self.retries = Retries(pool, self.people, self.matches, self.coach)
        self.listings = Listings(store, self.people, memory)
        self.prefs = Prefs(store, self.people)
        self.tournaments = Tournaments(store, self.config, clock, self.people, self.settings,
            self.starts, self.matches, self.turns, self.tasks)  # fmt: skip
        self.puzzles = Puzzles(store, self.people, self.retries, self.settings, clock, rng)

    @property
    def store(self) -> Store:
        return self._store

    @property
    def pool(self) -> EnginePool:
        return self._pool

    @property
    def config(self) -> LobbyConfig:
        return self._config

    @property
    def clock(self) -> Callable[[], float]:
        """The wall clock of turns and challenges (`time.time`, or a test's)."""
        return self._clock

    # ------------------------------------------------------------------ players

    @boundary
    async def player_for(self, person: Person) -> Player:
        return await self.people.player_for(person)

    @boundary
    async def known_user(self, discord_id: int) -> Person:
        """A Discord user as last seen (their stored name), for ids taken from a custom id."""
        return await self.people.known_user(discord_id)

    # ------------------------------------------------------------------ new matches

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
        """A person against an opponent (`Starts.start_pve`); the bot's first move, if it
        moves first, starts in the background."""
        await self.settings.check_start(where, game, [level], raw_ok)
        snap = await self.starts.start_pve(person, game, level, first, where, raw_ok=raw_ok)
        self.turns.schedule(snap)
        return snap

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
        """Two people; `first` moves first (`Starts.start_pvp`)."""
        await self.settings.check_start(where, game)
        snap = await self.starts.start_pvp(first, second, game, where, accepts=accepts)
        self.turns.schedule(snap)
        return snap

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
        """Two agents, for spectators (`Starts.start_eve`); they start playing at once."""
        await self.settings.check_start(where, game, [first, second], raw_ok)
        snap = await self.starts.start_eve(
            game, first, second, where, delay, starter, raw_ok=raw_ok
        )
        self.turns.schedule(snap)
        return snap

    @boundary
    async def attach_message(
        self, match_id: int, guild_id: int | None, channel_id: int | None, message_id: int
    ) -> None:
        """Remember which message shows the match, so later moves can edit it."""
        await self.starts.attach_message(match_id, guild_id, channel_id, message_id)

    # ------------------------------------------------------------------ matches

    @boundary
    async def snapshot(self, match_id: int) -> Snapshot:
        return await self.matches.snapshot(match_id)

    @boundary
    async def live_matches_of(self, person: Person, channel_id: int | None = None) -> list[Match]:
        return await self.matches.live_matches_of(person, channel_id)

    @boundary
    async def play(
        self,
        match_id: int,
        person: Person,
        move: str | Move,
        expected_ply: int | None = None,
        via: Where | None = None,
    ) -> Snapshot:
        """A person's move, stored and announced (`Matches.play`); the agent's reply, if an
        agent is to move next, starts in the background."""
        snap = await self.matches.play(match_id, person, move, expected_ply, via)
        self.turns.schedule(snap)
        return snap

    @boundary
    async def resign(self, match_id: int, person: Person, via: Where | None = None) -> Snapshot:
        return await self.matches.resign(match_id, person, via)

    @boundary
    async def stop(
        self, match_id: int, termination: str = "stopped", via: Where | None = None
    ) -> Snapshot:
        """Stop a spectated agent match (the front end checks who may)."""
        return await self.matches.stop(match_id, termination, via)

    @boundary
    async def abandon(self, match_id: int, termination: str = "unreachable") -> Snapshot:
        """End a live match unrated: nobody can see it any more (`Matches.abandon`)."""
        return await self.matches.abandon(match_id, termination)

    def spawn(self, coro: Awaitable[Any]) -> asyncio.Task[Any]:
        """Run a lobby coroutine in the background, keeping a reference and logging failures."""
        return self.tasks.spawn(coro)

    # ------------------------------------------------------------------ agent turns

    @boundary
    async def advance(self, match_id: int) -> Snapshot:
        """Wait until the agents to move have moved; the snapshot after their moves."""
        return await self.turns.advance(match_id)

    @boundary
    async def run_botmatch(self, match_id: int) -> Snapshot:
        """Wait for a spectated agent match to end (it runs on its own once started)."""
        return await self.turns.run_botmatch(match_id)

    def turn_running(self, match_id: int) -> bool:
        """Whether an agent's turn is running for this match."""
        return self.turns.turn_running(match_id)

    # ------------------------------------------------------------------ challenges

    @boundary
    async def challenge(
        self, challenger: Person, opponent: Person, game: str, where: Where = Where()
    ) -> Challenge:
        """A challenge from one person to another, within the limits (`Challenges`)."""
        await self.settings.check_start(where, game)
        return await self.challenges.challenge(challenger, opponent, game, where)

    @boundary
    async def get_challenge(self, challenge_id: int) -> Challenge | None:
        return await self.challenges.get_challenge(challenge_id)

    @boundary
    async def challenge_shown(self, challenge_id: int, message_id: int) -> None:
        """The message that shows a challenge (its buttons; greyed when it expires)."""
        await self.challenges.challenge_shown(challenge_id, message_id)

    @boundary
    async def answer_challenge(
        self, challenge_id: int, person: Person, accept: bool, where: Where = Where()
    ) -> tuple[Challenge, Snapshot | None]:
        """Accept, decline or withdraw; one answer wins (`Challenges.answer_challenge`)."""
        return await self.challenges.answer_challenge(challenge_id, person, accept, where)

    @boundary
    async def expire_challenges(self) -> list[Challenge]:
        """Expire every challenge whose time is up and announce each (greyed out)."""
        return await self.challenges.expire_challenges()

    # ------------------------------------------------------------------ clocks and restarts

    @boundary
    async def expire_turns(self) -> list[Snapshot]:
        """End every match whose player to move ran out of time (`Clocks.expire_turns`)."""
        return await self.clocks.expire_turns()

    @boundary
    async def tick(self, look: Callable[[], None] | None = None) -> None:
        """One pass of the clock (`Clocks.tick`)."""
        await self.clocks.tick(look)

    @boundary
    async def resume(self, only: Collection[int] | None = None) -> list[Snapshot]:
        """After a restart: take the live matches up again (`Clocks.resume`)."""
        return await self.clocks.resume(only)

    @boundary
    async def final_shown(self, match_id: int) -> None:
        """A front end showed the end of this match (a restart need not show it again)."""
        await self.clocks.final_shown(match_id)

    def pause_clocks(self, guild_id: int | None = None) -> None:
        """Nobody can move (Discord is out of reach, or one server is out): no person's
        clock runs out there until `resume_clocks`."""
        self.clocks.pause_clocks(guild_id)

    @boundary
    async def resume_clocks(self, guild_id: int | None = None) -> None:
        """The link is back after `pause_clocks`: people to move there get the grace."""
        await self.clocks.resume_clocks(guild_id)

    @boundary
    async def abandon_in(
        self, *, guild_id: int | None = None, channel_id: int | None = None
    ) -> list[Snapshot]:
        """End unrated every live match in a guild the bot left or a deleted channel."""
        return await self.clocks.abandon_in(guild_id=guild_id, channel_id=channel_id)

    async def run_clock(
        self,
        interval: float = 1.0,
        gap: float = GAP_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        """Enforce turn clocks and keep agent turns running, forever (`Clocks.run_clock`)."""
        await self.clocks.run_clock(interval, gap, monotonic)

    # ------------------------------------------------------------------ the coach

    @boundary
    async def hint(
        self, match_id: int, person: Person, via: Where | None = None
    ) -> tuple[Hint, Snapshot]:
        """The best move for the person to move in their game against the bot (`Coach`)."""
        m = (await self.matches.snapshot(match_id)).match
        await self.settings.check_rated(m.guild_id, m.rated, "rated_hints")
        return await self.coach.hint(match_id, person, via)

    @boundary
    async def replay(self, match_id: int | None, person: Person) -> ReplayFiles:
        """The pictures of a finished match (`None`: the person's last one)."""
        return await self.coach.replay(match_id, person)

    def analysis_seconds(self, game: str) -> float:
        """How long an analysis of `game` may take."""
        return self.coach.analysis_seconds(game)

    @boundary
    async def analysis_target(self, match_id: int | None, person: Person) -> Replay:
        """The match an analysis request is for, checked, quickly."""
        target = await self.coach.analysis_target(match_id, person)
        await self._may_analyse(target.match_id)
        return target

    @boundary
    async def analyse(self, match_id: int | None, person: Person) -> AnalysisReport:
        """Every move of a finished match judged by the solvers (`Coach.analyse`)."""
        await self._may_analyse((await self.coach.analysis_target(match_id, person)).match_id)
        return await self.coach.analyse(match_id, person)

    async def _may_analyse(self, match_id: int) -> None:
        m = (await self.matches.snapshot(match_id)).match
        await self.settings.check_rated(m.guild_id, m.rated, "rated_analysis")

    @boundary
    async def retry(self, match_id: int | None, person: Person) -> RetryStep:
        """The position before the person's worst mistake in a finished match (`Retries`);
        like an analysis, only where the server allows analyses of the match."""
        target = await self.coach.analysis_target(match_id, person)
        await self._may_analyse(target.match_id)
        return await self.retries.start(target.match_id, person)

    @boundary
    async def retry_at(self, match_id: int, ply: int, person: Person) -> RetryStep:
        """The person's mistake at `ply` again; refused if it is not theirs."""
        await self._may_analyse(match_id)
        return await self.retries.at(match_id, ply, person)

    @boundary
    async def retry_next(self, match_id: int, ply: int, person: Person) -> RetryStep | None:
        """The person's mistake after the one at `ply`, worst first (None after the last)."""
        await self._may_analyse(match_id)
        return await self.retries.following(match_id, ply, person)

    @boundary
    async def retry_move(
        self, match_id: int, ply: int, move: str | Move, person: Person
    ) -> tuple[RetryStep, Review]:
        """A move tried in place of the mistake at `ply`, judged by the solvers."""
        await self._may_analyse(match_id)
        return await self.retries.attempt(match_id, ply, move, person)

    @boundary
    async def retry_best(self, match_id: int, ply: int, person: Person) -> tuple[RetryStep, Review]:
        """The mistake at `ply` with its best move (the person asked to see it)."""
        await self._may_analyse(match_id)
        return await self.retries.best(match_id, ply, person)

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
        game = game_named(game)
        learner, opp = self.people.training_pair(game, agent, opponent, raw_ok)
        try:
            return self.learning.training.start(
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

    # ------------------------------------------------------------------ the engine

    def engine_note(self, snap: Snapshot) -> str:
        """A line for a new board whose bot players are still to compile on this machine
        (which, and about how long), or an empty one."""
        waits = (self.pool.wait_for(s.spec, snap.match.game) for s in snap.seats if s.spec)
        return "\n".join(dict.fromkeys(wait.note() for wait in waits if wait is not None))

    # ------------------------------------------------------------------ closing

    async def close(self, timeout: float = 5.0) -> None:
        """Stop agent turns (a commit in flight completes or rolls back whole), then apply
        the learning still in the outbox (at most `timeout` s; the rest waits for the next
        start)."""
        await self.tasks.close()
        await self.learning.close(timeout)

    # ------------------------------------------------------------------ preferences, settings

    @boundary
    async def board_style(self, person: Person) -> str:
        """How `person` wants boards shown: `emoji` (the default) or `image` (`Prefs`)."""
        return await self.prefs.board_style(person)

    @boundary
    async def set_board_style(self, person: Person, style: str) -> str:
        """Keep how `person` wants boards shown; BadRequest for a style there is not."""
        return await self.prefs.set_board_style(person, style)

    async def board_style_for(self, snap: Snapshot) -> str:
        """`image` if one of the people of `snap` prefers it, else `emoji`; never raises."""
        return await self.prefs.style_for(snap)

    @boundary
    async def server_settings(self, guild_id: int | None) -> ServerSettings:
        """A server's settings over the bot's own (`Settings`; None: the console's, if any)."""
        return await self.settings.of(guild_id)

    @boundary
    async def change_settings(
        self, guild_id: int | None, person: Person, changes: dict[str, Any]
    ) -> ServerSettings:
        """Change a server's settings, each checked, logged with who (the front end checks)."""
        return await self.settings.change(guild_id, person, changes)

    # ------------------------------------------------------------------ listings

    @boundary
    async def leaderboard(
        self, game: str, guild_id: int | None = None, limit: int = 10
    ) -> list[LeaderboardEntry]:
        return await self.listings.leaderboard(game, guild_id, limit)

    @boundary
    async def agents_overview(self, game: str) -> list[AgentOverview]:
        """Every agent of a game: description, levels, ratings and learned memory."""
        return await self.listings.agents_overview(game)

    @boundary
    async def stats(self, person: Person) -> tuple[Player, list[PlayerStats]]:
        return await self.listings.stats(person)

    @boundary
    async def bot_stats(self, name: str) -> tuple[str, list[PlayerStats]]:
        """The record of one of the bot's players, by level or agent name."""
        return await self.listings.bot_stats(name)

    @boundary
    async def bot_history(self, name: str, limit: int = 10) -> tuple[str, list[HistoryEntry]]:
        """The last ended matches of one of the bot's players, newest first."""
        return await self.listings.bot_history(name, limit)

    @boundary
    async def history(self, person: Person, limit: int = 10) -> tuple[Player, list[HistoryEntry]]:
        return await self.listings.history(person, limit)

    @boundary
    async def rating_chart(self, player: Player) -> bytes | None:
        """A PNG of the player's rating over their rated games (None before the first)."""
        return await self.listings.rating_chart(player)

    @boundary
    async def moves(self, match_id: int) -> list[MoveRow]:
        """The stored moves of a match, in order."""
        return await self.listings.moves(match_id)

    @boundary
    async def live_match_ids(self) -> list[int]:
        return await self.listings.live_match_ids()

    @boundary
    async def live_channels_in(self, guild_id: int) -> list[int]:
        """The channels of a guild where live matches are shown."""
        return await self.listings.live_channels_in(guild_id)

    @boundary
    async def live_guilds(self) -> list[int]:
        """The guilds where live matches are shown."""
        return await self.listings.live_guilds()
