"""The command table: each command's options, usage and summary; reading a command line; the
help text."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field

from console.settings import NAMES as SETTINGS
from console.values import UsageError, is_agent_name
from engine.agents import registry
from engine.games.catalog import OFFERS
from lobby.pairing import FORMATS

BOTMATCH_DELAY = 0.5  # seconds between the moves of a /botmatch (Discord's default is longer)


@dataclass(frozen=True, slots=True)
class CommandInfo:
    options: tuple[str, ...]  # in the order positional values fill them
    required: tuple[str, ...]
    usage: str
    summary: str
    #: Words that make up the whole command instead of its options (`/train stop`).
    actions: tuple[str, ...] = ()
    #: The command's subcommands, each with its own options (`/tournament join bot:easy`):
    #: the word after the command names one, and the options are that one's.
    subcommands: Mapping[str, CommandInfo] = field(default_factory=dict)


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
    "board": CommandInfo(
        (),
        (),
        "/board  or  /board text",
        "show your current match (where your moves go); /board text says it in words: whose"
        " turn, the last move, the legal moves and every disc (for screen readers)",
        actions=("text",),
    ),
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
        (),
        (),
        "/wait",
        "wait until the running bot matches and training have ended, and the tournament"
        " waits for a move of yours or is over",
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
        ("match", "gif", "chart"),
        (),
        "/analyse [match:N] [gif:FILE.gif] [chart:FILE.png]",
        "every move of a finished match judged by the solvers: best, good, inaccuracy, miss,"
        " blunder; accuracy, the turning point and the key moments (default: your last match);"
        " chart: writes the graph of the win chance over the game",
    ),
    "retry": CommandInfo(
        ("move", "match"),
        (),
        "/retry [match:N]  or  /retry MOVE  or  /retry best|next",
        "learn from your mistakes: back to the position before your worst move of a finished"
        " match (default: your last); /retry MOVE tries a move there and the solvers say whether"
        " it holds; /retry best shows the best move, /retry next the next mistake",
        actions=("best", "next"),
    ),
    "puzzle": CommandInfo(
        ("what", "game", "user"),
        (),
        "/puzzle [GAME]  or  /puzzle daily [GAME]  or  /puzzle stats [user:NAME]",
        "a position with one move to find: your own blunders of analysed matches first, then"
        " a puzzle near your puzzle rating; type your move to answer (a bare move answers the"
        " puzzle waiting); daily: the day's puzzle, the same for everyone; stats: puzzle"
        " ratings and streaks",
        actions=("daily", "stats"),
    ),
    "tournament": CommandInfo(
        (),
        (),
        f"/tournament create game:GAME format:{'|'.join(FORMATS)} [rounds:N] [clock:SECONDS]"
        " [start:MINUTES]  or  /tournament join [bot:NAME]  or"
        "  /tournament leave|start|standings|cancel",
        "a Swiss, round-robin or knockout tournament of local players and the bot's players"
        " (one at a time here); join enters you, join bot:NAME one of the bot's players;"
        " start, cancel and join bot: are its creator's. Your games show here and take your"
        " moves (/matches, /switch); the bot's games play on their own; each round's"
        " pairings, every result, the standings after each round and the winner are said",
        subcommands={
            "create": CommandInfo(
                ("game", "format", "rounds", "clock", "start"),
                ("game", "format"),
                f"/tournament create game:GAME format:{'|'.join(FORMATS)} [rounds:N]"
                " [clock:SECONDS] [start:MINUTES]",
                "a new tournament; rounds: Swiss only (1 to 12), clock: a person's seconds"
                " per move, start: it starts by itself in this many minutes",
            ),
            "join": CommandInfo(
                ("bot",), (), "/tournament join [bot:NAME]", "enter, or enter a bot's player"
            ),
            "leave": CommandInfo((), (), "/tournament leave", "leave (forfeits your games)"),
            "start": CommandInfo((), (), "/tournament start", "start it (2 players at least)"),
            "standings": CommandInfo((), (), "/tournament standings", "the standings now"),
            "cancel": CommandInfo((), (), "/tournament cancel", "cancel it: nobody wins"),
        },
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
    "settings": CommandInfo(
        (*SETTINGS, "reset"),
        (),
        "/settings [NAME:VALUE ...] [reset:NAME|all]",
        "this console's settings (the same as a Discord server's: "
        + ", ".join(SETTINGS)
        + "); each VALUE is checked, default puts one back to the bot's own",
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
    if info.subcommands:
        return word, _subcommand(word, info, tokens[1:])
    return word, _options(word, info, tokens[1:], OPTION_ALIASES.get(word, {}))


def _subcommand(word: str, info: CommandInfo, tokens: list[str]) -> dict[str, str]:
    """A subcommand's options, with the subcommand as `action` (`/tournament join bot:easy`)."""
    names = ", ".join(info.subcommands)
    if not tokens:
        raise UsageError(f"/{word} needs one of {names}; usage: {info.usage}")
    action = tokens[0].lower()
    sub = info.subcommands.get(action)
    if sub is None:
        raise UsageError(f"/{word}: unknown subcommand {tokens[0][:40]!r}; it takes {names}")
    return {"action": action, **_options(f"{word} {action}", sub, tokens[1:], {})}


def _options(
    label: str, info: CommandInfo, tokens: list[str], aliases: Mapping[str, str]
) -> dict[str, str]:
    """The options of `/label` given by key or by position, checked against `info`."""
    options: dict[str, str] = {}
    positional: list[str] = []
    for token in tokens:
        key, sep, value = token.partition(":")
        key = key.lower()
        key = aliases.get(key, key)
        if sep and key in info.options:
            if key in options:
                raise UsageError(f"/{label}: {key} is given twice")
            options[key] = value.strip()
        elif sep and key.isidentifier() and not is_agent_name(key):
            takes = ", ".join(info.options) if info.options else "no options"
            raise UsageError(f"/{label} has no option {key!r}; it takes {takes}")
        else:
            positional.append(token)  # a value (an agent spec such as minimax:depth=4, too)
    free = [name for name in info.options if name not in options]
    if len(positional) > len(free):
        extra = positional[len(free)]
        raise UsageError(f"/{label}: unexpected {extra!r}; usage: {info.usage}")
    options.update(zip(free, positional, strict=False))
    for name in info.required:
        if not options.get(name):
            raise UsageError(f"/{label} needs {name}:...; usage: {info.usage}")
    return {k: v for k, v in options.items() if v}


def help_text(user: str, max_hints: int) -> str:
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
