"""The local console front end: the Discord commands typed in a terminal, on the same lobby.

`python bot.py` without a DISCORD_TOKEN runs this. It reads one command (or one bare move) per
line from stdin and prints the same emoji boards and status words as the Discord embeds. Lines
are read by a thread, so agent moves, bot matches and the turn clock keep running while it waits
for input; it can be scripted (`python bot.py < script.txt`): every line read from a
non-terminal is echoed as `> line`, comment lines (`# ...`) are skipped, and at the end of the
input it waits for running bot matches before it exits.

Every bad input gets one line starting with `error:` and changes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import logging
import re
import shlex
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from engine.agents import registry
from engine.games.catalog import GAMES, OFFERS, game_info, offer
from engine.warm import warm_rules
from lineedit import LineEditor
from lobby import present
from lobby.core import Lobby, Person, Snapshot
from lobby.errors import LobbyError
from lobby.learning import TrainingJob
from lobby.models import Match

log = logging.getLogger(__name__)

BOTMATCH_DELAY = 0.5  # seconds between the moves of a /botmatch (Discord's default is longer)
TRAIN_REPORT_SECONDS = 5.0  # a progress line this often while a /train job runs
PROGRESS_AFTER = 2.0  # an analysis still running after this long gets a note
MAX_NAME = 32


class UsageError(Exception):
    """A bad command line; the message is shown after `error: `."""


@dataclass(frozen=True, slots=True)
class CommandInfo:
    options: tuple[str, ...]  # in the order positional values fill them
    required: tuple[str, ...]
    usage: str
    summary: str


COMMANDS: dict[str, CommandInfo] = {
    "play": CommandInfo(
        ("game", "opponent", "first"),
        ("game", "opponent"),
        f"/play game:{'|'.join(o.key for o in OFFERS)} opponent:NAME [first:me|bot|random]",
        "play the bot; NAME is a level (easy, medium, hard, expert), one of its other players"
        " (/agents lists them) or an agent spec such as minimax:depth=4",
    ),
    "challenge": CommandInfo(
        ("opponent", "game"),
        ("opponent", "game"),
        "/challenge opponent:NAME game:GAME",
        "play another local player at this keyboard (hot-seat); you move first",
    ),
    "botmatch": CommandInfo(
        ("game", "first", "second", "delay"),
        ("game", "first", "second"),
        "/botmatch game:GAME first:AGENT second:AGENT [delay:SECONDS]",
        f"watch two agents play (in the background, {BOTMATCH_DELAY} s per move by default)",
    ),
    "board": CommandInfo((), (), "/board", "show your current match (where your moves go)"),
    "matches": CommandInfo((), (), "/matches", "your live matches with their ids"),
    "switch": CommandInfo(
        ("match",), ("match",), "/switch ID", "make match ID your current one (see /matches)"
    ),
    "resign": CommandInfo(
        (), (), "/resign", "resign your current match (hot-seat: the player to move resigns)"
    ),
    "hint": CommandInfo(
        (),
        (),
        "/hint",
        "the best move in your game against the bot, and what it leads to (the game becomes"
        " unrated; a few per game)",
    ),
    "stop": CommandInfo((), (), "/stop", "stop the bot match you started last"),
    "wait": CommandInfo((), (), "/wait", "wait until the running bot matches have ended"),
    "leaderboard": CommandInfo(
        ("game",), ("game",), "/leaderboard game:GAME", "the best rated players of a game"
    ),
    "stats": CommandInfo(
        ("user", "chart"),
        (),
        "/stats [user:NAME] [chart:FILE.png]",
        "wins, draws, losses and ratings; with chart:, a picture of the rating over time",
    ),
    "history": CommandInfo(("user",), (), "/history [user:NAME]", "recent ended matches"),
    "replay": CommandInfo(
        ("match", "dir"),
        (),
        "/replay [match:N] [dir:FOLDER]",
        "a finished match as an animated GIF and a PNG of its end, written to files"
        " (default: your last match, this folder)",
    ),
    "analyse": CommandInfo(
        ("match", "gif"),
        (),
        "/analyse [match:N] [gif:FILE.gif]",
        "every move of a finished match judged by the solvers: best, good, inaccuracy, miss,"
        " blunder; accuracy and the turning point (default: your last match)",
    ),
    "agents": CommandInfo(
        ("game",),
        (),
        "/agents [game:GAME]",
        "the agents and levels: descriptions, ratings, what learning agents learned",
    ),
    "train": CommandInfo(
        ("game", "agent", "games", "opponent"),
        ("game", "agent", "games"),
        "/train game:GAME agent:AGENT games:N [opponent:AGENT]",
        "train a learning agent (e.g. trainer) by self-play, in the background",
    ),
    "as": CommandInfo(("name",), ("name",), "/as NAME", "switch the local player"),
    "help": CommandInfo((), (), "/help", "this list"),
    "quit": CommandInfo((), (), "/quit", "stop your running bot matches and leave"),
}
COMMAND_ALIASES = {
    "analyze": "analyse",
    "exit": "quit",
    "?": "help",
    "leaderboards": "leaderboard",
    "user": "as",
}
#: Older option names still understood.
OPTION_ALIASES = {"play": {"level": "opponent"}}


def parse_command(text: str) -> tuple[str, dict[str, str]] | None:
    """`/name key:value ... positional ...` -> (name, options); None if `text` is not a command.

    A value may be quoted ("..."). Positional values fill the options not given by key, in order.
    """
    try:
        tokens = shlex.split(text)
    except ValueError as exc:
        raise UsageError(f"cannot read that line: {exc}") from None
    if not tokens:
        return None
    head = tokens[0]
    word = head[1:].lower() if head.startswith("/") else head.lower()
    word = COMMAND_ALIASES.get(word, word)
    if word not in COMMANDS:
        if head.startswith("/") or len(tokens) > 1:
            raise UsageError(f"unknown command {head!r}; type /help for the commands")
        return None  # a bare move
    info = COMMANDS[word]
    options: dict[str, str] = {}
    positional: list[str] = []
    for token in tokens[1:]:
        key, sep, value = token.partition(":")
        key = key.lower()
        key = OPTION_ALIASES.get(word, {}).get(key, key)
        if sep and key in info.options:
            if key in options:
                raise UsageError(f"/{word}: {key} is given twice")
            options[key] = value.strip()
        elif sep and key.isidentifier() and not _is_agent_name(key):
            takes = ", ".join(info.options) if info.options else "no options"
            raise UsageError(f"/{word} has no option {key!r}; it takes {takes}")
        else:
            positional.append(token)  # a value (an agent spec such as minimax:depth=4, too)
    free = [name for name in info.options if name not in options]
    if len(positional) > len(free):
        extra = positional[len(free)]
        raise UsageError(f"/{word}: unexpected {extra!r}; usage: {info.usage}")
    options.update(zip(free, positional, strict=False))
    for name in info.required:
        if not options.get(name):
            raise UsageError(f"/{word} needs {name}:...; usage: {info.usage}")
    return word, {k: v for k, v in options.items() if v}


def _is_agent_name(word: str) -> bool:
    """A level or agent name: `minimax:depth=4` is a value, not an unknown option `minimax`."""
    return word in registry.AGENTS or any(word in levels for levels in registry.LEVELS.values())


def check_name(name: str) -> str:
    name = name.strip()
    if not name or len(name) > MAX_NAME:
        raise UsageError(f"a player name has 1 to {MAX_NAME} characters")
    if not name.isprintable() or name.startswith("/"):
        raise UsageError(f"{name!r} cannot be a player name")
    folded = name.casefold()
    if folded.startswith("bot") or _is_agent_name(folded):  # the bot's players are "Bot (...)"
        raise UsageError(f"{name!r} looks like one of the bot's players: choose another name")
    return name


def default_name() -> str:
    """The login name, if it makes a player name; else "you"."""
    try:
        return check_name(getpass.getuser())
    except (UsageError, OSError, KeyError):
        return "you"


def offer_key(text: str) -> str:
    """What to play: an offer's key, a game's name or an alias (`c4`, `reversi`)."""
    try:
        return offer(text).key
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def match_number(text: str, listed_by: str) -> int:
    raw = text.lstrip("#")
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 18):
        raise UsageError(f"{text!r} is not a match id (see {listed_by})")
    return int(raw)


def game_name(text: str) -> str:
    """A game (for the listings, which are per game): its name, an alias or an offer's key."""
    try:
        return offer(text).game
    except ValueError:
        raise UsageError(f"unknown game {text!r}: choose one of {', '.join(GAMES)}") from None


