"""One console session: the local players, the matches it shows and what it prints (the
commands act on it; `console.dispatch.Console` handles its lines)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import IO, Any

from console import render
from console.terminal import Terminal
from console.values import UsageError
from lobby import present
from lobby.core import Lobby, Person, Snapshot
from lobby.errors import LobbyError
from lobby.models import Match
from lobby.training import TrainingJob

log = logging.getLogger(__name__)


class Session:
    """One console session: the current local user, their matches, and what is printed."""

    def __init__(
        self,
        lobby: Lobby,
        out: IO[str],
        user: str,
        interactive: bool,
        stop: asyncio.Event | None = None,
    ) -> None:
        self.lobby = lobby
        self.out = out
        self.user = user
        self.interactive = interactive
        # local name -> the matches they started or joined, oldest first
        self.matches: dict[str, list[int]] = {}
        self.botmatches: list[int] = []
        self.watched: set[int] = set()
        self.seen_ply: dict[int, int] = {}
        self.reported_end: set[int] = set()
        self.tasks: set[asyncio.Task[Any]] = set()
        self.prompt_shown = False
        self._adopted: set[str] = set()
        #: local name -> the match their bare moves go to (chosen with /switch)
        self.chosen: dict[str, int] = {}
        self.prepared = asyncio.Event()  # what an earlier process left has been taken up
        #: in a terminal: reads the lines, so output keeps the line being typed
        self.terminal: Terminal | None = None
        self.stop = stop  # set by a signal: the console leaves
        self.training: list[TrainingJob] = []
        #: bot matches being watched (/watch) -> set when they end
        self.endings: dict[int, asyncio.Event] = {}
        #: local name -> their retry under way (/retry): the match and the ply of the mistake
        self.retrying: dict[str, tuple[int, int]] = {}
        #: local name -> the key of their puzzle waiting for an answer (/puzzle)
        self.puzzling: dict[str, str] = {}

    # ------------------------------------------------------------------ output

    def write(self, text: str) -> None:
        """Print a block of lines at once (keeps the prompt tidy in a terminal)."""
        text = render.markup(text, self.interactive)
        if self.terminal is not None:
            self.terminal.print_above(text)
            return
        interrupted = self.prompt_shown  # output that arrived while waiting for input
        if interrupted:
            text = "\n" + text
            self.prompt_shown = False
        self.out.write(text + "\n")
        self.out.flush()
        if interrupted:
            self.prompt()

    def error(self, message: str) -> None:
        self.write(f"error: {message}")

    def progress(self, text: str, *, last: bool = False, of: str = "training") -> None:
        """A progress line `of` a training job (or the engine's warm-up): in a terminal one
        line, redrawn in place while nothing else is printed (a new one after other output);
        `last`: the final one."""
        if self.terminal is None:
            self.write(text)
        elif last or self.terminal.prompting:  # redrawn only under a prompt, never mid-command
            self.terminal.print_above(self.terminal.fit(text), progress=of)

    def prompt(self) -> None:
        if self.terminal is not None:
            return  # the terminal draws its own
        if self.interactive and not self.prompt_shown:
            self.out.write(f"{self.user}> ")
            self.out.flush()
            self.prompt_shown = True

    def show(self, snap: Snapshot) -> None:
        """A match in full: title, board, status, footer."""
        self.write(render.full(snap, self.lobby.clock()))

    def summary(self, snap: Snapshot) -> str:
        """One line: id, game, players and whose turn."""
        return render.summary(snap, self.lobby.clock())

    async def on_snapshot(self, snap: Snapshot) -> None:
        """Lobby listener: print each move and the end of every match this session shows
        (with its title: an end on the clock or by a resignation comes out of the blue)."""
        if snap.id not in self.watched or snap.id in self.reported_end:
            self._ended(snap)
            return
        seen = self.seen_ply.get(snap.id, snap.match.ply)
        lines: list[str] = []
        last: Any = None
        if snap.match.ply > seen:
            rows = [r for r in await self.lobby.moves(snap.id) if r.ply >= seen]
            lines, last = render.moves_played(snap, rows[: snap.match.ply - seen])
        self.seen_ply[snap.id] = snap.match.ply
        if not snap.live:
            lines.append(f"#{snap.id} {present.title(snap)}")
        lines.append(render.board(snap, self.lobby.clock(), last))
        if not snap.live:
            self.reported_end.add(snap.id)
            lines.append(present.footer(snap))
        self.write("\n".join(lines))
        self._ended(snap)

    def _ended(self, snap: Snapshot) -> None:
        """A watched match's end is printed: /watch may give the prompt back."""
        if not snap.live and snap.id in self.endings:
            self.endings[snap.id].set()

    # ------------------------------------------------------------------ matches of the session

    def person(self, name: str | None = None) -> Person:
        name = name or self.user
        return Person("local", name, name)

    def remember(self, snap: Snapshot, *names: str) -> None:
        for name in names:
            ids = self.matches.setdefault(name, [])
            if snap.id not in ids:
                ids.append(snap.id)
        self.watched.add(snap.id)
        self.seen_ply.setdefault(snap.id, snap.match.ply)

    async def adopt(self, name: str) -> None:
        """Take up `name`'s live matches from earlier sessions (the database keeps them): one
        line each; `/board` shows the current one, `/matches` all of them."""
        if name in self._adopted:
            return
        self._adopted.add(name)
        known = set(self.matches.get(name, [])) | set(self.botmatches)
        matches: list[Match] = [
            m for m in await self.lobby.live_matches_of(self.person(name)) if m.id not in known
        ]
        for match in matches:
            snap = await self.lobby.snapshot(match.id)
            self.remember(snap, name)
            self.write(f"A live match from an earlier session: {self.summary(snap)}")
        if matches and not self.interactive:
            for match in matches:  # a script reads on once the bot has replied
                await self.lobby.advance(match.id)

    def resume_botmatch(self, snap: Snapshot) -> None:
        """A bot match an earlier process left running: it goes on as this session's."""
        self.watched.add(snap.id)
        self.seen_ply.setdefault(snap.id, snap.match.ply)
        if snap.id not in self.botmatches:
            self.botmatches.append(snap.id)
        match_id = snap.id
        self.background(lambda: self.lobby.run_botmatch(match_id), f"bot match #{match_id}")

    async def current(self, *, playable: bool) -> Snapshot:
        """The current user's current match: the one chosen with /switch while it is live,
        else their most recent one of this session (live and playable if asked)."""
        chosen = self.chosen.get(self.user)
        if chosen is not None:
            snap = await self.lobby.snapshot(chosen)
            if snap.live and snap.match.kind != "eve":
                return snap
            del self.chosen[self.user]
        fallback: Snapshot | None = None
        for match_id in reversed(self.matches.get(self.user, [])):
            snap = await self.lobby.snapshot(match_id)
            if snap.live and snap.match.kind != "eve":
                return snap
            fallback = fallback or snap
        if playable or fallback is None:
            if playable:
                raise UsageError(
                    f"no live match for {self.user}: start one with /play or /challenge"
                )
            raise UsageError(f"no match for {self.user} yet: start one with /play or /challenge")
        return fallback

    def mover(self, snap: Snapshot) -> Person:
        """Who acts for the side to move: in a hot-seat match the local player whose turn it
        is, else the current user."""
        player = snap.seat_to_move.player
        if snap.match.kind == "pvp" and player.kind == "local" and player.local_name:
            return Person("local", player.local_name, player.display_name)
        return self.person()

    async def advance(self, match_id: int) -> Snapshot:
        """Let the agent to move reply (its board is printed by the listener)."""
        return await self.lobby.advance(match_id)

    def background(self, start: Callable[[], Awaitable[Any]], what: str) -> None:
        """Run `start()` as a task of this session, printing its failure as an error line."""

        async def run() -> None:
            try:
                await start()
            except LobbyError as exc:
                self.error(f"{what}: {exc}")
            except Exception as exc:
                log.debug("%s failed", what, exc_info=True)
                self.error(f"{what} failed: {type(exc).__name__}: {exc}")

        task = asyncio.ensure_future(run())
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def wait(self) -> None:
        while self.tasks:
            await asyncio.gather(*list(self.tasks), return_exceptions=True)

    # ------------------------------------------------------------------ leaving

    async def close(
        self, *, finish: bool, keep: bool = False, stop: asyncio.Event | None = None
    ) -> None:
        """Wait for the bot matches (end of a script) or stop them (/quit), then cancel the
        rest; `keep`: leave them live for the next start (SIGTERM, Ctrl-C). A `stop` that
        comes while waiting ends the wait and keeps them."""
        if finish:
            waiting = asyncio.ensure_future(self.wait())
            stopping = asyncio.ensure_future(stop.wait()) if stop is not None else None
            others = {stopping} if stopping is not None else set()
            await asyncio.wait({waiting, *others}, return_when=asyncio.FIRST_COMPLETED)
            for task in (waiting, stopping):
                if task is not None:
                    task.cancel()
            keep = keep or (stop is not None and stop.is_set())
        for match_id in [] if keep else self.botmatches:
            with contextlib.suppress(LobbyError):
                if (await self.lobby.snapshot(match_id)).live:
                    await self.lobby.stop(match_id)
        for task in list(self.tasks):
            task.cancel()
        await asyncio.gather(*list(self.tasks), return_exceptions=True)
