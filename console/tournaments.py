"""`/tournament` in the console: create, join (the user, or one of the bot's players), leave,
start, standings, cancel, on the lobby's tournaments (`lobby.tournaments`) in the console's one
server (`CONSOLE_SERVER`, which has no channels: one tournament at a time).

A session follows its tournament (`Follow`): each round's pairings, every game's result, the
standings after each round and the winner are said in a line (or a block) as the lobby
announces them; a local player's games show their board and take their moves like any match,
the games between two of the bot's players play on their own, without a pause between moves
(the console says their results, not their moves). While the tournament can go on without
anyone typing, a task of the session waits for it: `/wait` and the end of a script wait with
it, until it needs a move of a local player or is over. A tournament left running when the
console closes goes on at the next start (`Follow.resume`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from console.tournament_text import end_line, result_line, round_line, standings_after
from console.tournament_text import standings_text as standings_block
from console.values import UsageError, offer_key
from lobby.errors import BadRequest, LobbyError
from lobby.records import Snapshot, Where
from lobby.settings import CONSOLE_SERVER
from lobby.tournament_rounds import TournamentNews, TournamentView
from lobby.words import plural

if TYPE_CHECKING:
    from console.session import Session

log = logging.getLogger(__name__)

#: The console's one server; it has no channels.
WHERE = Where(CONSOLE_SERVER)
#: Seconds between the moves of a tournament's game between two of the bot's players.
BOT_GAME_DELAY = 0.0
MAX_BOT_NAME = 100  # as the Discord option


def in_a_tournament(snap: Snapshot) -> bool:
    """Whether a match plays a tournament's game."""
    return "tournament" in snap.match.options


@dataclass(slots=True)
class Seen:
    """What the session has said of a tournament."""

    round: int = 0  # the pairings said up to this round
    results: set[tuple[int, int]] = field(default_factory=set)  # (round, board)
    standings: int = 0  # the standings said after this round
    ended: bool = False


