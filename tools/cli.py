"""`python -m tools`: agents, serve, perft, match, arena, train, book, analyse, replay,
othello-eval, puzzles.

A tool writes where the user says (`--out`, `--plot`, ...) or into the user data folder
(`tools.builds.user_data_dir`), never into the installed package: the shipped opening book,
Othello weights and puzzles change only with `--replace-shipped`, which says what it replaced.
Every file written is named in one printed line. The commands themselves: `tools.commands`
(playing and looking at games), `tools.builds` (the shipped data), `tools.puzzles` (the puzzle
pool), `tools.train_cli` (training).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from engine.games import GAMES
from tools.builds import add_book_parser, add_othello_eval_parser
from tools.commands import (
    cmd_agents,
    cmd_analyse,
    cmd_arena,
    cmd_match,
    cmd_perft,
    cmd_replay,
    cmd_serve,
)
from tools.plotting import INSTALL as PLOTS_INSTALL
from tools.puzzles import add_puzzles_parser
from tools.train_cli import add_parser as add_train_parser

DESCRIPTION = (
    "The engine without the bot: list the agents, answer positions over the engine protocol, "
    "count positions, play matches and tournaments between agents, train learning agents and "
    "solve the Connect Four opening book."
)


def _add_game(p: argparse.ArgumentParser, required: bool = True) -> None:
    p.add_argument("--game", choices=GAMES, required=required, help="which game")
    p.add_argument(
        "--variant",
        default=None,
        help="Connect Four board: COLSxROWS, or COLSxROWSkK for K in a row (default 7x6k4)",
    )


def _add_memory(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--db",
        default=None,
        help="SQLite file of what learning agents have learned: they play with it (match also "
        "learns into it)",
    )
    p.add_argument(
        "--memory",
        default=None,
        help="which named memory learning agents use (default: 'default')",
    )


def _add_play_parsers(sub: Any) -> None:
    """agents, serve, perft, match, arena."""
    p = sub.add_parser("agents", help="list every agent and difficulty level, with what it does")
    p.add_argument("--game", choices=GAMES, help="only this game")
    p.set_defaults(func=cmd_agents)

    p = sub.add_parser(
        "serve", help="answer positions read on stdin with moves on stdout (the engine protocol)"
    )
    _add_game(p)
    p.add_argument("--agent", required=True, help="agent or level, e.g. random or minimax:depth=4")
    p.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="an agent parameter, e.g. depth=6 (repeat for more)",
    )
    p.add_argument(
        "--seed", type=int, default=None, help="random seed (default: a new one each run)"
    )
    _add_memory(p)
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("perft", help="count the positions at each depth (checks move generation)")
    _add_game(p)
    p.add_argument("--depth", type=int, required=True, help="count up to this many moves")
    p.add_argument("--timing", action="store_true", help="print each depth's time on stderr")
    p.set_defaults(func=cmd_perft)

    p = sub.add_parser(
        "match", help="play two agents against each other: one game shown, or many and a table"
    )
    _add_game(p)
    p.add_argument("--agents", required=True, help="two agents, e.g. random,onestep")
    p.add_argument(
        "--games",
        type=int,
        default=1,
        help="games to play, colours alternating (one is shown move by move)",
    )
    p.add_argument(
        "--seed", type=int, default=None, help="random seed (default: a new one each run)"
    )
    p.add_argument("--json", action="store_true", help="print one JSON object of results")
    p.add_argument("--delay", type=float, default=0.0, help="seconds between shown moves")
    p.add_argument(
        "--chance-rule",
        action="store_true",
        help="when an expectiminimax agent bets on random replies, its opponent must then "
        "reply at random",
    )
    _add_memory(p)
    p.set_defaults(func=cmd_match)

    p = sub.add_parser(
        "arena", help="a round-robin tournament on every core: table, ratings, move times"
    )
    _add_game(p)
    p.add_argument(
        "--agents", required=True, help="two or more agents, e.g. random,onestep,minimax:depth=4"
    )
    p.add_argument("--games", type=int, default=2, help="games per pairing")
    p.add_argument(
        "--seed", type=int, default=None, help="random seed (default: a new one each run)"
    )
    p.add_argument("--workers", type=int, default=None, help="processes (default: every core)")
    p.add_argument("--opening-plies", type=int, default=None, help="random plies before a game")
    p.add_argument("--json", action="store_true", help="print one JSON object of results")
    p.add_argument("--save-json", metavar="FILE", help="also write the JSON results to FILE")
    p.add_argument(
        "--plot",
        metavar="FILE.png",
        default=None,
        help=f"draw the tables to a PNG (needs matplotlib: {PLOTS_INSTALL})",
    )
    p.set_defaults(func=cmd_arena)


def _add_game_parsers(sub: Any) -> None:
    """analyse, replay."""
    p = sub.add_parser(
        "analyse", help="judge every move of a game: best, good, inaccuracy, miss, blunder"
    )
    _add_game(p)
    p.add_argument(
        "--moves",
        required=True,
        help="the moves: Connect Four columns like 4453, Othello squares like d3c5 (or "
        "separated by spaces), pass allowed",
    )
    p.add_argument(
        "--budget",
        type=float,
        default=None,
        help="seconds (default: 4.5 Connect Four, 9 Othello)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_analyse)

    p = sub.add_parser("replay", help="draw a game as an animated GIF and its end as a PNG")
    _add_game(p)
    p.add_argument("--moves", required=True, help="the moves, as for analyse")
    p.add_argument("--gif", metavar="FILE.gif", help="write the animated replay here")
    p.add_argument("--png", metavar="FILE.png", help="write the final position here")
    p.add_argument("--force", action="store_true", help="overwrite files that exist")
    p.set_defaults(func=cmd_replay)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tools", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True)
    _add_play_parsers(sub)
    add_book_parser(sub)
    _add_game_parsers(sub)
    add_othello_eval_parser(sub)
    add_puzzles_parser(sub)
    add_train_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "games", 1) < 1:
        print("error: --games must be at least 1", file=sys.stderr)
        return 2
    try:
        return int(args.func(args))
    except (ValueError, OSError) as exc:  # a bad option or file: one line, not a traceback
        print(f"error: {exc}", file=sys.stderr)
        return 2
