"""`python -m engine`: agents, serve, perft, match, arena, train, book, analyse, replay,
othello-eval.

A tool writes where the user says (`--out`, `--plot`, ...) or into the user data folder
(`user_data_dir`), never into the installed package: the shipped opening book and Othello
weights change only with `--replace-shipped`, which says what it replaced. Every file written is
named in one printed line.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import random
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import platformdirs

from engine.agents import registry
from engine.agents.base import Agent, Budget, Decision, LearningAgent, Limits
from engine.agents.connect4 import book as c4book
from engine.games import GAMES, new_game
from engine.games.base import GameState, Outcome, Termination
from engine.games.catalog import game_info
from engine.learning import MemorySession, uses_memory, with_memory
from engine.play import Progress, play_game
from engine.plotting import INSTALL as PLOTS_INSTALL
from engine.plotting import file_problem, plot_problem
from engine.train_cli import StoreBackend, close_backend, open_backend
from engine.train_cli import add_parser as add_train_parser

DESCRIPTION = (
    "The engine without the bot: list the agents, answer positions over the engine protocol, "
    "count positions, play matches and tournaments between agents, train learning agents and "
    "solve the Connect Four opening book."
)

#: The command line runs on the operator's own machine: no ceiling on what it may ask for.
OFFLINE = Limits.none()

#: How a game ended, in the words the bot's own messages use.
ENDINGS = {
    Termination.CONNECT: "four in a row",
    Termination.BOARD_FULL: "the board is full",
    Termination.NO_MOVES: "no moves left",
}

BOOK_FILE = "c4book.txt"
PATTERNS_FILE = "othello_patterns.npz"


def user_data_dir() -> Path:
    """Where the tools write what they build unless told otherwise (the platform's user data
    folder, e.g. ~/.local/share/boardbot on Linux): never the installed package."""
    return Path(platformdirs.user_data_dir("boardbot"))


def how_it_ended(state: GameState, outcome: Outcome) -> str:
    """The words for how a game ended ("four in a row", ...), `state` any position of it: a
    Connect Four variant says its own k in a row."""
    k = getattr(state, "k", 4)
    if outcome.termination is Termination.CONNECT and k != 4:
        return f"{k} in a row"
    return ENDINGS.get(outcome.termination, outcome.termination.value)


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


def cmd_agents(args: argparse.Namespace) -> int:
    for game in [args.game] if args.game else list(GAMES):
        print(f"{game}:")
        for info in registry.agents_for(game):
            print(f"  {info.name:<16} {info.description}")
        for level in registry.LEVELS[game].values():
            print(f"  {level.name:<16} level: {level.description}")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from engine.serve import serve

    try:
        settings = registry.parse_settings(args.set or [])
        spec, budget = registry.resolve(args.agent, args.game, settings, limits=OFFLINE)
        if args.db or args.memory:
            spec = with_memory(spec, args.memory)
        agent = registry.build(spec, args.game)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.memory and not args.db:
        print("error: --memory needs --db FILE, the database the memory is in", file=sys.stderr)
        return 2
    if args.db:  # play with the stored memory (serve answers positions: it learns nothing)
        # serve only reads: a missing file or memory would mean playing untrained, unawares.
        if "://" not in args.db and not Path(args.db).is_file():
            print(f"error: --db {args.db}: no such database file", file=sys.stderr)
            return 2
        backend = StoreBackend(args.db)
        try:
            problem = _missing_memory(backend, agent, args.game)
            if problem is None:
                MemorySession(backend).attach(agent)
        finally:
            backend.close()
        if problem is not None:
            print(f"error: {problem}", file=sys.stderr)
            return 2
    # Undecodable bytes become U+FFFD and then a parse error, instead of killing the loop.
    stdin = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
    serve(args.game, agent, budget, args.seed, stdin, sys.stdout, args.variant)
    return 0


def _missing_memory(backend: StoreBackend, agent: Agent, game: str) -> str | None:
    """The one-line problem when a learning agent's memory is not in the database."""
    if not isinstance(agent, LearningAgent) or not uses_memory(agent, game):
        return None
    names = backend.memory_names(agent.memory_kind)
    if agent.memory_name in names:
        return None
    held = ", ".join(names) if names else "none"
    return (
        f"{backend.path} holds no memory {agent.memory_name!r} of {agent.memory_kind} "
        f"(it holds: {held})"
    )


def cmd_perft(args: argparse.Namespace) -> int:
    if args.depth < 1:
        raise ValueError("--depth must be at least 1")
    state = new_game(args.game, args.variant)
    perft = state.perft  # type: ignore[attr-defined]
    for depth in range(1, args.depth + 1):
        t0 = time.perf_counter()
        count = perft(depth)
        elapsed = time.perf_counter() - t0
        print(f"{depth} {count}", flush=True)
        if args.timing:
            print(f"# {elapsed:.3f} s", file=sys.stderr)
    return 0


