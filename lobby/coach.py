"""The coach: hints in a live game against the bot, replays and analyses of finished matches.
Hints and analyses run in the engine pool; an analysis is stored once computed."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, replace

from db.errors import StoreError
from db.store import Store
from engine.analysis import BUDGETS, VERSION, Analysis, analyse
from engine.hints import Hint, hint
from lobby.announce import Announcer
from lobby.boundary import boundary
from lobby.charts import win_chart
from lobby.errors import (
    BadRequest,
    LimitReached,
    MatchOver,
    NotInMatch,
    NotYourTurn,
    StaleAction,
)
from lobby.joberrors import JobFailed
from lobby.matches import Matches, check_origin
from lobby.moments import key_moments, win_chances
from lobby.people import People
from lobby.pool import EnginePool
from lobby.present import result_line
from lobby.records import TRANSIENT, LobbyConfig, Person, Snapshot, Where
from tools.pictures import Replay, final_png, replay_gif

log = logging.getLogger(__name__)

#: A store that failed to keep an analysis: it is shown anyway.
_NOT_STORED: tuple[type[BaseException], ...] = (StoreError, *TRANSIENT)


@dataclass(frozen=True, slots=True)
class ReplayFiles:
    replay: Replay
    gif: bytes
    png: bytes


@dataclass(frozen=True, slots=True)
class AnalysisReport:
    """A finished match's analysis, the names and result around it, its replay GIF, and the
    PNG of the win chance over the game (a front end puts it in words: `lobby.moments.alt_text`)."""

    replay: Replay
    analysis: Analysis
    gif: bytes
    stored: bool  # it was computed before (the answer came at once)
    chart: bytes


class Coach:
    """Hints, replays and analyses, over the life of matches."""

    def __init__(
        self,
        store: Store,
        pool: EnginePool,
        config: LobbyConfig,
        people: People,
        matches: Matches,
        announce: Announcer,
    ) -> None:
        self._store = store
        self._pool = pool
        self._config = config
        self._people = people
        self._matches = matches
        self._announce = announce
        #: Each match's last hint and the ply it was for: asked again there, it is free.
        self._last_hint: dict[int, tuple[int, Hint]] = {}
        #: Analyses being computed, by match; who waits for which; one runs at a time.
        self._analyses: dict[int, asyncio.Task[Analysis]] = {}
        self._analysis_waiters: dict[tuple[str, str], int] = {}
        self._analysis_turn = asyncio.Lock()

    # ------------------------------------------------------------------ hints

    @boundary
    async def hint(
        self, match_id: int, person: Person, via: Where | None = None
    ) -> tuple[Hint, Snapshot]:
        """The best move for the person to move in their game against the bot, and what it
        leads to. The game becomes unrated (stored before the answer); a few per game, and
        asking again at the same position gives the same hint for free."""
        snap = await self._matches.snapshot(match_id)
        check_origin(snap.match, via)
        player = await self._people.known(person)
        if player is None or snap.seat_index(player.id) is None:
            raise NotInMatch(f"match #{match_id} is not yours")
        if snap.match.kind != "pve":
            raise BadRequest("hints are only for games against the bot")
        if not snap.live:
            raise MatchOver(f"match #{match_id} is over")
        if snap.seat_index(player.id) != snap.state.to_move():
            raise NotYourTurn("a hint is for your turn: wait for the bot's move")
        used = int(snap.match.options.get("hints") or 0)
        if self._config.max_hints <= 0:
            raise BadRequest("hints are turned off on this bot")
        last = self._last_hint.get(match_id)
        if last is not None and last[0] == snap.match.ply:  # the same position: the same hint
            return last[1], snap
        if used >= self._config.max_hints:
            raise LimitReached(f"you have used the {used} hints of this game")
        seconds = self._config.hint_seconds
        try:
            found = await self._pool.run(
                hint, snap.state, seconds, cap=2 * seconds + 2, urgent=True
            )
        except JobFailed as exc:  # a crashed or hung worker: no hint, nothing counted
            log.warning("match %s: no hint: %s", match_id, exc)
            raise BadRequest("no hint could be found this time; try again") from None
        async with self._matches.lock(match_id):
            current = await self._matches.snapshot(match_id)
            if not current.live or current.match.ply != snap.match.ply:
                raise StaleAction("the game moved on while the hint was found; ask again")
            match = await self._store.matches.use_hint(match_id)
            if len(self._last_hint) >= 10_000:  # ended matches' hints go, now and then
                self._last_hint.clear()
            self._last_hint[match_id] = (match.ply, found)
        after = replace(current, match=match)
        await self._announce.match(after)  # the board's footer now says the game is unrated
        return found, after

    # ------------------------------------------------------------------ replays

    @boundary
    async def replay(self, match_id: int | None, person: Person) -> ReplayFiles:
        """The pictures of a finished match (`None`: the person's last one): an animated GIF
        of every move and a PNG of the end, drawn in a thread (well under a second)."""
        replay = await self._finished(match_id, person, "replay")
        gif, png = await asyncio.to_thread(lambda: (replay_gif(replay), final_png(replay)))
        return ReplayFiles(replay, gif, png)

    async def _finished(self, match_id: int | None, person: Person, verb: str) -> Replay:
        """A finished match (`None`: the person's last one) as the pictures see it."""
        if match_id is None:
            player = await self._people.known(person)  # asking creates no player
            last = [] if player is None else await self._store.matches.history(player.id, limit=1)
            if not last:
                raise BadRequest("you have no finished match yet: give a match number")
            match_id = last[0].match.id
        snap = await self._matches.snapshot(match_id)
        if snap.live:
            raise BadRequest(f"match #{match_id} is still being played: {verb} it when it ends")
        rows = await self._store.matches.moves(match_id)
        return Replay(
            match_id,
            snap.match.game,
            snap.match.variant,
            (snap.seats[0].name, snap.seats[1].name),
            tuple(r.move for r in rows),
            result_line(snap),
        )

    # ------------------------------------------------------------------ analyses

    def analysis_seconds(self, game: str) -> float:
        """How long an analysis of `game` may take (the engine's budget unless configured)."""
        return self._config.analysis_seconds or BUDGETS.get(game, 5.0)

    @boundary
    async def analysis_target(self, match_id: int | None, person: Person) -> Replay:
        """The match an analysis request is for, checked (finished, with moves), quickly: a
        front end asks this before it shows that an analysis is under way."""
        replay = await self._finished(match_id, person, "analyse")
        if not replay.moves:
            raise BadRequest(f"match #{replay.match_id} has no moves to analyse")
        return replay

    @boundary
    async def analyse(self, match_id: int | None, person: Person) -> AnalysisReport:
        """Every move of a finished match judged by the solvers (`None`: the person's last
        match), computed once in the engine pool and stored; with the replay's GIF.

        One analysis runs at a time (the pool keeps a worker for games) and a few may wait;
        a person waits for one match at a time. A second request for a match being analysed
        waits for the same result."""
        replay, found, stored = await self.analysis(match_id, person)
        marks = [r.ply + 1 for r in key_moments(found)]  # the point after each key move

        def draw() -> tuple[bytes, bytes]:
            return replay_gif(replay), win_chart(replay.names, win_chances(found), marks)

        gif, chart = await asyncio.to_thread(draw)
        return AnalysisReport(replay, found, gif, stored, chart)

    async def analysis(self, match_id: int | None, person: Person) -> tuple[Replay, Analysis, bool]:
        """The match, its analysis (stored, else computed as `analyse` does) and whether it was
        stored, without the pictures."""
        replay = await self.analysis_target(match_id, person)
        found = await self._stored_analysis(replay.match_id)
        if found is not None:
            return replay, found, True
        return replay, await self._analysis_of(replay, person), False

    async def _stored_analysis(self, match_id: int) -> Analysis | None:
        data = await self._store.analyses.get(match_id, VERSION)
        if data is None:
            return None
        try:
            return Analysis.from_json(data)
        except ValueError as exc:  # a damaged row: computed again and replaced
            log.warning(
                "match %s: stored analysis unreadable (%s): computing it again", match_id, exc
            )
            return None

    async def _analysis_of(self, replay: Replay, person: Person) -> Analysis:
        task = self._analyses.get(replay.match_id)
        if task is None:
            if self._pool.workers == 1:  # it would hold the only worker: bot moves would wait
                raise BadRequest(
                    "analyses need two engine workers (one is kept for games): the bot's owner "
                    "can set BOARDBOT_WORKERS to 2 or more"
                )
            waiting = self._analysis_waiters.get((person.kind, str(person.ident)))
            if waiting is not None and person.kind == "user":
                raise LimitReached(
                    f"your analysis of match #{waiting} is still running: wait for it first"
                )
            if len(self._analyses) >= self._config.max_analyses:
                raise LimitReached("the analyser is busy with other games: try again in a minute")
            task = asyncio.create_task(self._compute_analysis(replay))
            self._analyses[replay.match_id] = task
            task.add_done_callback(lambda _: self._analyses.pop(replay.match_id, None))
        self._analysis_waiters[(person.kind, str(person.ident))] = replay.match_id
        try:
            return await asyncio.shield(task)  # a request given up leaves the work to finish
        finally:
            self._analysis_waiters.pop((person.kind, str(person.ident)), None)

    async def _compute_analysis(self, replay: Replay) -> Analysis:
        seconds = self.analysis_seconds(replay.game)
        async with self._analysis_turn:  # one at a time: the other worker stays for games
            try:
                found = await self._pool.run(
                    analyse, replay.game, list(replay.moves), replay.variant, seconds,
                    cap=2 * seconds + 10,
                )  # fmt: skip
            except JobFailed as exc:  # a crashed or hung worker: nothing stored
                log.warning("match %s: no analysis: %s", replay.match_id, exc)
                raise BadRequest("the analysis failed this time; try again") from None
        try:
            await self._store.analyses.put(replay.match_id, VERSION, found.to_json())
        except _NOT_STORED as exc:  # shown anyway; the next request computes it again
            log.warning("match %s: analysis not stored: %s", replay.match_id, exc)
        return found
