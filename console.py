"""The local console front end: the Discord commands typed in a terminal, on the same lobby.

`python bot.py` without a DISCORD_TOKEN runs this. It reads one command (or one bare move) per
line and prints the same emoji boards and status words as the Discord embeds. Agent moves, bot
matches and the turn clock keep running while it waits for input.

In a terminal, lines are read with prompt_toolkit: the arrow keys edit the line and recall
earlier ones, Tab completes commands, options and agent names, and output printed while a line
is being typed goes above it (the typed text stays). Anything else (`python bot.py <
script.txt`) is read line by line: every line is echoed as `> line`, comment lines (`# ...`) are
skipped, and at the end of the input it waits for running bot matches before it exits.

Nobody's clock runs while the console is closed: at the start every person to move gets a full
turn again. Leaving says in one line which matches stay live for the next start.

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
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any, TextIO, cast

from prompt_toolkit import PromptSession
from prompt_toolkit.application import run_in_terminal
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.history import InMemoryHistory
from prompt_toolkit.input import create_input
from prompt_toolkit.output import create_output
from prompt_toolkit.output.vt100 import Vt100_Output
from prompt_toolkit.shortcuts import CompleteStyle
from prompt_toolkit.utils import get_cwidth

from engine.agents import opponents, registry
from engine.games.catalog import GAMES, OFFERS, game_info, offer
from engine.warm import warm_rules
from lobby import present
from lobby.core import Lobby, Person, Snapshot
from lobby.errors import LobbyError
from lobby.learning import TrainingJob, TrainingProgress
from lobby.models import Match

log = logging.getLogger(__name__)

BOTMATCH_DELAY = 0.5  # seconds between the moves of a /botmatch (Discord's default is longer)
TRAIN_REPORT_SECONDS = 5.0  # a progress line this often while a /train job runs (a script)
TRAIN_REDRAW_SECONDS = 1.0  # in a terminal the one progress line is redrawn this often
TRAIN_STOP_SECONDS = 2.0  # /train stop lets the batch in flight end this long, then drops it
PROGRESS_AFTER = 2.0  # an analysis still running after this long gets a note
MAX_NAME = 32
MAX_LISTED = 10  # live matches named in the line said at the end


class UsageError(Exception):
    """A bad command line; the message is shown after `error: `."""


@dataclass(frozen=True, slots=True)
class CommandInfo:
    options: tuple[str, ...]  # in the order positional values fill them
    required: tuple[str, ...]
    usage: str
    summary: str
    #: Words that make up the whole command instead of its options (`/train stop`).
    actions: tuple[str, ...] = ()


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
        "play another local player at this keyboard (hot-seat); you move first. Both sides"
        " are played here: a bare move is made for whoever is to move, whoever /as names",
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
        " unrated; a few per game, and asking again at the same position is free)",
    ),
    "stop": CommandInfo((), (), "/stop", "stop the bot match you started last"),
    "watch": CommandInfo(
        ("match",),
        (),
        "/watch [match:N]",
        "watch a bot match to its end, move by move (default: the one you started last);"
        " the prompt comes back when it ends (Ctrl-C leaves the console, the match stays live)",
    ),
    "wait": CommandInfo(
        (), (), "/wait", "wait until the running bot matches and training have ended"
    ),
    "leaderboard": CommandInfo(
        ("game",), ("game",), "/leaderboard game:GAME", "the best rated players of a game"
    ),
    "stats": CommandInfo(
        ("user", "chart"),
        (),
        "/stats [user:NAME] [chart:FILE.png]",
        "wins, draws, losses and ratings; with chart:, a picture of the rating over time",
    ),
    "history": CommandInfo(("user",), (), "/history [user:NAME]", "recent finished matches"),
    "replay": CommandInfo(
        ("match", "dir"),
        (),
        "/replay [match:N] [dir:FOLDER]",
        "a finished match as an animated GIF and a PNG of its end, written to files"
        " (default: your last match, this folder; an existing file is never overwritten)",
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
        "/train game:GAME agent:AGENT games:N [opponent:AGENT]  or  /train stop",
        "train a learning agent (e.g. trainer) by self-play, in the background, one job at a"
        " time; /train stop stops it (what it learned so far is kept)",
        actions=("stop",),
    ),
    "as": CommandInfo(
        ("name",),
        ("name",),
        "/as NAME",
        "switch the local player (whose matches, moves and hints; a hot-seat match takes"
        " moves for whoever is to move)",
    ),
    "help": CommandInfo((), (), "/help", "this list"),
    "quit": CommandInfo(
        (),
        (),
        "/quit",
        "stop your running bot matches and training, and leave; the other matches stay live",
    ),
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
    if len(tokens) == 2 and tokens[1].lower() in info.actions:
        return word, {"action": tokens[1].lower()}
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


def looks_like_a_bot(name: str) -> bool:
    """A level or agent name, or `Bot (...)`: one of the bot's players, not a local name."""
    folded = name.strip().casefold()
    return folded.startswith("bot") or _is_agent_name(folded)


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


