"""A running tournament's rounds: each game started as a normal match in the tournament's
channel (`lobby.starting`, a person against the bot, two people or two agents), its outcome
taken from its match when it ends, and the next round paired (`lobby.pairing`) and started
when the last game of a round has its outcome; the winner at the end.

Everything here is kept in the store and read again at each step, so a kill at any moment
loses nothing: a round is written whole before its games start, each game's match carries the
game's mark (`db.tournaments`) so a match a kill left unlinked is found again, and `advance`
after a restart finds whatever was left to do. One tournament's steps run one at a time (a
lock each); a round is written only over the round before it, so two processes or two ends
at once never pair a round twice.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import cast

from db.models import Match, Player
from db.store import Store
from db.tournaments import Entrant, NewGame, Tournament, TournamentGame
from lobby.errors import LobbyError
from lobby.matches import Matches
from lobby.pairing import (
    Format,
    Game,
    Outcome,
    Pairing,
    Standing,
    knockout_round,
    knockout_winner,
    round_robin_round,
    standings,
    swiss_round,
)
from lobby.records import TRANSIENT, Person, Snapshot, Where
from lobby.starting import Starts, Table
from lobby.turns import Turns

log = logging.getLogger(__name__)

#: A game's match ended with a result: the tournament's outcome.
_RESULTS: dict[str, Outcome] = {"0": "first", "1": "second", "draw": "draw"}


@dataclass(frozen=True, slots=True)
class Placing:
    """One line of the standings."""

    rank: int
    player_id: int
    name: str
    score: float
    buchholz: float
    wins: int
    played: int
    agent: bool
    left: bool


@dataclass(frozen=True, slots=True)
class TournamentView:
    """A tournament as front ends show it: its row, its standings, its games (the current
    round's pairings among them) and its players' names."""

    tournament: Tournament
    placings: tuple[Placing, ...]
    games: tuple[TournamentGame, ...]
    names: dict[int, str]
    winner: str | None = None

    @property
    def id(self) -> int:
        return self.tournament.id

    def current(self) -> list[TournamentGame]:
        return [g for g in self.games if g.round == self.tournament.round]


@dataclass(frozen=True, slots=True)
class TournamentNews:
    """What the lobby announces: the tournament now, and the games just started whose boards
    are not shown yet (a front end shows each and attaches its message)."""

    view: TournamentView
    boards: tuple[Snapshot, ...] = ()


TournamentListener = Callable[[TournamentNews], Awaitable[None]]
#: Makes the message that will show a tournament's game before its match is stored, as
#: `Where.show` does for any new match (a kill after it leaves a message without a match, never
#: a match without its message): given the game's `BoardCall`, the message's id (None: none).
BoardMaker = Callable[["BoardCall"], Awaitable[int | None]]


@dataclass(frozen=True, slots=True)
class BoardCall:
    """A game whose message is wanted: where, which tournament and round, who plays."""

    tournament_id: int
    guild_id: int | None
    channel_id: int | None
    round: int
    names: tuple[str, str]


@dataclass(slots=True)
class _Step:
    """What one pass of `advance` did."""

    boards: list[Snapshot] = field(default_factory=list)
    changed: bool = False


def person_of(player: Player) -> Person:
    """The person a stored player is (a tournament starts their games for them)."""
    if player.kind == "user" and player.discord_id is not None:
        return Person("user", player.discord_id, player.display_name)
    if player.kind == "local" and player.local_name is not None:
        return Person("local", player.local_name, player.display_name)
    raise ValueError(f"player {player.id} is not a person")


def as_game(g: TournamentGame) -> Game:
    return Game(g.round, g.board, g.first_id, g.second_id, cast(Outcome | None, g.outcome))


def outcome_of(match: Match, left: set[int]) -> Outcome | None:
    """A game's outcome from its match (None while it is live). A match that ended with no
    result counts against whoever left; a player who never moved before their clock ran out
    (`abandon`) loses it; any other (nobody could see it, the tournament was cancelled) is
    a draw: nobody's fault."""
    if match.status == "live":
        return None
    if match.status == "finished" and match.result is not None:
        return _RESULTS[match.result]
    gone = (match.player0_id in left, match.player1_id in left)
    if all(gone):
        return "lost"
    if any(gone):
        return "second" if gone[0] else "first"
    if match.termination == "abandon":
        return "second" if match.ply == 0 else "first"
    return "draw"


class Rounds:
    """The rounds of running tournaments: started, followed and paired (the module's
    docstring)."""

    def __init__(
        self,
        store: Store,
        starts: Starts,
        matches: Matches,
        turns: Turns,
        spawn: Callable[[Awaitable[object]], object],
    ) -> None:
        self._store = store
        self._starts = starts
        self._matches = matches
        self._turns = turns
        self._spawn = spawn
        self._locks: dict[int, asyncio.Lock] = {}
        #: The live matches of tournament games in this process: match id -> tournament id.
        self._games: dict[int, int] = {}
        #: Tournaments whose last step failed (a busy database): the clock's sweep retries.
        self.pending: set[int] = set()
        #: Called with the news of every step that changed something (`Tournaments`).
        self.on_news: Callable[[TournamentNews], Awaitable[None]] | None = None
        #: The front end's maker of a game's message (`Tournaments.show_boards`).
        self.show: BoardMaker | None = None
        matches.when_ended(self._ended)

    def _ended(self, match_id: int) -> None:
        """A match ended: if it plays a tournament's game, the tournament goes on (a task)."""
        tournament_id = self._games.pop(match_id, None)
        if tournament_id is not None:
            self._spawn(self.step(tournament_id))

    def lock(self, tournament_id: int) -> asyncio.Lock:
        return self._locks.setdefault(tournament_id, asyncio.Lock())

    async def step(self, tournament_id: int) -> None:
        """Advance a tournament and announce what changed; a busy database leaves it to the
        sweep."""
        try:
            news = await self.advance(tournament_id)
        except TRANSIENT as exc:
            self.pending.add(tournament_id)
            log.warning("tournament %s postponed: the store failed: %s", tournament_id, exc)
            return
        self.pending.discard(tournament_id)
        if news is not None and self.on_news is not None:
            await self.on_news(news)

    async def advance(self, tournament_id: int, *, show_all: bool = False) -> TournamentNews | None:
        """Settle the current round's games, start those not started, pair the next round
        when this one is done, finish the tournament after its last. The news if anything
        changed (or `show_all`: every live game without a board is in it, after a restart);
        None for a tournament that is not running."""
        async with self.lock(tournament_id):
            t = await self._store.tournaments.get(tournament_id)
            if t is None or t.status != "running":
                return None
            step = _Step(changed=show_all)
            while True:
                entrants = await self._store.tournaments.entrants(t.id)
                games = await self._store.tournaments.games(t.id)
                left = {e.player_id for e in entrants if e.left_at is not None}
                current = [g for g in games if g.round == t.round]
                done = True
                for g in current:
                    if g.outcome is None and not await self._settle(t, g, entrants, left, step):
                        done = False
                if not done:
                    break
                games = await self._store.tournaments.games(t.id)  # with the outcomes now
                if not await self._next_round(t, entrants, games, left):
                    step.changed = True
                    break
                step.changed = True
                t = await self._store.tournaments.get(t.id) or t
            if show_all:
                started = {snap.id for snap in step.boards}
                step.boards += [s for s in await self._unshown(t) if s.id not in started]
            if not step.changed:
                return None
            return TournamentNews(await self.view(t.id), tuple(step.boards))

    async def _settle(
        self,
        t: Tournament,
        g: TournamentGame,
        entrants: list[Entrant],
        left: set[int],
        step: _Step,
    ) -> bool:
        """Whether the game has its outcome now (written); its match started if it had none."""
        players = (g.first_id, g.second_id)
        match_id = g.match_id
        if match_id is None:
            match_id = await self._store.tournaments.tagged_match(
                t.id, g.round, g.board, t.updated_at
            )
            if match_id is not None:  # created, then a kill came before the link
                await self._store.tournaments.link(t.id, g.round, g.board, match_id)
        if match_id is None:
            forfeit = _forfeited(g.first_id, g.second_id, left)
            if forfeit is not None:  # never started: forfeited by one who left
                return await self._write(t, g, forfeit, step)
            try:
                snap = await self._start(t, g, entrants)
            except LobbyError as exc:  # it can never start (an agent no longer offered)
                log.warning("tournament %s: game %s.%s forfeited: %s", t.id, g.round, g.board, exc)
                return await self._write(t, g, _unplayable(g, entrants), step)
            step.boards.append(snap)
            step.changed = True
            return False
        match = await self._store.matches.get(match_id)
        if match is None:
            return await self._write(t, g, "draw", step)
        outcome = outcome_of(match, left)
        if outcome is not None:
            return await self._write(t, g, outcome, step)
        self._games[match_id] = t.id
        for player_id in players:
            if player_id in left:  # left while it was played: resigned (again, if that failed)
                await self.forfeit(match_id, player_id)
        return False

    async def _write(self, t: Tournament, g: TournamentGame, outcome: Outcome, step: _Step) -> bool:
        await self._store.tournaments.set_outcome(t.id, g.round, g.board, outcome)
        step.changed = True
        return True

    async def forfeit(self, match_id: int, player_id: int) -> None:
        """A player who left resigns their live game (the match ends, a normal loss)."""
        player = await self._store.players.get(player_id)
        if player is None or player.kind == "agent":
            return
        snap = await self._matches.snapshot(match_id)
        if snap.live:
            await self._matches.resign(match_id, person_of(player))

    async def _start(self, t: Tournament, g: TournamentGame, entrants: list[Entrant]) -> Snapshot:
        """Start a game's match in the tournament's channel and link it."""
        by_id = {e.player_id: e for e in entrants}
        first, second = by_id[g.first_id], by_id[cast(int, g.second_id)]
        table = Table({"tournament": [t.id, g.round, g.board]}, t.turn_seconds)
        where = Where(t.guild_id, t.channel_id, show=self._maker(t, g))
        starts = self._starts
        if first.opponent is not None and second.opponent is not None:
            snap = await starts.start_eve(
                t.game, first.opponent, second.opponent, where, table=table
            )
        elif first.opponent is not None:
            person = person_of(await self._player(second.player_id))
            snap = await starts.start_pve(person, t.game, first.opponent, "bot", where, table=table)
        elif second.opponent is not None:
            person = person_of(await self._player(first.player_id))
            snap = await starts.start_pve(person, t.game, second.opponent, "me", where, table=table)
        else:
            a = person_of(await self._player(first.player_id))
            b = person_of(await self._player(second.player_id))
            snap = await starts.start_pvp(a, b, t.game, where, table=table)
        self._games[snap.id] = t.id
        await self._store.tournaments.link(t.id, g.round, g.board, snap.id)
        self._turns.schedule(snap)
        return snap

    def _maker(self, t: Tournament, g: TournamentGame) -> Callable[[], Awaitable[int | None]]:
        async def show() -> int | None:
            if self.show is None:
                return None
            players = await self._store.players.get_many([g.first_id, cast(int, g.second_id)])
            names = [
                players[p].display_name if p in players else "?" for p in (g.first_id, g.second_id)
            ]
            call = BoardCall(t.id, t.guild_id, t.channel_id, g.round, (names[0], names[1]))
            return await self.show(call)

        return show

    async def _player(self, player_id: int) -> Player:
        player = await self._store.players.get(player_id)
        if player is None:
            raise ValueError(f"player {player_id} of a tournament does not exist")
        return player

    async def _next_round(
        self, t: Tournament, entrants: list[Entrant], games: list[TournamentGame], left: set[int]
    ) -> bool:
        """Pair and write the next round; False if the tournament is over (then finished)."""
        seeds = [e.player_id for e in entrants]
        active = [p for p in seeds if p not in left]
        played = [as_game(g) for g in games]
        rnd = t.round + 1
        fmt = cast(Format, t.format)
        pairs: list[Pairing] = []
        if rnd <= (t.rounds or 0) and len(active) >= 2:
            if fmt == "swiss":
                pairs = swiss_round(seeds, active, played, rnd)
            elif fmt == "round-robin":
                pairs = round_robin_round(seeds, rnd)
            else:
                pairs = knockout_round(seeds, active, played, rnd)
        if fmt == "knockout" and len([p for p in pairs if p.second is not None]) == 0:
            pairs = []  # nobody left to play: the bracket is decided
        if not pairs:
            await self._finish(t, entrants, played)
            return False
        new = [
            NewGame(p.board, p.first, p.second, _forfeited(p.first, p.second, left)) for p in pairs
        ]
        await self._store.tournaments.add_round(t.id, rnd, new)
        return True

    async def _finish(self, t: Tournament, entrants: list[Entrant], played: list[Game]) -> None:
        left = {e.player_id for e in entrants if e.left_at is not None}
        table = standings([e.player_id for e in entrants], played)
        winner = champion(t.format, table, played, left)
        await self._store.tournaments.end(t.id, "finished", winner)

    async def _unshown(self, t: Tournament) -> list[Snapshot]:
        """The live games of the current round whose boards were never shown (a kill came
        between the start and the board)."""
        out = []
        for g in await self._store.tournaments.games(t.id):
            if g.round != t.round or g.match_id is None or g.outcome is not None:
                continue
            snap = await self._matches.snapshot(g.match_id)
            if snap.live and snap.match.message_id is None:
                out.append(snap)
        return out

    async def view(self, tournament_id: int) -> TournamentView:
        """The tournament as it is stored, with its standings and names."""
        t = await self._store.tournaments.get(tournament_id)
        if t is None:
            raise ValueError(f"there is no tournament #{tournament_id}")
        entrants = await self._store.tournaments.entrants(t.id)
        games = await self._store.tournaments.games(t.id)
        players = await self._store.players.get_many([e.player_id for e in entrants])
        names = {pid: p.display_name for pid, p in players.items()}
        left = {e.player_id for e in entrants if e.left_at is not None}
        agents = {e.player_id for e in entrants if e.opponent is not None}
        table = standings([e.player_id for e in entrants], [as_game(g) for g in games])
        placings = tuple(
            Placing(i + 1, s.entrant, names.get(s.entrant, "?"), s.score, s.buchholz, s.wins,
                    s.played, s.entrant in agents, s.entrant in left)
            for i, s in enumerate(table)
        )  # fmt: skip
        winner = names.get(t.winner_id) if t.winner_id is not None else None
        return TournamentView(t, placings, tuple(games), names, winner)


def _forfeited(first: int, second: int | None, left: set[int]) -> Outcome | None:
    """The outcome a game has before it is played: a bye, or a forfeit by one who left
    (round robin keeps them in its rounds); None if it is to be played."""
    if second is None:
        return "bye"
    gone = (first in left, second in left)
    if all(gone):
        return "lost"
    if any(gone):
        return "second" if gone[0] else "first"
    return None


def _unplayable(g: TournamentGame, entrants: list[Entrant]) -> Outcome:
    """A game whose match cannot start: the bot's player that cannot play forfeits it."""
    agents = {e.player_id for e in entrants if e.opponent is not None}
    first, second = g.first_id in agents, g.second_id in agents
    if first and second:
        return "lost"
    if first or second:
        return "second" if first else "first"
    return "draw"


def champion(fmt: str, table: list[Standing], played: list[Game], left: set[int]) -> int | None:
    """The winner: the final's in a knockout, else the top of the standings (of those who
    stayed, if anyone did)."""
    if fmt == "knockout" and played:
        last = max(g.round for g in played)
        finals = [w for g in played if g.round == last and (w := knockout_winner(g)) is not None]
        if len(finals) == 1:
            return finals[0]
    stayed = [s.entrant for s in table if s.entrant not in left]
    ranked = stayed or [s.entrant for s in table]
    return ranked[0] if ranked else None
