"""The commands of `python -m tools` that play and look at games: agents, serve, perft, match,
arena, analyse, replay."""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from engine.agents import registry
from engine.agents.base import Agent, Budget, Decision, LearningAgent, Limits
from engine.games import GAMES, new_game
from engine.games.base import GameState, Outcome, Termination
from engine.games.catalog import game_info
from engine.learning import MemorySession, uses_memory, with_memory
from engine.play import play_game
from tools.plotting import file_problem, plot_problem
from tools.progress import Progress
from tools.train_cli import StoreBackend, close_backend, open_backend

#: The command line runs on the operator's own machine: no ceiling on what it may ask for.
OFFLINE = Limits.none()

#: How a game ended, in the words the bot's own messages use.
ENDINGS = {
    Termination.CONNECT: "four in a row",
    Termination.BOARD_FULL: "the board is full",
    Termination.NO_MOVES: "no moves left",
}


def how_it_ended(state: GameState, outcome: Outcome) -> str:
    """The words for how a game ended ("four in a row", ...), `state` any position of it: a
    Connect Four variant says its own k in a row."""
    k = getattr(state, "k", 4)
    if outcome.termination is Termination.CONNECT and k != 4:
        return f"{k} in a row"
    return ENDINGS.get(outcome.termination, outcome.termination.value)


def cmd_agents(args: argparse.Namespace) -> int:
    for game in [args.game] if args.game else list(GAMES):
        print(f"{game}:")
        for info in registry.agents_for(game):
            print(f"  {info.name:<16} {info.description}")
        for level in registry.LEVELS[game].values():
            print(f"  {level.name:<16} level: {level.description}")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from tools.serve import serve

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
    from tools import arena

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
    from tools.pictures import Replay, final_png, replay_gif

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