def free_stem(folder: Path, stem: str, suffixes: Iterable[str]) -> Path:
    """`folder/stem`, or `stem-2`, `stem-3`... : the first with no file of any suffix."""
    n = 1
    while True:
        name = stem if n == 1 else f"{stem}-{n}"
        if not any((folder / f"{name}.{suffix}").exists() for suffix in suffixes):
            return folder / name
        n += 1


def game_name(text: str) -> str:
    """A game (for the listings, which are per game): its name, an alias or an offer's key."""
    try:
        return offer(text).game
    except ValueError:
        raise UsageError(f"unknown game {text!r}: choose one of {', '.join(GAMES)}") from None


def _help_text(user: str, max_hints: int) -> str:
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
        "The Discord bot's limits per member (live games, bot matches, challenges) do not apply"
        f" here; hints do ({max_hints} per game against the bot).",
        "Nobody's clock runs while the console is closed: at the next start a person to move"
        " has a full turn again.",
        "In a terminal: Tab completes commands, options and names; the arrow keys edit the"
        " line and recall earlier ones.",
    ]
    return "\n".join(lines)


#: Values Tab offers for an option, besides agent names (`opponent:`, `first:` ...).
_CHOICES: dict[tuple[str, str], tuple[str, ...]] = {
    ("play", "first"): ("me", "bot", "random"),
}
#: Options whose values are agents of the game on the line.
_AGENT_OPTIONS = {
    ("play", "opponent"),
    ("botmatch", "first"),
    ("botmatch", "second"),
    ("train", "agent"),
    ("train", "opponent"),
}
#: Options whose values are the local players' names.
_PEOPLE_OPTIONS = {
    ("challenge", "opponent"),
    ("stats", "user"),
    ("history", "user"),
    ("as", "name"),
}


def _game_on_line(words: Iterable[str]) -> str | None:
    """The game a command line names (`game:othello`, or a bare `c4`), if any."""
    for word in words:
        key, sep, value = word.partition(":")
        text = value if sep and key.lower() == "game" else word
        with contextlib.suppress(ValueError):
            return offer(text).game
    return None


def _values(command: str, option: str, game: str | None, people: Iterable[str]) -> list[str]:
    """What may follow `option:` in `command`."""
    if option == "game":
        return [o.key for o in OFFERS]
    if (command, option) in _AGENT_OPTIONS:
        games = [game] if game is not None else list(GAMES)
        found = [o for g in games for o in opponents.opponents(g)]
        if command == "train" and option == "agent":
            found = [o for o in found if o.learns]
        return list(dict.fromkeys(o.name for o in found))
    if (command, option) in _PEOPLE_OPTIONS:
        return sorted(set(people))
    return list(_CHOICES.get((command, option), ()))