class Follow:
    """A session following the console's tournament (the module's docstring)."""

    def __init__(self, console: Session) -> None:
        self.console = console
        self.seen: dict[int, Seen] = {}
        self.last: int | None = None  # the tournament this session knows last
        self.waiting = False  # the task that waits for the tournament is running
        self.changed = asyncio.Event()
        lobby = console.lobby
        self._delay = lobby.config.botmatch_delay
        lobby.config.botmatch_delay = BOT_GAME_DELAY
        lobby.tournaments.listeners.append(self.on_news)
        lobby.listeners.append(self.on_snapshot)

    def detach(self) -> None:
        lobby = self.console.lobby
        lobby.config.botmatch_delay = self._delay
        with contextlib.suppress(ValueError):
            lobby.tournaments.listeners.remove(self.on_news)
        with contextlib.suppress(ValueError):
            lobby.listeners.remove(self.on_snapshot)

    # ------------------------------------------------------------------ the lobby's news

    async def on_news(self, news: TournamentNews) -> None:
        """Say what changed in the console's tournament; show local players' new games."""
        view = news.view
        if view.tournament.guild_id != CONSOLE_SERVER:
            return
        self.last = view.id
        if view.id not in self.seen:
            self.seen[view.id] = _first_sight(view)
        lines = self._changes(view, self.seen[view.id])
        if lines:
            self.console.write("\n".join(lines))
        for snap in news.boards:
            await self._board(view, snap)
        t = view.tournament
        if not t.active and t.announced_at is None:
            await self.console.lobby.tournaments.announced(t.id)
        self.wake()

    def _changes(self, view: TournamentView, seen: Seen) -> list[str]:
        """The lines not said yet, in order: each round's pairings, results and standings,
        then the end."""
        t = view.tournament
        out: list[str] = []
        if seen.round == 0 and t.round >= 1:
            out.append(
                f"Tournament #{t.id} starts: {plural(len(view.placings), 'player')},"
                f" {plural(t.rounds or 0, 'round')}."
            )
        for rnd in range(1, t.round + 1):
            games = [g for g in view.games if g.round == rnd]
            if seen.round < rnd:
                out.append(round_line(view, rnd))
                seen.round = rnd
            for g in games:
                if g.outcome is not None and (rnd, g.board) not in seen.results:
                    seen.results.add((rnd, g.board))
                    if g.second_id is not None:
                        out.append(result_line(view, g))
            if seen.standings < rnd and all(g.outcome is not None for g in games):
                out.append(standings_after(view, rnd))
                seen.standings = rnd
        if not t.active and not seen.ended:
            seen.ended = True
            out.append(end_line(view))
        return out

    async def _board(self, view: TournamentView, snap: Snapshot) -> None:
        """A new game of local players: its board, taken up as their match."""
        console = self.console
        names = [
            s.player.local_name
            for s in snap.seats
            if s.player.kind == "local" and s.player.local_name is not None
        ]
        if not names or all(snap.id in console.matches.get(n, []) for n in names):
            return
        console.remember(snap, *names)
        t = view.tournament
        whose = "your game" if console.user in names else f"a game of {' and '.join(names)}"
        console.write(f"Tournament #{t.id}, round {t.round}: {whose}, match #{snap.id}.")
        console.show(snap)
        if console.user in names:
            with contextlib.suppress(UsageError, LobbyError):
                current = await console.current(playable=True)
                if current.id != snap.id:
                    console.write(
                        f"Your moves go to match #{current.id}: /switch {snap.id} plays this one."
                    )
        if snap.seat_to_move.is_agent and not console.interactive:
            await console.advance(snap.id)  # a script reads on once the bot has replied

    async def on_snapshot(self, snap: Snapshot) -> None:
        """A move or the end of a tournament's game: the waiting task looks again."""
        if snap.match.guild_id == CONSOLE_SERVER and in_a_tournament(snap):
            self.wake()

    # ------------------------------------------------------------------ waiting for it

    def wake(self) -> None:
        """Something changed: the waiting task looks again (started if it is not running)."""
        self.changed.set()
        if not self.waiting and self.last is not None:
            self.waiting = True
            self.console.background(self._wait, f"tournament #{self.last}")

    async def _wait(self) -> None:
        """Run while the tournament goes on without anyone typing."""
        try:
            while True:
                self.changed.clear()
                if not await self._goes_on():
                    return
                await self.changed.wait()
        finally:
            self.waiting = False

    async def _goes_on(self) -> bool:
        """Whether the tournament goes on by itself: a game of its round has one of the
        bot's players to move, is being started or settled, or the next round is due; or
        its end is not said yet."""
        if self.last is None:
            return False
        lobby = self.console.lobby
        view = await lobby.tournaments.view(self.last)
        t = view.tournament
        if t.status != "running":
            return not t.active and not self.seen.get(t.id, Seen()).ended
        for g in view.current():
            if g.outcome is not None:
                continue
            if g.match_id is None:
                return True
            snap = await lobby.snapshot(g.match_id)
            if not snap.live or snap.seat_to_move.is_agent:
                return True
        return all(g.outcome is not None for g in view.current())

    # ------------------------------------------------------------------ restarts

    async def resume(self) -> None:
        """At the start: say which tournament goes on, then let the lobby take every running
        one up (what it says next is what changed meanwhile)."""
        console = self.console
        with contextlib.suppress(BadRequest):
            view = await console.lobby.tournaments.standings(WHERE)
            t = view.tournament
            self.last = t.id
            self.seen[t.id] = Seen(
                round=t.round,
                results={(g.round, g.board) for g in view.games if g.outcome is not None},
                standings=max(0, t.round - 1),
            )
            if t.status == "open":
                console.write(
                    f"Tournament #{t.id} is open: {plural(len(view.placings), 'player')}"
                    " (/tournament standings, /tournament start)."
                )
            else:
                console.write(
                    f"Tournament #{t.id} goes on: round {t.round} of {t.rounds}"
                    " (/tournament standings)."
                )
                console.write(round_line(view, t.round))
        try:
            await console.lobby.tournaments.resume()
        except Exception as exc:  # never a reason not to start: the sweep tries again
            log.debug("tournaments not resumed", exc_info=True)
            console.error(f"the tournaments are not taken up yet: {exc}")
        self.wake()