def _help_text(user: str) -> str:
    lines = ['Commands (options are key:value; quote values with spaces: opponent:"Ann Lee"):']
    for name, info in COMMANDS.items():
        summary = info.summary + (f" (now: {user})" if name == "as" else "")
        lines.append(f"  {info.usage}\n      {summary}")
    lines += [
        "A bare move plays in your current match (the last live one you started or joined):",
        "a column such as 4 in Connect Four, a square such as d3 in Othello; passes are automatic.",
        "Games: "
        + ", ".join(o.key for o in OFFERS)
        + "; levels: "
        + ", ".join(registry.LEVEL_NAMES),
        "Bot matches run in the background while you type; the end of a script waits for them.",
    ]
    return "\n".join(lines)


class Console:
    """One console session: the current local user, their matches, and what is printed."""

    def __init__(self, lobby: Lobby, out: IO[str], user: str, interactive: bool) -> None:
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
        #: in a terminal: reads the keys, so output keeps the line being typed
        self.editor: LineEditor | None = None

    # ------------------------------------------------------------------ output

    def write(self, text: str) -> None:
        """Print a block of lines at once (keeps the prompt tidy in a terminal)."""
        text = self._markup(text)
        if self.editor is not None:
            self.editor.print_above(text)
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

    def prompt(self) -> None:
        if self.editor is not None:
            if not self.editor.shown:
                self.editor.show(f"{self.user}> ")
            return
        if self.interactive and not self.prompt_shown:
            self.out.write(f"{self.user}> ")
            self.out.flush()
            self.prompt_shown = True

    def _markup(self, text: str) -> str:
        """The embeds' **bold**: bold in a terminal, plain in a script's output."""
        bold = r"\033[1m\1\033[0m" if self.interactive else r"\1"
        return re.sub(r"\*\*(.+?)\*\*", bold, text)

    def status(self, snap: Snapshot) -> str:
        return present.status(snap, discord_time=False, now=self.lobby.clock())

    def render(self, snap: Snapshot, last: Any = None) -> str:
        """Title-less block: board, status, Othello's score and legal moves."""
        if last is None:
            last = snap.last_move
        lines = [snap.state.render_emoji(last=last, show_legal=snap.live), self.status(snap)]
        score = present.score_line(snap)
        if score:
            lines.append(score)
        if snap.live and game_info(snap.match.game).list_moves and not snap.seat_to_move.is_agent:
            legal = [snap.state.move_to_str(m) for m in snap.state.legal_moves()]
            lines.append("Legal moves: " + ", ".join(legal))
        return "\n".join(lines)

    def show(self, snap: Snapshot) -> None:
        """A match in full: title, board, status, footer."""
        self.write(f"#{snap.id} {present.title(snap)}\n{self.render(snap)}\n{present.footer(snap)}")

    async def on_snapshot(self, snap: Snapshot) -> None:
        """Lobby listener: print each move and the end of every match this session shows."""
        if snap.id not in self.watched or snap.id in self.reported_end:
            return
        seen = self.seen_ply.get(snap.id, snap.match.ply)
        lines: list[str] = []
        last: Any = None
        if snap.match.ply > seen:
            rows = [r for r in await self.lobby.moves(snap.id) if r.ply >= seen]
            for row in rows[: snap.match.ply - seen]:
                seat = row.ply % 2
                who = f"{snap.seats[seat].name} {present.piece(snap.match.game, seat)}"
                if row.move == "pass":
                    lines.append(f"#{snap.id} {who} has no legal move and passes")
                else:
                    lines.append(f"#{snap.id} {who} plays {row.move}")
                    with contextlib.suppress(Exception):
                        last = snap.state.parse_move(row.move)
        self.seen_ply[snap.id] = snap.match.ply
        lines.append(self.render(snap, last))
        if not snap.live:
            self.reported_end.add(snap.id)
            lines.append(present.footer(snap))
        self.write("\n".join(lines))

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

    def summary(self, snap: Snapshot) -> str:
        """One line: id, game, players and whose turn."""
        title = present.title(snap).replace("**", "")
        return f"#{snap.id} {title} · {self.status(snap).replace('**', '')}"

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

    # ------------------------------------------------------------------ input

    async def handle(self, line: str) -> bool:
        """One input line; False when the console should exit."""
        text = line.strip()
        if not text or text.startswith("#"):
            return True
        if not self.interactive:
            self.write(f"> {text}")
        try:
            parsed = parse_command(text)
            if parsed is None:
                await self.move(text)
                return True
            name, options = parsed
            handler: Callable[[dict[str, str]], Awaitable[bool | None]] = getattr(
                self, f"cmd_{name}"
            )
            return await handler(options) is not False
        except (UsageError, LobbyError) as exc:
            self.error(str(exc) or type(exc).__name__)
        except Exception as exc:  # never a traceback in the terminal; the log has it at DEBUG
            log.debug("console command %r failed", text, exc_info=True)
            self.error(f"{type(exc).__name__}: {exc}")
        return True

    async def move(self, text: str) -> None:
        words = text.split()
        chosen = [w for w in words if w.lower().startswith("match:")]
        if chosen:  # "4 match:3": a move in match 3, which becomes the current one
            words.remove(chosen[0])
            await self.cmd_switch({"match": chosen[0].partition(":")[2]})
            text = " ".join(words)
        snap = await self.current(playable=True)
        seat = snap.seat_to_move
        player = seat.player
        if snap.match.kind == "pvp" and player.kind == "local" and player.local_name:
            mover = Person("local", player.local_name, player.display_name)  # hot-seat
        else:
            mover = self.person()
        snap = await self.lobby.play(snap.id, mover, text.lower(), expected_ply=snap.match.ply)
        if snap.live and snap.seat_to_move.is_agent and not self.interactive:
            await self.advance(snap.id)  # a script reads on once the bot has replied

    # ------------------------------------------------------------------ commands

    async def cmd_play(self, opts: dict[str, str]) -> None:
        game = offer_key(opts["game"])
        level = opts["opponent"]
        if level.lower() in registry.LEVELS[offer(game).game]:
            level = level.lower()
        first = opts.get("first", "me").lower()
        # The console is the machine's owner: any agent spec (checked and bounded) is allowed.
        snap = await self.lobby.start_pve(self.person(), game, level, first, raw_ok=True)
        self.remember(snap, self.user)
        self.chosen[self.user] = snap.id
        self.show(snap)
        if snap.seat_to_move.is_agent and not self.interactive:
            await self.advance(snap.id)  # a script reads on once the bot has replied

    async def cmd_challenge(self, opts: dict[str, str]) -> None:
        opponent = check_name(opts["opponent"])
        game = offer_key(opts["game"])
        snap = await self.lobby.start_pvp(self.person(), self.person(opponent), game)
        self.remember(snap, self.user, opponent)
        self.chosen[self.user] = snap.id
        self.show(snap)

    async def cmd_botmatch(self, opts: dict[str, str]) -> None:
        game = offer_key(opts["game"])
        try:
            delay = float(opts.get("delay", BOTMATCH_DELAY))
        except ValueError:
            raise UsageError(f"delay must be a number of seconds, not {opts['delay']!r}") from None
        snap = await self.lobby.start_eve(
            game, opts["first"], opts["second"], delay=delay, starter=self.person(), raw_ok=True
        )
        self.remember(snap, self.user)
        self.botmatches.append(snap.id)
        self.show(snap)
        match_id = snap.id
        self.background(lambda: self.lobby.run_botmatch(match_id), f"bot match #{match_id}")

    async def cmd_board(self, opts: dict[str, str]) -> None:
        self.show(await self.current(playable=False))

    async def cmd_matches(self, opts: dict[str, str]) -> None:
        matches = await self.lobby.live_matches_of(self.person())
        if not matches:
            self.write(f"{self.user} has no live match.")
            return
        current = await self.current(playable=False)
        lines = [f"Live matches of {self.user} (moves go to the one marked >):"]
        for match in matches:
            snap = await self.lobby.snapshot(match.id)
            mark = ">" if snap.id == current.id else " "
            lines.append(f"{mark} {self.summary(snap)}")
        self.write("\n".join(lines))

    async def cmd_switch(self, opts: dict[str, str]) -> None:
        snap = await self.lobby.snapshot(match_number(opts["match"], "/matches"))
        me = await self.lobby.player_for(self.person())
        if snap.seat_index(me.id) is None and not self._hot_seat(snap):
            raise UsageError(f"match #{snap.id} is not yours (see /matches)")
        if not snap.live:
            raise UsageError(f"match #{snap.id} is over")
        self.remember(snap, self.user)
        self.chosen[self.user] = snap.id
        self.write(f"Your moves now go to match #{snap.id}.")
        self.show(snap)

    def _hot_seat(self, snap: Snapshot) -> bool:
        return snap.id in self.matches.get(self.user, [])

    async def cmd_resign(self, opts: dict[str, str]) -> None:
        snap = await self.current(playable=True)
        player = snap.seat_to_move.player
        if snap.match.kind == "pvp" and player.kind == "local" and player.local_name:
            person = Person("local", player.local_name, player.display_name)
        else:
            person = self.person()
        await self.lobby.resign(snap.id, person)

    async def cmd_hint(self, opts: dict[str, str]) -> None:
        snap = await self.current(playable=True)
        found, after = await self.lobby.hint(snap.id, self.person())
        self.write(present.hint_line(found, after, self.lobby.config.max_hints))

    async def cmd_stop(self, opts: dict[str, str]) -> None:
        for match_id in reversed(self.botmatches):
            snap = await self.lobby.snapshot(match_id)
            if snap.live:
                await self.lobby.stop(match_id)
                return
        raise UsageError("no bot match of this session is running")

    async def cmd_wait(self, opts: dict[str, str]) -> None:
        await self.wait()

    def write_listing(self, listing: present.Listing) -> None:
        if not listing.lines:
            self.write(listing.empty)
            return
        head = listing.title + (f" ({listing.legend})" if listing.legend else "") + ":"
        self.write("\n".join([head] + [f"  {line}" for line in listing.lines]))

    async def cmd_leaderboard(self, opts: dict[str, str]) -> None:
        game = game_name(opts["game"])
        self.write_listing(present.leaderboard(game, await self.lobby.leaderboard(game)))

    async def cmd_stats(self, opts: dict[str, str]) -> None:
        name = check_name(opts.get("user", self.user))
        player, rows = await self.lobby.stats(self.person(name))
        self.write_listing(present.stats(player.display_name, rows))
        if "chart" not in opts:
            return
        chart = await self.lobby.rating_chart(player)
        if chart is None:
            self.write(f"No chart: {player.display_name} has no rated game yet.")
            return
        path = Path(opts["chart"])
        try:
            path.write_bytes(chart)
        except OSError as exc:
            raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
        self.write(f"Rating chart: {path} ({len(chart) // 1024 + 1} KB)")

    async def cmd_history(self, opts: dict[str, str]) -> None:
        name = check_name(opts.get("user", self.user))
        player, rows = await self.lobby.history(self.person(name))
        self.write_listing(present.history(player.display_name, rows))

    async def cmd_replay(self, opts: dict[str, str]) -> None:
        match_id = match_number(opts["match"], "/history") if "match" in opts else None
        folder = Path(opts.get("dir", "."))
        if not folder.is_dir():
            raise UsageError(f"{str(folder)!r} is not a folder")
        files = await self.lobby.replay(match_id, self.person())
        written = []
        for suffix, data in (("gif", files.gif), ("png", files.png)):
            path = folder / f"replay-{files.replay.match_id}.{suffix}"
            try:
                path.write_bytes(data)
            except OSError as exc:
                raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
            written.append(f"{path} ({len(data) // 1024 + 1} KB)")
        self.write(f"Match #{files.replay.match_id}: wrote " + " and ".join(written) + ".")

    async def cmd_analyse(self, opts: dict[str, str]) -> None:
        match_id = match_number(opts["match"], "/history") if "match" in opts else None
        gif = Path(opts["gif"]) if "gif" in opts else None
        if gif is not None and not gif.parent.is_dir():
            raise UsageError(f"{str(gif.parent)!r} is not a folder")
        job = asyncio.ensure_future(self.lobby.analyse(match_id, self.person()))
        done, _ = await asyncio.wait({job}, timeout=PROGRESS_AFTER)
        if not done:  # a note while it runs; the answer follows
            self.write(
                f"Analysing {'your last match' if match_id is None else f'match #{match_id}'}"
                " with the solvers (a few seconds)..."
            )
        report = await job
        a, names = report.analysis, report.replay.names
        self.write(present.analysis_title(report.replay.match_id, report.replay.game))
        self.write("\n".join(present.analysis_table(a, names)))
        self.write("\n".join(present.analysis_lines(a, names, report.replay.result)))
        if gif is not None:
            try:
                gif.write_bytes(report.gif)
            except OSError as exc:
                raise UsageError(f"cannot write {gif}: {exc.strerror or exc}") from None
            self.write(f"Replay: {gif} ({len(report.gif) // 1024 + 1} KB)")

    async def cmd_agents(self, opts: dict[str, str]) -> None:
        games = [game_name(opts["game"])] if "game" in opts else list(GAMES)
        lines = []
        for game in games:
            title = present.game_title(game)
            lines.append(f"{title} levels:")
            for name, level in registry.LEVELS[game].items():
                lines.append(f"  {name:<8} {level.spec.label()} {level.description}")
            lines.append(f"{title} agents (usable as opponent: or first:):")
            for overview in await self.lobby.agents_overview(game):
                heading, details = present.agent_lines(overview)
                lines.append(f"  **{heading}**")
                for detail in details:
                    lines += [f"      {part}" for part in detail.splitlines()]
        self.write("\n".join(lines))

    async def cmd_train(self, opts: dict[str, str]) -> None:
        game = game_name(opts["game"])
        try:
            games = int(opts["games"])
        except ValueError:
            raise UsageError(f"games must be a whole number, not {opts['games']!r}") from None
        job = self.lobby.train(game, opts["agent"], games, opts.get("opponent"), raw_ok=True)
        self.write(job.progress.text())
        self.background(lambda: self._follow_training(job), "training")

    async def _follow_training(self, job: TrainingJob) -> None:
        assert job.task is not None
        while True:
            done, _ = await asyncio.wait({job.task}, timeout=TRAIN_REPORT_SECONDS)
            self.write(job.progress.text())
            if done:
                return

    async def cmd_as(self, opts: dict[str, str]) -> None:
        self.user = check_name(opts["name"])
        self.write(f"You are now {self.user}.")
        await self.adopt(self.user)

    async def cmd_help(self, opts: dict[str, str]) -> None:
        self.write(_help_text(self.user))

    async def cmd_quit(self, opts: dict[str, str]) -> bool:
        return False

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