def completions(before: str, people: Iterable[str] = ()) -> tuple[str, list[str]]:
    """Tab at the end of `before`: (the word being completed, what it may become).

    The first word completes to a command; after it, a word completes to an option not given
    yet (`game:`), to a value of the option it names (`opponent:ea` -> `opponent:easy`), or to
    a value of the next option filled by position. A command and a value end with a space."""
    words = before.split(" ")
    word = words[-1]
    if len(words) == 1:
        if not word.startswith("/"):
            return word, []
        names = [f"/{name} " for name in COMMANDS]
        return word, [n for n in names if n.startswith(word.lower())]
    head = words[0].lstrip("/").lower()
    command = COMMAND_ALIASES.get(head, head)
    info = COMMANDS.get(command)
    if info is None:
        return word, []
    given = [w for w in words[1:-1] if w]
    game = _game_on_line(given)
    key, sep, partial = word.partition(":")
    key = OPTION_ALIASES.get(command, {}).get(key.lower(), key.lower())
    if sep and key in info.options:
        values = _values(command, key, game, people)
        return word, [f"{key}:{v} " for v in values if v.lower().startswith(partial.lower())]
    named = {w.partition(":")[0].lower() for w in given if ":" in w}
    free = [o for o in info.options if o not in named]
    found = [f"{o}:" for o in free]
    positional = len([w for w in given if ":" not in w])
    if positional < len(free):
        found += [f"{v} " for v in _values(command, free[positional], game, people)]
    if not given:
        found += [f"{a} " for a in info.actions]
    return word, [f for f in found if f.lower().startswith(word.lower())]


class CommandCompleter(Completer):
    """Tab in the terminal: see `completions`."""

    def __init__(self, people: Callable[[], Iterable[str]]) -> None:
        self.people = people

    def get_completions(self, document: Document, event: CompleteEvent) -> Iterator[Completion]:
        word, found = completions(document.text_before_cursor, self.people())
        for text in found:
            yield Completion(text, start_position=-len(word), display=text.strip())


class Terminal:
    """A terminal's lines, read with prompt_toolkit (history, editing keys, completion), and
    output printed above the line being typed, in order.

    Output that comes while a prompt is shown is written with `run_in_terminal`: the prompt is
    erased, the text printed, the prompt and what is typed drawn again below it. Ctrl-C at
    the prompt leaves the console (as the signal does), Ctrl-D on an empty line ends the
    input, Ctrl-Z suspends as in a shell; the terminal's modes are set only while a prompt is
    read, and given back as they were after each one."""

    def __init__(self, stdin: IO[str], stdout: IO[str], completer: Completer) -> None:
        self.out = stdout
        output = create_output(cast(TextIO, stdout))
        if isinstance(output, Vt100_Output):
            # A cursor position request only serves menus that reserve room below the prompt;
            # completion here is readline-like (the list goes above), and a terminal that never
            # answers would cost a 2 s wait and a warning.
            output.enable_cpr = False
        self.session: PromptSession[str] = PromptSession(
            input=create_input(cast(TextIO, stdin)),
            output=output,
            history=InMemoryHistory(),
            completer=completer,
            complete_style=CompleteStyle.READLINE_LIKE,
            complete_while_typing=False,
            reserve_space_for_menu=0,
            enable_suspend=True,
        )
        self._tail: asyncio.Future[None] | None = None  # the output still to be written
        self._progress_last = False  # the last line on the screen is a progress line
        self.prompting = False

    @staticmethod
    def usable(stdin: IO[str], stdout: IO[str]) -> bool:
        """Whether both ends are a terminal (else lines are read one by one)."""
        try:
            return bool(stdin.isatty() and stdout.isatty())
        except (AttributeError, ValueError, OSError):
            return False

    def columns(self) -> int:
        try:
            return max(self.session.output.get_size().columns, 20)
        except Exception:  # a terminal that cannot say: the usual width
            return 80

    async def read(self, prompt: str) -> str:
        """The next line (with its newline); EOFError at the end of input (Ctrl-D),
        KeyboardInterrupt on Ctrl-C."""
        await self.flush()
        self.prompting = True
        try:
            # The bot's own signal handlers stay (SIGTERM, SIGINT from outside); a failure in
            # a background task is the console's to report, never a traceback on the screen.
            line = await self.session.prompt_async(
                prompt, handle_sigint=False, set_exception_handler=False
            )
        finally:
            self.prompting = False
            self._progress_last = False  # the accepted line is below any progress line
        return line + "\n"

    def print_above(self, text: str, *, progress: bool = False) -> None:
        """Print whole lines above the prompt (or plainly when none is shown). A `progress`
        line replaces the progress line printed last, if nothing came after it."""

        def emit() -> None:
            over = progress and self._progress_last
            self._progress_last = progress
            with contextlib.suppress(OSError, ValueError):
                self.out.write(("\x1b[1A\r\x1b[2K" if over else "") + text + "\n")
                self.out.flush()

        pending = self._tail is not None and not self._tail.done()
        if not pending and not self.session.app.is_running:
            emit()
            return
        earlier = self._tail

        async def later() -> None:
            if earlier is not None:
                await asyncio.gather(earlier, return_exceptions=True)
            await run_in_terminal(emit)

        self._tail = asyncio.ensure_future(later())

    async def flush(self) -> None:
        """Wait until everything printed so far is on the screen."""
        while self._tail is not None and not self._tail.done():
            await asyncio.gather(self._tail, return_exceptions=True)

    def fit(self, text: str) -> str:
        """`text` cut to one row of the terminal (a progress line must not wrap)."""
        room = self.columns() - 1  # the last column would wrap on some terminals
        if get_cwidth(text) <= room:
            return text
        out: list[str] = []
        used = 1  # the ellipsis
        for ch in text:
            used += get_cwidth(ch)
            if used > room:
                break
            out.append(ch)
        return "".join(out) + "…"