def _first_sight(view: TournamentView) -> Seen:
    """What is left to say of a tournament this session had not seen: all of an open or
    running one; of one that is over (its end not announced when a process stopped), the
    last standings and its end."""
    t = view.tournament
    if t.active:
        return Seen()
    said = {(g.round, g.board) for g in view.games if g.outcome is not None}
    last = t.round - 1 if t.status == "finished" else t.round
    return Seen(round=t.round, results=said, standings=max(0, last))


_FOLLOWS: weakref.WeakKeyDictionary[Session, Follow] = weakref.WeakKeyDictionary()


def attach(console: Session) -> Follow:
    """The session follows the console's tournaments from now on (until `detach`)."""
    found = _FOLLOWS.get(console)
    if found is None:
        found = _FOLLOWS[console] = Follow(console)
    return found


def detach(console: Session) -> None:
    found = _FOLLOWS.pop(console, None)
    if found is not None:
        found.detach()


# ---------------------------------------------------------------------- the command


def _whole(opts: dict[str, str], name: str) -> int | None:
    text = opts.get(name)
    if text is None:
        return None
    if not (text.isascii() and text.isdigit() and len(text) <= 6):
        raise UsageError(f"{name} must be a whole number, not {text[:40]!r}")
    return int(text)


def _number(opts: dict[str, str], name: str) -> float | None:
    text = opts.get(name)
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"{name} must be a number, not {text[:40]!r}") from None
    if not math.isfinite(value):
        raise UsageError(f"{name} must be a number, not {text[:40]!r}")
    return int(value) if value.is_integer() else value


async def cmd_tournament(console: Session, opts: dict[str, str]) -> None:
    follow = attach(console)
    action = opts["action"]
    lobby = console.lobby
    me = console.person()
    if action == "create":
        game = offer_key(opts["game"])
        rounds = _whole(opts, "rounds")
        clock, start = _number(opts, "clock"), _number(opts, "start")
        fmt = opts["format"].lower()
        view = await lobby.tournaments.create(me, WHERE, game, fmt, rounds, clock, start)
        follow.last = view.id
        follow.seen[view.id] = Seen()
        console.write(await _standings(console, view))
    elif action == "join":
        bot = opts.get("bot")
        if bot is None:
            view = await lobby.tournaments.join(me, WHERE)
            who = console.user
        else:
            if len(bot) > MAX_BOT_NAME:
                raise UsageError(f"bot: a name of 1 to {MAX_BOT_NAME} characters")
            before = {p.player_id for p in (await _shown(console, follow)).placings}
            view = await lobby.tournaments.enter(bot, WHERE, me, False)
            new = [p.name for p in view.placings if p.player_id not in before]
            who = new[0] if new else bot.strip()
        console.write(f"{who} joined: {plural(len(view.placings), 'player')} so far.")
    elif action == "leave":
        view = await lobby.tournaments.leave(me, WHERE)
        running = view.tournament.status != "open"
        console.write(
            f"{console.user} left"
            + (": the games left are forfeited." if running else " the tournament.")
        )
    elif action == "start":
        await lobby.tournaments.start(WHERE, me, False)  # what it starts is said as news
    elif action == "standings":
        console.write(await _standings(console, await _shown(console, follow)))
    elif action == "cancel":
        await lobby.tournaments.cancel(WHERE, me, False)  # said as news


async def _shown(console: Session, follow: Follow) -> TournamentView:
    """The console's tournament, or the last one this session followed once it is over."""
    try:
        view = await console.lobby.tournaments.standings(WHERE)
    except BadRequest:
        if follow.last is None:
            raise
        return await console.lobby.tournaments.view(follow.last)
    follow.last = view.id
    return view


async def _standings(console: Session, view: TournamentView) -> str:
    """The standings in full, with the console's clock where the tournament has none."""
    found = await console.lobby.server_settings(CONSOLE_SERVER)
    return standings_block(view, console.lobby.clock(), float(found.value("turn_seconds")))