def _start_reader(stdin: IO[str], loop: asyncio.AbstractEventLoop) -> asyncio.Queue[str | None]:
    """Read lines in a daemon thread so the event loop never blocks; None marks the end."""
    queue: asyncio.Queue[str | None] = asyncio.Queue()

    def put(item: str | None) -> bool:
        try:
            loop.call_soon_threadsafe(queue.put_nowait, item)
        except RuntimeError:  # the loop is closed: nobody is listening any more
            return False
        return True

    def run() -> None:
        try:
            while True:
                try:
                    line = stdin.readline()
                except UnicodeDecodeError:
                    line = "\x00undecodable\n"
                if not line or not put(line):
                    break
        except (OSError, ValueError):
            pass  # stdin closed under us: treat as the end of input
        finally:
            put(None)

    threading.Thread(target=run, name="console-stdin", daemon=True).start()
    return queue


async def run_console(
    lobby: Lobby,
    stdin: IO[str],
    stdout: IO[str],
    *,
    user: str | None = None,
    stop: asyncio.Event | None = None,
    engine: asyncio.Future[None] | None = None,
    banner: bool = True,
) -> int:
    """Run the console until /quit, the end of stdin or `stop` (SIGTERM/Ctrl-C); the exit
    code. It resumes what an earlier process left, as the Discord bot does. `engine`: the
    engine pool's start, still running (the prompt works meanwhile; a line says when it is
    ready); `banner=False`: the caller has printed the first lines already."""
    try:
        interactive = bool(stdin.isatty())
    except (AttributeError, ValueError):
        interactive = False
    console = Console(lobby, stdout, check_name(user) if user else default_name(), interactive)
    lobby.listeners.append(console.on_snapshot)
    finish = False  # at the end of a script: let the bot matches finish; otherwise stop them
    stopped = False  # a signal: leave everything live for the next start
    clock: asyncio.Future[None] | None = None
    watcher: asyncio.Future[None] | None = None
    try:
        if interactive:
            console.write(
                ("Board-game bot, local console (set DISCORD_TOKEN to run the Discord bot).\n"
                 if banner else "")
                + f"You are {console.user}. Try: /play game:connect4 opponent:easy"
                " - /help lists the commands, /quit leaves."
            )  # fmt: skip
        if engine is not None:
            watcher = asyncio.ensure_future(_engine_ready(console, engine, interactive))

        earlier: set[int] | None = None  # what an earlier process left (before any command)
        with contextlib.suppress(LobbyError):
            earlier = set(await lobby.live_match_ids())

        async def prepare() -> None:
            await asyncio.to_thread(warm_rules)  # this process's rule kernels, off the loop
            try:
                # What a killed process left: finished games are finished, clocks get a
                # grace, agents to move move, bot matches go on (as this session's).
                for snap in await lobby.resume(only=earlier):
                    if snap.match.kind == "eve":
                        console.resume_botmatch(snap)
                await console.adopt(console.user)
            except LobbyError as exc:
                console.error(str(exc))
            console.prepared.set()
            await lobby.run_clock()  # after the resume: its grace comes first

        clock = asyncio.ensure_future(prepare())
        if not interactive:  # a script: its lines come after what a restart mends
            ready = asyncio.ensure_future(console.prepared.wait())
            await asyncio.wait({ready, clock}, return_when=asyncio.FIRST_COMPLETED)
            ready.cancel()
        if interactive and LineEditor.usable(stdin):
            queue: asyncio.Queue[str | None] = asyncio.Queue()
            console.editor = LineEditor(stdin.fileno(), stdout, queue)
            console.editor.start(asyncio.get_running_loop())
        else:
            queue = _start_reader(stdin, asyncio.get_running_loop())
        while True:
            console.prompt()
            line = await _next_line(queue, stop)
            console.prompt_shown = False
            if line is _STOPPED:
                stopped = True
                break
            if line is None:
                stopped = stop is not None and stop.is_set()  # a signal came with the EOF
                finish = not interactive and not stopped  # Ctrl-D in a terminal is /quit
                if interactive and console.editor is None:
                    console.out.write("\n")
                break
            if "\x00" in line:
                console.error("that line is not valid text")
                continue
            if not await console.handle(line):
                break
        return 0
    finally:
        if console.editor is not None:  # the terminal as it was, whatever happens next
            console.editor.leave()
            console.editor.close()
            console.editor = None
        await console.close(finish=finish, keep=stopped, stop=stop)
        if watcher is not None:
            watcher.cancel()
        if clock is not None:
            clock.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await clock
        with contextlib.suppress(ValueError):
            lobby.listeners.remove(console.on_snapshot)


async def _engine_ready(console: Console, engine: asyncio.Future[None], loud: bool) -> None:
    """Say when a slow engine start is over (or that it failed)."""
    started = time.monotonic()
    try:
        await asyncio.shield(engine)
    except Exception as exc:  # the agents cannot move: say so once, plainly
        console.error(f"the game engine could not start: {exc}")
        return
    took = time.monotonic() - started
    if loud and took > 3:
        console.write(f"The game engine is ready (it took {took:.0f} s).")


_STOPPED = "\x00stopped"


async def _next_line(queue: asyncio.Queue[str | None], stop: asyncio.Event | None) -> str | None:
    """The next input line (None at the end of input), or _STOPPED once `stop` is set."""
    if stop is None:
        return await queue.get()
    getter = asyncio.ensure_future(queue.get())
    waiter = asyncio.ensure_future(stop.wait())
    done, _ = await asyncio.wait({getter, waiter}, return_when=asyncio.FIRST_COMPLETED)
    waiter.cancel()
    if getter in done:
        return getter.result()
    getter.cancel()
    return _STOPPED