def training_line(p: TrainingProgress) -> str:
    """A training job's progress in one line."""
    return " · ".join(p.text().splitlines())


class Console:
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
        self._endings: dict[int, asyncio.Event] = {}

    # ------------------------------------------------------------------ output

    def write(self, text: str) -> None:
        """Print a block of lines at once (keeps the prompt tidy in a terminal)."""
        text = self._markup(text)
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

    def progress(self, text: str, *, last: bool = False) -> None:
        """A training job's progress line: in a terminal one line, redrawn in place while
        nothing else is printed (a new one after other output); `last`: the final one."""
        if self.terminal is None:
            self.write(text)
        elif last or self.terminal.prompting:  # redrawn only under a prompt, never mid-command
            self.terminal.print_above(self.terminal.fit(text), progress=True)

    def prompt(self) -> None:
        if self.terminal is not None:
            return  # the terminal draws its own
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
        if not snap.live:
            lines.append(f"#{snap.id} {present.title(snap)}")
        lines.append(self.render(snap, last))
        if not snap.live:
            self.reported_end.add(snap.id)
            lines.append(present.footer(snap))
        self.write("\n".join(lines))
        self._ended(snap)

    def _ended(self, snap: Snapshot) -> None:
        """A watched match's end is printed: /watch may give the prompt back."""
        if not snap.live and snap.id in self._endings:
            self._endings[snap.id].set()

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
        if after.match.options.get("hints") == snap.match.options.get("hints"):
            self.write("(The same position as your last hint: this one was free.)")

    async def _running_botmatch(self) -> Snapshot | None:
        """The live bot match this session started (or took up) last."""
        for match_id in reversed(self.botmatches):
            snap = await self.lobby.snapshot(match_id)
            if snap.live:
                return snap
        return None

    async def cmd_stop(self, opts: dict[str, str]) -> None:
        snap = await self._running_botmatch()
        if snap is not None:
            await self.lobby.stop(snap.id)
            return
        also = "; /train stop stops the training" if self.running_training() else ""
        raise UsageError(f"no bot match of this session is running{also}")

    async def cmd_watch(self, opts: dict[str, str]) -> None:
        if "match" in opts:
            snap = await self.lobby.snapshot(match_number(opts["match"], "/matches"))
            if snap.match.kind != "eve":
                raise UsageError(
                    f"match #{snap.id} is not a bot match: its moves show as they are played"
                )
        else:
            found = await self._running_botmatch()
            if found is None:
                raise UsageError(
                    "no bot match of this session is running: start one with /botmatch"
                )
            snap = found
        if not snap.live:
            raise UsageError(f"match #{snap.id} is over (/replay match:{snap.id} draws it)")
        ended = self._endings.setdefault(snap.id, asyncio.Event())
        self.watched.add(snap.id)
        self.seen_ply.setdefault(snap.id, snap.match.ply)
        if snap.id not in self.botmatches:  # one this process does not run yet: run it here
            self.resume_botmatch(snap)
        self.write(f"Watching match #{snap.id} until it ends.")
        waits = {asyncio.ensure_future(ended.wait())}
        if self.stop is not None:
            waits.add(asyncio.ensure_future(self.stop.wait()))
        try:
            if not (await self.lobby.snapshot(snap.id)).live:  # it ended meanwhile
                return
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiting in waits:
                waiting.cancel()
            self._endings.pop(snap.id, None)

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
        wanted = opts.get("user", self.user)
        if looks_like_a_bot(wanted) and "chart" not in opts:  # one of the bot's players
            label, bot_rows = await self.lobby.bot_stats(wanted)
            self.write_listing(present.stats(label, bot_rows))
            return
        name = check_name(wanted)
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
        wanted = opts.get("user", self.user)
        if looks_like_a_bot(wanted):  # one of the bot's players
            label, bot_rows = await self.lobby.bot_history(wanted)
            self.write_listing(present.history(label, bot_rows))
            return
        name = check_name(wanted)
        player, rows = await self.lobby.history(self.person(name))
        self.write_listing(present.history(player.display_name, rows))

    async def cmd_replay(self, opts: dict[str, str]) -> None:
        match_id = match_number(opts["match"], "/history") if "match" in opts else None
        folder = Path(opts.get("dir", "."))
        if not folder.is_dir():
            raise UsageError(f"{str(folder)!r} is not a folder")
        files = await self.lobby.replay(match_id, self.person())
        stem = free_stem(folder.resolve(), f"replay-{files.replay.match_id}", ("gif", "png"))
        written = []
        for suffix, data in (("gif", files.gif), ("png", files.png)):
            path = stem.with_name(f"{stem.name}.{suffix}")
            try:
                with path.open("xb") as f:  # never over a file that appeared meanwhile
                    f.write(data)
            except OSError as exc:
                raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
            written.append(f"{path.name} ({len(data) // 1024 + 1} KB)")
        self.write(
            f"Match #{files.replay.match_id}: wrote {' and '.join(written)} in {stem.parent}."
        )

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

    def running_training(self) -> TrainingJob | None:
        return next((job for job in self.training if not job.progress.finished), None)

    async def cmd_train(self, opts: dict[str, str]) -> None:
        if opts.get("action") == "stop":
            stopped = await self.stop_training()
            if stopped is None:
                raise UsageError("no training is running")
            self.write(stopped)
            return
        running = self.running_training()
        if running is not None:
            p = running.progress
            raise UsageError(
                f"a training job is already running ({p.agent}, {p.done}/{p.total} games):"
                " one at a time; /train stop stops it"
            )
        game = game_name(opts["game"])
        try:
            games = int(opts["games"])
        except ValueError:
            raise UsageError(f"games must be a whole number, not {opts['games']!r}") from None
        job = self.lobby.train(game, opts["agent"], games, opts.get("opponent"), raw_ok=True)
        self.training.append(job)
        self.progress(training_line(job.progress), last=True)
        self.background(lambda: self._follow_training(job), "training")

    async def _follow_training(self, job: TrainingJob) -> None:
        """Progress until the job ends: one line redrawn in a terminal, a line per report in
        a script; then the final line."""
        assert job.task is not None
        every = TRAIN_REDRAW_SECONDS if self.terminal is not None else TRAIN_REPORT_SECONDS
        while True:
            done, _ = await asyncio.wait({job.task}, timeout=every)
            if done:
                break
            self.progress(training_line(job.progress))
        self.progress(training_line(job.progress), last=True)

    async def stop_training(self) -> str | None:
        """Stop the running training job: the batch in flight may end (briefly), then it is
        dropped; every batch before it is stored. What to say, or None if none runs."""
        job = self.running_training()
        if job is None:
            return None
        job.cancel()
        if job.task is not None:
            done, _ = await asyncio.wait({job.task}, timeout=TRAIN_STOP_SECONDS)
            if not done:
                job.task.cancel()
                await asyncio.gather(job.task, return_exceptions=True)
        p = job.progress
        return (
            f"Training {p.agent} stopped after {p.done} of {p.total} games;"
            " what it learned is kept."
        )

    async def cmd_as(self, opts: dict[str, str]) -> None:
        self.user = check_name(opts["name"])
        self.write(f"You are now {self.user}.")
        await self.adopt(self.user)

    async def cmd_help(self, opts: dict[str, str]) -> None:
        self.write(_help_text(self.user, self.lobby.config.max_hints))

    async def cmd_quit(self, opts: dict[str, str]) -> bool:
        return False

    async def farewell(self) -> None:
        """The last line: which matches stay live and resume at the next start."""
        try:
            live = sorted(await self.lobby.live_match_ids())
        except LobbyError as exc:
            self.error(f"cannot list the live matches: {exc}")
            return
        if not live:
            self.write("No match stays live.")
            return
        ids = ", ".join(f"#{i}" for i in live[:MAX_LISTED])
        if len(live) > MAX_LISTED:
            ids += f" and {len(live) - MAX_LISTED} more"
        many = len(live) > 1
        self.write(
            f"{len(live)} match{'es' if many else ''} stay{'' if many else 's'} live and"
            f" resume{'' if many else 's'} next time (the clocks wait): {ids}"
        )

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
    name = check_name(user) if user else default_name()
    console = Console(lobby, stdout, name, interactive, stop)
    lobby.listeners.append(console.on_snapshot)
    # The console's matches are played at this keyboard: while it is closed nobody can move,
    # so the restart's grace is a full turn (the Discord bot's is shorter: it restarts fast).
    grace = lobby.config.resume_grace
    lobby.config = replace(lobby.config, resume_grace=max(grace, lobby.config.turn_seconds))
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
        read = _reader(console, stdin, stdout)
        while True:
            console.prompt()
            line = await _next_line(read, stop)
            console.prompt_shown = False
            if line is _STOPPED:
                stopped = True  # (a prompt that is left ends its line itself)
                break
            if line is None:
                stopped = stop is not None and stop.is_set()  # a signal came with the EOF
                finish = not interactive and not stopped  # Ctrl-D in a terminal is /quit
                if interactive and console.terminal is None:
                    console.out.write("\n")
                break
            if "\x00" in line:
                console.error("that line is not valid text")
                continue
            if not await console.handle(line):
                break
        return 0
    finally:
        if console.terminal is not None:
            await console.terminal.flush()
        await console.close(finish=finish, keep=stopped, stop=stop)
        if watcher is not None:
            watcher.cancel()
        if clock is not None:
            clock.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await clock
        stopped_training = await console.stop_training()
        if stopped_training is not None:
            console.write(stopped_training)
        await console.farewell()
        with contextlib.suppress(ValueError):
            lobby.listeners.remove(console.on_snapshot)
        lobby.config = replace(lobby.config, resume_grace=grace)