def _labels(names: Sequence[str]) -> list[str]:
    """Unique result labels: 'random,random' becomes 'random' and 'random#2'."""
    out: list[str] = []
    for name in names:
        label, n = name, 2
        while label in out:
            label, n = f"{name}#{n}", n + 1
        out.append(label)
    return out


def cmd_match(args: argparse.Namespace) -> int:
    names = [n.strip() for n in args.agents.split(",")]
    if len(names) != 2 or not all(names):
        print("error: --agents takes exactly two agents, e.g. random,onestep", file=sys.stderr)
        return 2
    try:
        resolved = [registry.resolve(n, args.game, limits=OFFLINE) for n in names]
        if args.db or args.memory:
            resolved = [(with_memory(spec, args.memory), budget) for spec, budget in resolved]
        agents: list[Agent] = [registry.build(spec, args.game) for spec, _ in resolved]
        budgets = [budget for _, budget in resolved]
        start = new_game(args.game, args.variant)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    # Learning agents play with their memory (from --db, else an empty in-process one) and learn
    # after every game; with --db each game's rows are stored in one transaction.
    backend = open_backend(args.db)
    try:
        memories = MemorySession(backend)
        for agent in agents:
            memories.attach(agent)
        return _play_match(args, names, agents, budgets, start, memories)
    finally:
        close_backend(backend)


def _play_match(
    args: argparse.Namespace,
    names: list[str],
    agents: list[Agent],
    budgets: list[Budget],
    start: GameState,
    memories: MemorySession,
) -> int:
    labels = _labels(names)
    rng = random.Random(args.seed)
    table = {label: {"wins": 0, "draws": 0, "losses": 0} for label in labels}
    show = args.games == 1 and not args.json
    progress = Progress(args.games, f"{labels[0]} vs {labels[1]}", force=False)
    for i in range(args.games):
        order = (0, 1) if i % 2 == 0 else (1, 0)  # colours alternate
        seat_agents = (agents[order[0]], agents[order[1]])
        seat_budgets = (budgets[order[0]], budgets[order[1]])
        if show:
            print(f"{labels[order[0]]} moves first against {labels[order[1]]}\n")
            print(start.render_emoji(), "\n", flush=True)

        def on_move(state: GameState, decision: Decision, order: tuple[int, int] = order) -> None:
            if show:
                mover = labels[order[(state.ply - 1) % 2]]
                forced = " (forced random)" if decision.info.get("forced_random") else ""
                print(f"move {state.ply}: {mover} plays {state.move_to_str(decision.move)}{forced}")
                print(state.render_emoji(last=decision.move), "\n", flush=True)
                if args.delay:
                    time.sleep(args.delay)

        record = play_game(start, seat_agents, seat_budgets, rng, on_move, args.chance_rule)
        outcome = record.outcome
        assert outcome is not None
        memories.after_game(start, record.moves, seat_agents, outcome.winner)
        for seat, idx in enumerate(order):
            result = outcome.result_for(seat)
            key = "wins" if result == 1 else "losses" if result == 0 else "draws"
            table[labels[idx]][key] += 1
        if show:
            how = how_it_ended(start, outcome)
            if outcome.winner is None:
                print(f"Draw ({how}).")
            else:
                print(f"{labels[order[outcome.winner]]} wins ({how}).")
            if outcome.score is not None:
                print(f"Final score {outcome.score[0]}-{outcome.score[1]}")
        progress.update()
    if args.json:
        print(json.dumps({"game": args.game, "games": args.games, "results": table}))
    elif not show:
        width = max(len(label) for label in labels) + 2
        print(f"{'agent':<{width}}{'W':>6}{'D':>6}{'L':>6}{'score%':>8}")
        for label in labels:
            row = table[label]
            pct = 100 * (row["wins"] + 0.5 * row["draws"]) / args.games
            print(
                f"{label:<{width}}{row['wins']:>6}{row['draws']:>6}{row['losses']:>6}{pct:>7.1f}%"
            )
    if args.db and any(isinstance(agent, LearningAgent) for agent in agents):
        # with --json, stdout holds the JSON object alone
        print(f"wrote what was learned to {args.db}", file=sys.stderr if args.json else sys.stdout)
    return 0


