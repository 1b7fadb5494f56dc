"""`python -m tools train`, and the memory plumbing of `match --db` / `serve --db`.

This module is the composition root of training: the one place of the tools that touches `db/`
(it imports `db.store` lazily, inside `StoreBackend`), so that what the command line trains
lands in the bot's database (`data/boardbot.db`, or $BOARDBOT_DB) and the bot plays with it.
The learning core (`engine/learning/`) and the training loop (`tools/training/`) only see the
`MemoryBackend` protocol.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from collections.abc import Mapping
from pathlib import Path
from types import FrameType
from typing import Any

from engine.agents import registry
from engine.agents.base import LearningAgent, Limits
from engine.games.catalog import INFO
from engine.learning import InMemoryBackend, MemoryBackend, learning_agent, with_memory
from tools.plotting import plot_problem
from tools.progress import Progress
from tools.training import SELF, TrainConfig, TrainReport, plot_curves, read_csv, train

DEFAULT_DB = "data/boardbot.db"


def default_db_path() -> str:
    """The bot's database: $BOARDBOT_DB, else data/boardbot.db (as boot/settings.py's Config)."""
    return os.environ.get("BOARDBOT_DB") or DEFAULT_DB


class StoreBackend:
    """`MemoryBackend` over `db.store.Store` (async), driven from sync code by one event loop."""

    def __init__(self, path: str) -> None:
        from db.store import Store

        self._runner = asyncio.Runner()

        async def _open() -> Any:
            return await Store.open(path)

        self._store = self._runner.run(_open())
        self.path = path

    def load(self, kind: str, name: str) -> tuple[dict[bytes, bytes], int]:
        rows = self._runner.run(self._store.memory.get(kind, name))
        info = self._runner.run(self._store.memory.info(kind, name))
        return dict(rows), 0 if info is None else int(info.games_trained)

    def memory_names(self, kind: str) -> list[str]:
        """The names of the stored memories of one agent kind, sorted."""
        infos = self._runner.run(self._store.memory.infos(kind))
        return sorted(str(info.name) for info in infos)

    def save(
        self,
        kind: str,
        name: str,
        rows: Mapping[bytes, bytes],
        games_delta: int,
        meta: Mapping[str, Any] | None,
    ) -> None:
        self._runner.run(
            self._store.memory.put(
                kind, name, list(rows.items()), games_trained_delta=games_delta, meta=meta
            )
        )

    def close(self) -> None:
        try:
            self._runner.run(self._store.close())
        finally:
            self._runner.close()


def open_backend(db: str | None) -> MemoryBackend:
    """The SQLite store at `db`, or an in-process memory when `db` is None."""
    return InMemoryBackend() if db is None else StoreBackend(db)


def close_backend(backend: MemoryBackend) -> None:
    if isinstance(backend, StoreBackend):
        backend.close()


class _StopFlag:
    """First Ctrl-C / SIGTERM: finish the round, checkpoint, exit. Second Ctrl-C: abort."""

    def __init__(self) -> None:
        self.stop = False

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        if self.stop and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.stop = True
        print("\nstopping after this round (Ctrl-C again to abort)...", file=sys.stderr)


def _opponents(args: argparse.Namespace) -> tuple[str, ...] | None:
    if not args.opponent:
        return None
    return tuple(o.strip() for o in args.opponent.split(",") if o.strip())


def _train_problem(args: argparse.Namespace, opponents: tuple[str, ...] | None) -> str | None:
    """The one-line problem with the options, found before any game is played."""
    problem = None
    if args.workers is not None and args.workers < 1:
        problem = "--workers must be at least 1"
    elif args.checkpoint < 1:
        problem = "--checkpoint must be at least 1"
    elif args.eval_every < 0 or args.eval_games < 0:
        problem = "--eval-every and --eval-games must be 0 or more"
    try:
        if problem is None:
            spec, _ = registry.resolve(args.agent, args.game, limits=Limits.none())
            if not isinstance(registry.build(spec, args.game), LearningAgent):
                problem = f"{args.agent} does not learn: train a learning agent (trainer, ...)"
            for o in opponents or ():
                if o.partition(":")[0] != SELF:
                    registry.resolve(o, args.game, limits=Limits.none())
    except ValueError as exc:
        problem = str(exc)
    if problem is None and args.plot:  # say it now, not after the whole run
        problem = plot_problem(args.plot)
    if problem is None and args.csv and not Path(args.csv).resolve().parent.is_dir():
        problem = f"--csv: the folder {Path(args.csv).resolve().parent} does not exist"
    return problem


def _config(
    args: argparse.Namespace, opponents: tuple[str, ...] | None, backend: StoreBackend
) -> TrainConfig:
    """The run the options ask for; with --total, the games still to go to reach --games."""
    config = TrainConfig(
        game=args.game,
        agent=args.agent,
        games=args.games,
        memory=args.memory,
        opponents=opponents,
        workers=args.workers or os.cpu_count() or 1,
        checkpoint=args.checkpoint,
        eval_every=args.eval_every,
        eval_games=args.eval_games,
        seed=args.seed,
        variant=args.variant,
        opening_plies=args.opening_plies,
        exploration_final=args.exploration_final,
        round_games=args.round_games,
        csv_path=args.csv,
    )
    if args.total:
        spec, _ = registry.resolve(args.agent, args.game, limits=Limits.none())
        agent = learning_agent(with_memory(spec, args.memory), args.game)
        done = 0 if agent is None else backend.load(agent.memory_kind, agent.memory_name)[1]
        remaining = max(0, args.games - done)
        print(f"{done} games trained so far; {remaining} to go to {args.games}")
        config = TrainConfig(**{**_fields(config), "games": remaining})
    return config


def _on_eval(row: Mapping[str, Any]) -> None:
    scores = "  ".join(
        f"{k[: -len('_score')]} {100 * float(v):.1f}%"
        for k, v in row.items()
        if k.endswith("_score")
    )
    print(f"\n[{row['games']} games, {row['rows']} rows] {scores}", flush=True)


def _run(args: argparse.Namespace, config: TrainConfig, backend: StoreBackend) -> TrainReport:
    """Train, the first Ctrl-C or SIGTERM finishing the round (docs/learning.md)."""
    progress = Progress(config.games, f"train {args.agent}", force=args.progress)
    flag = _StopFlag()
    old = {s: signal.signal(s, flag) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        return train(
            config,
            backend,
            on_progress=lambda n, text: progress.update(n, text),
            should_stop=lambda: flag.stop,
            on_eval=_on_eval,
        )
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


def cmd_train(args: argparse.Namespace) -> int:
    opponents = _opponents(args)
    problem = _train_problem(args, opponents)
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    db = args.db or default_db_path()
    backend = StoreBackend(db)
    try:
        config = _config(args, opponents, backend)
        result = _run(args, config, backend)
        print(
            f"trained {result.games_run} games in {result.seconds:.1f} s "
            f"({result.games_per_second:.0f} games/s while training, {config.workers} workers); "
            f"memory now {result.rows} rows, {result.games_total} games in total"
        )
        print(f"wrote the memory to {db}")
        if args.csv and result.evals:
            print(f"appended {len(result.evals)} evaluation rows to {args.csv}")
        if args.plot:
            _plot(args, result)
        if result.interrupted:
            print("interrupted: run the same command again to continue", file=sys.stderr)
            return 130
        return 0
    finally:
        backend.close()


def _plot(args: argparse.Namespace, result: TrainReport) -> None:
    rows: list[Mapping[str, Any]] = list(read_csv(args.csv)) if args.csv else []
    rows = rows or list(result.evals)
    if rows:
        plot_curves(rows, args.plot, f"{args.agent} on {args.game}: learning curve")
        print(f"wrote the learning curve to {args.plot}")
    else:
        print(f"no evaluation rows: no learning curve drawn ({args.plot} not written)")


def _fields(config: TrainConfig) -> dict[str, Any]:
    return {f: getattr(config, f) for f in TrainConfig.__dataclass_fields__}


def add_parser(sub: Any) -> None:
    """The `train` subcommand (called by `tools.cli.build_parser`)."""
    from engine.games import GAMES

    p = sub.add_parser("train", help="train a learning agent (self-play or against an opponent)")
    p.add_argument("--game", choices=GAMES, required=True)
    p.add_argument("--variant", default=None, help="Connect Four size, e.g. 7x6k4")
    p.add_argument("--agent", required=True, help="learning agent, e.g. trainer or weightgrid")
    p.add_argument("--memory", default=None, help="named memory (default: 'default')")
    p.add_argument("--games", type=int, required=True, help="games to train in this run")
    p.add_argument("--total", action="store_true", help="--games is the total to reach")
    p.add_argument(
        "--opponent",
        default=None,
        help="'self', 'self:KEY=VALUE' (the learner with other settings), or agents; "
        "comma-separated to alternate, e.g. self,random. Default: the trainer plays a greedy "
        "copy of itself (self:exploration=0), other agents plain self-play",
    )
    p.add_argument("--db", default=None, help=f"SQLite file (default $BOARDBOT_DB or {DEFAULT_DB})")
    p.add_argument("--workers", type=int, default=None, help="processes (default: every core)")
    p.add_argument("--checkpoint", type=int, default=1000, help="games between DB writes")
    p.add_argument("--eval-every", type=int, default=1000, help="games between evaluations")
    p.add_argument("--eval-games", type=int, default=200, help="games per evaluation opponent")
    p.add_argument("--csv", default=None, help="append evaluation rows to this CSV")
    p.add_argument("--plot", default=None, metavar="FILE.png", help="draw the learning curve")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--opening-plies",
        type=int,
        default=None,
        help="random plies before each training game (default: "
        + ", ".join(f"{i.name} {i.opening_plies}" for i in INFO.values())
        + ")",
    )
    p.add_argument(
        "--exploration-final",
        type=float,
        default=None,
        help="decay the trainer's exploration linearly to this value over the run",
    )
    p.add_argument("--round-games", type=int, default=50, help="games per worker per round")
    p.add_argument("--progress", action="store_true", help="progress bar even without a TTY")
    p.set_defaults(func=cmd_train)