def _reader(
    console: Console, stdin: IO[str], stdout: IO[str]
) -> Callable[[], Awaitable[str | None]]:
    """How the console gets its lines: from prompt_toolkit in a terminal, else from a thread
    reading stdin line by line. A line, None at the end of input, _STOPPED on Ctrl-C."""
    if console.interactive and Terminal.usable(stdin, stdout):
        terminal = Terminal(stdin, stdout, CommandCompleter(lambda: console.matches))
        console.terminal = terminal

        async def read_terminal() -> str | None:
            try:
                return await terminal.read(f"{console.user}> ")
            except EOFError:
                return None
            except KeyboardInterrupt:  # Ctrl-C, a key while the prompt reads: leave
                return _STOPPED

        return read_terminal
    queue = _start_reader(stdin, asyncio.get_running_loop())
    return queue.get


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


async def _next_line(
    read: Callable[[], Awaitable[str | None]], stop: asyncio.Event | None
) -> str | None:
    """The next input line (None at the end of input), or _STOPPED once `stop` is set."""
    if stop is None:
        return await read()
    getter = asyncio.ensure_future(read())
    waiter = asyncio.ensure_future(stop.wait())
    done, _ = await asyncio.wait({getter, waiter}, return_when=asyncio.FIRST_COMPLETED)
    waiter.cancel()
    if getter in done:
        return getter.result()
    getter.cancel()  # a prompt being read gives the terminal back as it was
    await asyncio.gather(getter, return_exceptions=True)
    return _STOPPED
