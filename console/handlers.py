"""Which function runs each command of the table (console/commands.py), and the commands about
the console itself: /as, /help, /quit."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from console import listings, playing, puzzling, retrying, settings, tournaments, training
from console.commands import help_text
from console.values import check_name

if TYPE_CHECKING:
    from console.session import Session

#: A command's handler: the session and the options given; False to leave the console.
Handler = Callable[["Session", dict[str, str]], Awaitable[bool | None]]


async def cmd_as(console: Session, opts: dict[str, str]) -> None:
    console.user = check_name(opts["name"])
    console.write(f"You are now {console.user}.")
    await console.adopt(console.user)


async def cmd_help(console: Session, opts: dict[str, str]) -> None:
    console.write(help_text(console.user, console.lobby.config.max_hints))


async def cmd_quit(console: Session, opts: dict[str, str]) -> bool:
    return False


HANDLERS: dict[str, Handler] = {
    "play": playing.cmd_play,
    "challenge": playing.cmd_challenge,
    "botmatch": playing.cmd_botmatch,
    "board": playing.cmd_board,
    "matches": playing.cmd_matches,
    "switch": playing.cmd_switch,
    "resign": playing.cmd_resign,
    "hint": playing.cmd_hint,
    "stop": playing.cmd_stop,
    "watch": playing.cmd_watch,
    "wait": playing.cmd_wait,
    "leaderboard": listings.cmd_leaderboard,
    "stats": listings.cmd_stats,
    "history": listings.cmd_history,
    "replay": listings.cmd_replay,
    "analyse": listings.cmd_analyse,
    "retry": retrying.cmd_retry,
    "puzzle": puzzling.cmd_puzzle,
    "tournament": tournaments.cmd_tournament,
    "agents": listings.cmd_agents,
    "train": training.cmd_train,
    "settings": settings.cmd_settings,
    "as": cmd_as,
    "help": cmd_help,
    "quit": cmd_quit,
}