def cmd_arena(args: argparse.Namespace) -> int:
    from engine import arena

    names = [n.strip() for n in args.agents.split(",")]
    problem = None
    if len(names) < 2 or not all(names):
        problem = "--agents takes two or more agents, e.g. random,onestep,minimax:depth=4"
    elif args.workers is not None and args.workers < 1:
        problem = "--workers must be at least 1"
    elif args.opening_plies is not None and args.opening_plies < 0:
        problem = "--opening-plies must be 0 or more"
    elif args.plot:  # output files are checked now, not after the whole tournament
        problem = plot_problem(args.plot)
    if problem is None and args.save_json:
        problem = file_problem("--save-json", args.save_json)
    try:
        if problem is None:
            for name in names:
                registry.resolve(name, args.game, limits=OFFLINE)
            new_game(args.game, args.variant)
    except ValueError as exc:
        problem = str(exc)
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    config = arena.ArenaConfig(
        game=args.game,
        specs=tuple(names),
        labels=tuple(_labels(names)),
        games=args.games,
        seed=random.randrange(2**31) if args.seed is None else args.seed,
        opening_plies=game_info(args.game).opening_plies
        if args.opening_plies is None
        else args.opening_plies,
        variant=args.variant,
    )
    total = len(arena.schedule(len(names), args.games))
    progress = Progress(total, f"{args.game} arena")

    def on_done(n: int) -> None:
        rate = (progress.done + n) / max(time.perf_counter() - progress.start, 1e-9)
        progress.update(n, f"ETA {(total - progress.done - n) / max(rate, 1e-9):.0f}s")

    result = arena.run(config, args.workers or os.cpu_count() or 1, on_done)
    wrote: list[str] = []
    if args.plot:
        arena.plot(result, args.plot)
        wrote.append(f"wrote the plot to {args.plot}")
    if args.save_json:
        with open(args.save_json, "w", encoding="utf-8") as fh:
            json.dump(arena.to_json(result), fh, indent=1)
        wrote.append(f"wrote the JSON results to {args.save_json}")
    if args.json:
        print(json.dumps(arena.to_json(result)))
    else:
        print(arena.format_report(result))
    for line in wrote:  # with --json, stdout holds the JSON object alone
        print(line, file=sys.stderr if args.json else sys.stdout)
    return 0


def _out_path(args: argparse.Namespace, name: str, shipped: Path, what: str) -> Path:
    """The file a build writes: --out, else `name` in the user data folder; never the shipped
    file itself (--replace-shipped copies a finished build over it instead)."""
    out = Path(args.out) if args.out else user_data_dir() / name
    if out.resolve() == shipped.resolve():
        raise ValueError(
            f"--out {args.out} is the shipped {what}: build elsewhere (the default is the user "
            "data folder) and add --replace-shipped to copy the result over it"
        )
    return out


def _describe(path: Path) -> str:
    """Size of a data file, for the line saying what was replaced."""
    if not path.exists():
        return "no file"
    size = path.stat().st_size
    if path.suffix == ".txt":
        return f"{len(path.read_text().splitlines())} lines, {size} bytes"
    try:  # the Othello weights say how many games they were fitted on
        import numpy as np

        with np.load(path) as data:
            return f"fitted on {int(data['games'])} games, {size} bytes"
    except (OSError, KeyError, ValueError):
        return f"{size} bytes"


def _replace_shipped(built: Path, shipped: Path, what: str) -> None:
    """Copy `built` over the shipped file and say what was replaced."""
    before = _describe(shipped)
    tmp = shipped.with_name(shipped.name + ".new")
    shutil.copyfile(built, tmp)
    tmp.replace(shipped)  # in one step: a reader never sees half a file
    print(f"replaced the shipped {what} {shipped}: was {before}, now {_describe(shipped)}")


def cmd_book(args: argparse.Namespace) -> int:
    if (
        not 1 <= args.ply <= 8
        or args.workers < 1
        or (args.minutes is not None and args.minutes <= 0)
    ):
        print(
            "error: --ply takes 1..8, --workers at least 1, --minutes more than 0", file=sys.stderr
        )
        return 2
    out = _out_path(args, BOOK_FILE, c4book.BOOK_PATH, "book")
    progress: Progress | None = None

    def on_progress(done: int, total: int) -> None:
        nonlocal progress
        if progress is None:
            progress = Progress(total, f"book ply {args.ply}")
            progress.update(done, "resumed" if done else "")
        elif done > progress.done:
            progress.update(done - progress.done, "")

    size, solved, total = c4book.build(
        out,
        ply=args.ply,
        workers=args.workers,
        stop_after=None if args.minutes is None else args.minutes * 60,
        progress=on_progress,
    )
    print(f"wrote {size} positions to {out} ({solved} of {total} with {args.ply} discs)")
    if solved < total:
        kept = " (the shipped book is not replaced)" if args.replace_shipped else ""
        print(f"unfinished{kept}: run the same command again to go on", file=sys.stderr)
    elif args.replace_shipped:
        _replace_shipped(out, c4book.BOOK_PATH, "book")
    return 0


def _game_moves(args: argparse.Namespace) -> list[str]:
    from engine import analysis

    moves = analysis.split_moves(args.game, args.moves)
    analysis.positions(args.game, args.variant, moves)  # a bad move: one line, exit 2
    return moves


def cmd_analyse(args: argparse.Namespace) -> int:
    from engine import analysis

    if args.budget is not None and not 0 < args.budget <= 3600:  # NaN fails this too
        raise ValueError("--budget must be more than 0 and at most 3600 seconds")
    moves = _game_moves(args)
    result = analysis.analyse(args.game, moves, args.variant, args.budget)
    if args.json:
        print(json.dumps(result.to_json()))
        return 0
    names = ("first", "second")
    print(f"{game_info(args.game).title}: {len(moves)} moves analysed in {result.seconds:.1f} s")
    print("\n".join(analysis.table(result, names)))
    print("\n".join(analysis.summary(result, names)))
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    from engine.pictures import Replay, final_png, replay_gif

    moves = _game_moves(args)
    if not args.gif and not args.png:
        raise ValueError("give --gif FILE.gif, --png FILE.png or both")
    for option, path, suffix in (("--gif", args.gif, ".gif"), ("--png", args.png, ".png")):
        if path:
            problem = file_problem(option, path, suffix)
            if problem is None and Path(path).exists() and not args.force:
                problem = f"{path} exists: add --force to overwrite it"
            if problem is not None:
                raise ValueError(problem)
    final = new_game(args.game, args.variant)
    for text in moves:
        final = final.play(final.parse_move(text))
    names = ("first", "second")
    outcome = final.outcome()
    if outcome is None:
        result = "unfinished"
    elif outcome.winner is None:
        result = f"a draw ({how_it_ended(final, outcome)})"
    else:
        result = f"{names[outcome.winner]} wins ({how_it_ended(final, outcome)})"
    replay = Replay(0, args.game, args.variant, names, tuple(moves), result)
    for path, draw, what in (
        (args.gif, replay_gif, "the animated replay"),
        (args.png, final_png, "the final position"),
    ):
        if path:
            Path(path).write_bytes(draw(replay))
            print(f"wrote {what} to {path}")
    return 0


def cmd_othello_eval(args: argparse.Namespace) -> int:
    from engine.agents.othello import pattern_fit
    from engine.agents.othello import patterns as pt

    if args.games < pattern_fit.MIN_GAMES:
        raise ValueError(
            f"--games must be at least {pattern_fit.MIN_GAMES}: one game in "
            f"{pattern_fit.HOLD_OUT} is held out to measure the fit"
        )
    if args.workers < 1:
        raise ValueError("--workers must be at least 1")
    out = _out_path(args, PATTERNS_FILE, pt.DATA, "Othello weights")
    errors = pattern_fit.build(out, args.games, args.workers)
    shown = " ".join("n/a" if math.isnan(e) else f"{e:.1f}" for e in errors)
    print(f"wrote the weights to {out}: {len(errors)} phases, held-out errors (discs) {shown}")
    if args.replace_shipped:
        _replace_shipped(out, pt.DATA, "Othello weights")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m engine", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True)

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

    p = sub.add_parser(
        "book",
        help="solve the Connect Four opening book the expert level plays from (hours of CPU)",
    )
    p.add_argument("--ply", type=int, default=4, help="solve every position of this many discs")
    p.add_argument(
        "--workers", type=int, default=os.cpu_count() or 1, help="processes (default: every core)"
    )
    p.add_argument(
        "--out",
        default=None,
        help=f"the book file to write (default: {user_data_dir() / BOOK_FILE}; its work file, "
        "which makes the build resumable, goes beside it)",
    )
    p.add_argument("--minutes", type=float, default=None, help="stop after this long (resumable)")
    p.add_argument(
        "--replace-shipped",
        action="store_true",
        help="once the book is finished, copy it over the shipped book the expert level reads",
    )
    p.set_defaults(func=cmd_book)

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
        help="seconds (default: 4.5 Connect Four, 13.5 Othello)",
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

    p = sub.add_parser(
        "othello-eval",
        help="fit the Othello pattern evaluation from self-play games labelled by the solver",
    )
    p.add_argument("--games", type=int, default=20000, help="games to play (resumable)")
    p.add_argument(
        "--workers", type=int, default=os.cpu_count() or 1, help="processes (default: every core)"
    )
    p.add_argument(
        "--out",
        default=None,
        help=f"the weights file to write (default: {user_data_dir() / PATTERNS_FILE}; the "
        "games are kept beside it, in OUT.parts, so a rerun goes on)",
    )
    p.add_argument(
        "--replace-shipped",
        action="store_true",
        help="then copy the weights over the shipped ones the Othello levels read",
    )
    p.set_defaults(func=cmd_othello_eval)

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
