"""Training learning agents: self-play (or a fixed opponent) on worker processes, in rounds.

The loop is pure apart from the `MemoryBackend` it is handed (the `train` CLI gives it one over
`db.store.Store`; tests give it `InMemoryBackend`). It talks to the agent only through the
`LearningAgent` contract (memory_keys / use_memory / learn_keys / learn), the same calls the
lobby makes after a match, so what is trained here is what the bot plays.

How a run goes, in rounds of `round_games` games per worker:

* Each worker process keeps a replica of the memory (rows of bytes). It gets the whole memory
  once at start, then with every round the rows changed since it last heard from the parent.
* A round: every worker plays its share of games with its replica and sends back game records
  (opening and moves, winner). The parent replays each game and applies `learn` in game order, so
  the result does not depend on which worker played which game; learning only happens in the
  parent. Rounds are pipelined: the workers play round r+1 while the parent learns round r, so a
  game sees the memory as of at most two rounds ago (except across an evaluation point, where
  everything is synchronised). With `workers=1` the games are played in this process on the
  live memory. Every game's opening and RNG derive from (seed, game number): runs repeat exactly.
* Every `checkpoint` games, the rows changed since the last checkpoint and the games count go to
  the backend in ONE call (one SQLite transaction): an interrupted run (Ctrl-C, kill -9) loses
  at most the games since the last checkpoint and the next run resumes from the stored count.
* Every `eval_every` games the learner plays a fixed set of seeded games against each evaluation
  opponent (greedy: the trainer's exploration is 0 there), and a CSV row is appended.
* `should_stop` (the CLI's Ctrl-C / SIGTERM flag) is checked between rounds: the run then
  learns the round in flight, checkpoints and returns with `interrupted` set.

Opponents: ``self`` (plain self-play), ``self:KEY=VALUE`` (the learner with other settings,
sharing and training the same memory: the trainer's default is ``self:exploration=0``, see
`default_opponents`), or any registry agent; several alternate game by game.

Who learns in a game: in self-play both seats are the learner (seed 000's trainer learns each
seat's own moves; an agent with ``learn_whole_game = True``, like the weight grid whose update
covers the whole board, learns once per game); against a fixed opponent only the learner's seat.
A learning agent used as an opponent gets an empty memory and never learns: ``--opponent
trainer`` is the trainer's untrained self.
"""

from __future__ import annotations

import contextlib
import csv
import multiprocessing
import os
import random
import signal
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any, Protocol

from engine.agents import registry
from engine.agents.base import Agent, AgentSpec, Budget, LearningAgent, Limits
from engine.agents.connect4.trainer import decode_weights, encode_weights, position_key
from engine.agents.othello.weightgrid import decode_grid, encode_grid
from engine.games import new_game
from engine.games.base import GameState, Move
from engine.play import play_game

__all__ = [
    "EvalSpec",
    "InMemoryBackend",
    "MemoryBackend",
    "TrainConfig",
    "TrainResult",
    "decode_grid",
    "decode_weights",
    "encode_grid",
    "encode_weights",
    "position_key",
    "train",
]

#: Random plies before each evaluation game (as `python -m engine arena`).
EVAL_OPENING_PLIES = {"connect4": 2, "othello": 4}
SELF = "self"


class MemoryBackend(Protocol):
    """Where memories live between runs (the CLI's adapter wraps `db.store.Store`)."""

    def load(self, kind: str, name: str) -> tuple[dict[bytes, bytes], int]:
        """Every row of memory (kind, name) and its games_trained (({}, 0) if new)."""
        ...

    def save(
        self,
        kind: str,
        name: str,
        rows: Mapping[bytes, bytes],
        games_delta: int,
        meta: Mapping[str, Any] | None,
    ) -> None:
        """Upsert `rows`, add `games_delta` to games_trained, replace meta (None: keep it), all
        in one transaction."""
        ...


@dataclass
class InMemoryBackend:
    """A `MemoryBackend` in a dict (tests, and training without a database)."""

    memories: dict[tuple[str, str], dict[bytes, bytes]] = field(default_factory=dict)
    games: dict[tuple[str, str], int] = field(default_factory=dict)
    meta: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    saves: int = 0

    def load(self, kind: str, name: str) -> tuple[dict[bytes, bytes], int]:
        return dict(self.memories.get((kind, name), {})), self.games.get((kind, name), 0)

    def save(
        self,
        kind: str,
        name: str,
        rows: Mapping[bytes, bytes],
        games_delta: int,
        meta: Mapping[str, Any] | None,
    ) -> None:
        self.memories.setdefault((kind, name), {}).update(rows)
        self.games[(kind, name)] = self.games.get((kind, name), 0) + games_delta
        if meta is not None:
            self.meta[(kind, name)] = dict(meta)
        self.saves += 1


@dataclass(frozen=True, slots=True)
class EvalSpec:
    """One evaluation line: the learner (with `learner_params` overridden) against `opponent`."""

    label: str
    opponent: str
    learner_params: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class TrainConfig:
    """What to train; plain data (it crosses into the worker processes)."""

    game: str
    agent: str
    games: int
    memory: str | None = None
    #: None: `default_opponents` (the trainer: its greedy copy; others: plain self-play).
    opponents: tuple[str, ...] | None = None
    workers: int = 2
    checkpoint: int = 1000
    eval_every: int = 1000
    eval_games: int = 200
    evals: tuple[EvalSpec, ...] | None = None
    seed: int = 0
    variant: str | None = None
    #: Random plies before each training game; None: `EVAL_OPENING_PLIES` of the game.
    opening_plies: int | None = None
    exploration_final: float | None = None
    round_games: int = 50
    csv_path: str | None = None


@dataclass
class TrainResult:
    """What a run did: games (this run and in total), eval rows, speed, and why it stopped."""

    games_run: int = 0
    games_total: int = 0
    rows: int = 0
    seconds: float = 0.0
    play_seconds: float = 0.0
    evals: list[dict[str, Any]] = field(default_factory=list)
    interrupted: bool = False
    checkpoints: int = 0

    @property
    def games_per_second(self) -> float:
        return self.games_run / self.play_seconds if self.play_seconds > 0 else 0.0


# --- one game (in a worker, or in this process) --------------------------------------------------


@dataclass(frozen=True, slots=True)
class GameTask:
    """One game to play: the learner's seat (None: self-play), opening and RNG seeds."""

    index: int
    learner: AgentSpec
    opponent: AgentSpec | None
    opponent_budget: Budget
    learner_seat: int | None
    opening_seed: str
    rng_seed: str
    opening_plies: int
    #: The opponent is the learner itself with other settings (``self:exploration=0``): it
    #: plays with the learned memory and both seats learn.
    self_opponent: bool = False


@dataclass(frozen=True, slots=True)
class GameOut:
    """A finished game as the parent needs it: the opening, the agents' moves, the winner."""

    index: int
    opening: tuple[Move, ...]
    moves: tuple[Move, ...]
    winner: int | None


class _Player:
    """Builds and caches agents in one process; learners see `replica`, opponents nothing."""

    def __init__(self, game: str, variant: str | None, replica: Mapping[bytes, bytes]) -> None:
        self.game = game
        self.variant = variant
        self.replica = replica
        self.agents: dict[tuple[AgentSpec, bool], Agent] = {}
        self.empty: dict[bytes, bytes] = {}

    def agent(self, spec: AgentSpec, learner: bool) -> Agent:
        agent = self.agents.get((spec, learner))  # the learner and its untrained self differ
        if agent is None:
            agent = self.agents[(spec, learner)] = registry.build(spec, self.game)
        if isinstance(agent, LearningAgent):
            agent.use_memory(self.replica if learner else self.empty)
        return agent


def _opening(start: GameState, plies: int, seed: str) -> tuple[GameState, tuple[Move, ...]]:
    """`random_opening` that also returns the moves it played."""
    rng = random.Random(seed)
    state: GameState = start
    moves: tuple[Move, ...] = ()
    for _ in range(plies):
        legal = state.legal_moves()
        if not legal:
            break
        move = rng.choice(legal)
        nxt = state.play(move)
        if nxt.is_over():
            break
        state, moves = nxt, (*moves, move)
    return state, moves


def _play_task(player: _Player, task: GameTask) -> GameOut:
    start = new_game(player.game, player.variant)
    opening_state, opening = _opening(start, task.opening_plies, task.opening_seed)
    learner = player.agent(task.learner, True)
    if task.opponent is None:
        seats: tuple[Agent, Agent] = (learner, learner)
        budgets = (Budget(), Budget())
    else:
        other = player.agent(task.opponent, task.self_opponent)
        if task.learner_seat == 0:
            seats, budgets = (learner, other), (Budget(), task.opponent_budget)
        else:
            seats, budgets = (other, learner), (task.opponent_budget, Budget())
    record = play_game(opening_state, seats, budgets, random.Random(task.rng_seed))
    assert record.outcome is not None
    return GameOut(task.index, opening, tuple(record.moves), record.outcome.winner)


def _worker_main(
    conn: Connection, game: str, variant: str | None, snapshot: dict[bytes, bytes]
) -> None:
    """A worker process: apply each round's row delta to the replica, play, send the games."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when to stop
    player = _Player(game, variant, snapshot)
    replica = snapshot
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):  # the parent is gone (killed): nothing left to do
            return
        if message is None:
            break
        delta, tasks = message
        replica.update(delta)
        conn.send([_play_task(player, task) for task in tasks])
    conn.close()


class _Workers:
    """`n` worker processes with memory replicas, or this process when n <= 1."""

    def __init__(self, game: str, variant: str | None, n: int, memory: dict[bytes, bytes]) -> None:
        self.n = max(1, n)
        self.local: _Player | None = None
        self.queued: list[GameTask] = []
        self.conns: list[Connection] = []
        self.procs: list[Any] = []
        if self.n == 1:
            self.local = _Player(game, variant, memory)  # the live memory: never stale
            return
        ctx = multiprocessing.get_context("spawn")
        for _ in range(self.n):
            parent, child = ctx.Pipe()
            proc = ctx.Process(
                target=_worker_main, args=(child, game, variant, dict(memory)), daemon=True
            )
            proc.start()
            child.close()
            self.conns.append(parent)
            self.procs.append(proc)

    def submit(self, tasks: Sequence[GameTask], delta: Mapping[bytes, bytes]) -> None:
        """Start `tasks` (split across the workers) after sending them the rows in `delta`."""
        if self.local is not None:
            self.queued = list(tasks)
            return
        shares = [list(tasks[i :: self.n]) for i in range(self.n)]
        payload = dict(delta)
        for conn, share in zip(self.conns, shares, strict=True):
            conn.send((payload, share))

    def collect(self) -> list[GameOut]:
        """The games of the last `submit`, in task order."""
        if self.local is not None:
            tasks, self.queued = self.queued, []
            return [_play_task(self.local, t) for t in tasks]
        out: list[GameOut] = []
        for conn in self.conns:
            out.extend(conn.recv())
        return sorted(out, key=lambda g: g.index)

    def run(self, tasks: Sequence[GameTask], delta: Mapping[bytes, bytes]) -> list[GameOut]:
        self.submit(tasks, delta)
        return self.collect()

    def close(self) -> None:
        for conn in self.conns:
            with contextlib.suppress(OSError):
                conn.send(None)
        for proc in self.procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.terminate()
        self.conns, self.procs = [], []


# --- learning in the parent ----------------------------------------------------------------------


def replay(start: GameState, opening: Iterable[Move], moves: Sequence[Move]) -> list[GameState]:
    """The states before each of `moves`, after playing `opening` from `start`."""
    state = start
    for m in opening:
        state = state.play(m)
    states = []
    for m in moves:
        states.append(state)
        state = state.play(m)
    return states


def learning_seats(agent: LearningAgent, self_play: bool, learner_seat: int | None) -> list[int]:
    """Which seats' `learn` to apply for one game (see the module docstring)."""
    if not self_play:
        return [learner_seat if learner_seat is not None else 0]
    return [0] if getattr(agent, "learn_whole_game", False) else [0, 1]


def apply_learning(
    agent: LearningAgent,
    memory: dict[bytes, bytes],
    states: list[GameState],
    moves: list[Move],
    winner: int | None,
    seats: Iterable[int],
) -> dict[bytes, bytes]:
    """Run the contract's learn for `seats` on `memory` (updated in place); the changed rows."""
    changed: dict[bytes, bytes] = {}
    for seat in seats:
        keys = agent.learn_keys(states, moves, seat)
        rows = {k: memory[k] for k in keys if k in memory}
        result = 0.5 if winner is None else 1.0 if winner == seat else 0.0
        new = agent.learn(states, moves, seat, result, rows)
        memory.update(new)
        changed.update(new)
    return changed


class MemorySession:
    """Memories of learning agents playing outside training (`match`, `serve`).

    `attach` loads an agent's memory once (agents of the same kind and name share it) and hands
    it over with `use_memory`; `after_game` applies `learn` for every learning seat and saves the
    changed rows of each memory in one backend call (one transaction) per game.
    """

    def __init__(self, backend: MemoryBackend) -> None:
        self.backend = backend
        self.memories: dict[tuple[str, str], dict[bytes, bytes]] = {}

    def attach(self, agent: Agent) -> None:
        if not isinstance(agent, LearningAgent):
            return
        key = (agent.memory_kind, agent.memory_name)
        if key not in self.memories:
            self.memories[key] = self.backend.load(*key)[0]
        agent.use_memory(self.memories[key])

    def after_game(
        self,
        start: GameState,
        moves: Sequence[Move],
        seats: tuple[Agent, Agent],
        winner: int | None,
    ) -> dict[tuple[str, str], int]:
        """Learn from a finished game and save; the number of rows written per memory."""
        states = replay(start, (), moves)
        groups: dict[tuple[str, str], list[tuple[LearningAgent, int]]] = {}
        for seat, agent in enumerate(seats):
            if isinstance(agent, LearningAgent):
                groups.setdefault((agent.memory_kind, agent.memory_name), []).append((agent, seat))
        written = {}
        for key, members in groups.items():
            if self.memories.get(key) is None:
                self.attach(members[0][0])
            memory = self.memories[key]
            if len(members) == 2 and getattr(members[0][0], "learn_whole_game", False):
                members = members[:1]  # one update per game, not per seat
            changed: dict[bytes, bytes] = {}
            for agent, seat in members:
                changed.update(apply_learning(agent, memory, states, list(moves), winner, [seat]))
            self.backend.save(key[0], key[1], changed, 1, None)
            written[key] = len(changed)
        return written


# --- evaluation ----------------------------------------------------------------------------------


def default_evals(game: str, learner: Agent, spec: AgentSpec) -> tuple[EvalSpec, ...]:
    """Connect Four: random, onestep and the untrained self (the same settings with an empty
    memory), all greedy (exploration 0). Othello: greedy-random and random, plus the learned
    grid on every move (capture_share 1)."""
    if game == "connect4":
        greedy: tuple[tuple[str, Any], ...] = (
            (("exploration", 0.0),) if hasattr(learner, "exploration") else ()
        )
        evals = [EvalSpec("random", "random", greedy), EvalSpec("onestep", "onestep", greedy)]
        if isinstance(learner, LearningAgent):
            params = {**spec.params, **dict(greedy)}
            params.pop("memory", None)
            spec_text = spec.name + "".join(f":{k}={v}" for k, v in sorted(params.items()))
            evals.append(EvalSpec("untrained-self", spec_text, greedy))
        return tuple(evals)
    evals = [EvalSpec("greedy-random", "greedy-random"), EvalSpec("random", "random")]
    if hasattr(learner, "capture_share"):
        evals.append(
            EvalSpec("greedy-random(capture=1)", "greedy-random", (("capture_share", 1.0),))
        )
    return tuple(evals)


def eval_tasks(
    config: TrainConfig, learner: AgentSpec, ev: EvalSpec, base_index: int
) -> list[GameTask]:
    """The fixed seeded games of one evaluation line (same openings at every checkpoint)."""
    spec, budget = registry.resolve(ev.opponent, config.game, limits=Limits.none())
    params = dict(learner.params)
    params.update(dict(ev.learner_params))
    lspec = AgentSpec(learner.name, params)
    plies = EVAL_OPENING_PLIES.get(config.game, 2)
    return [
        GameTask(
            index=base_index + i,
            learner=lspec,
            opponent=spec,
            opponent_budget=budget,
            learner_seat=i % 2,
            opening_seed=f"eval-opening:{config.seed}:{i // 2}",
            rng_seed=f"eval-game:{config.seed}:{ev.label}:{i}",
            opening_plies=plies,
        )
        for i in range(config.eval_games)
    ]


def score(outs: Iterable[GameOut], tasks: Sequence[GameTask]) -> tuple[int, int, int]:
    """(wins, draws, losses) of the learner."""
    seat = {t.index: t.learner_seat for t in tasks}
    w = d = lo = 0
    for g in outs:
        if g.winner is None:
            d += 1
        elif g.winner == seat[g.index]:
            w += 1
        else:
            lo += 1
    return w, d, lo


def default_opponents(learner: Agent) -> tuple[str, ...]:
    """Self-play. For an agent with an exploration range (the trainer), one seat explores and
    the other is the same agent greedy (``self:exploration=0``): both share and train the
    memory, and the greedy seat walks the lines the trained agent will really play, which is
    what made it learn (docs/learning.md compares the mixes)."""
    return (f"{SELF}:exploration=0",) if hasattr(learner, "exploration") else (SELF,)


def _opponent(text: str, learner: AgentSpec, game: str) -> tuple[AgentSpec, Budget, bool] | None:
    """None for plain self-play; (spec, budget, is the learner itself) otherwise.

    ``self:key=value`` is the learner with other settings (e.g. ``self:exploration=0``, a
    greedy copy that shares and trains the memory); anything else is a registry agent.
    """
    name, _, rest = text.partition(":")
    if name != SELF:
        spec, budget = registry.resolve(text, game, limits=Limits.none())
        return spec, budget, False
    if not rest:
        return None
    params = {**learner.params, **registry.parse_settings(rest.split(":"))}
    return AgentSpec(learner.name, params), Budget(), True


def with_memory(spec: AgentSpec, memory: str | None) -> AgentSpec:
    """`spec` using memory `memory` (None: keep the spec's, else "default"), if its agent takes
    a `memory` parameter. Naming a memory is what switches the weight grid to its learned grid."""
    info = registry.AGENTS.get(spec.name)
    if info is None or "memory" not in info.parameters():
        return spec
    if memory is None:
        if "memory" in spec.params:
            return spec
        memory = "default"
    return AgentSpec(spec.name, {**spec.params, "memory": memory})


# --- the loop ------------------------------------------------------------------------------------


def train(
    config: TrainConfig,
    backend: MemoryBackend,
    on_progress: Callable[[int, str], None] | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    on_eval: Callable[[dict[str, Any]], None] | None = None,
) -> TrainResult:
    """Train `config.agent` for `config.games` games; see the module docstring."""
    spec, _ = registry.resolve(config.agent, config.game, limits=Limits.none())
    spec = with_memory(spec, config.memory)
    learner = registry.build(spec, config.game)
    if not isinstance(learner, LearningAgent):
        raise ValueError(f"agent {spec.name!r} does not learn (it has no memory)")
    kind, name = learner.memory_kind, learner.memory_name
    memory, games_done = backend.load(kind, name)
    evals = config.evals if config.evals is not None else default_evals(config.game, learner, spec)
    opponent_texts = config.opponents or default_opponents(learner)
    opponents = [_opponent(o, spec, config.game) for o in opponent_texts]
    opening_plies = (
        EVAL_OPENING_PLIES.get(config.game, 0)
        if config.opening_plies is None
        else config.opening_plies
    )
    start_exploration = float(getattr(learner, "exploration", 0.0))
    start = new_game(config.game, config.variant)
    result = TrainResult(games_total=games_done, rows=len(memory))
    meta_base = {
        "game": config.game,
        "variant": start.variant,
        "agent": spec.label(),
        "format": _format_note(kind, start),
    }

    t0 = time.perf_counter()
    workers = _Workers(config.game, config.variant, config.workers, memory)
    pending_delta: dict[bytes, bytes] = {}  # rows the workers have not seen yet
    dirty: dict[bytes, bytes] = {}  # rows not yet checkpointed
    unsaved = 0
    rolling: deque[float] = deque(maxlen=1000)
    eval_index = 10**12  # eval task indices never collide with training ones

    def checkpoint() -> None:
        nonlocal unsaved
        if not dirty and not unsaved:
            return
        meta = {**meta_base, "games": games_done, "updated_rows": len(dirty)}
        backend.save(kind, name, dict(dirty), unsaved, meta)
        dirty.clear()
        unsaved = 0
        result.checkpoints += 1

    def evaluate() -> None:
        row: dict[str, Any] = {
            "games": games_done,
            "rows": len(memory),
            "seconds": round(time.perf_counter() - t0, 2),
        }
        tasks: list[GameTask] = []
        parts: list[tuple[EvalSpec, list[GameTask]]] = []
        for j, ev in enumerate(evals):
            ts = eval_tasks(config, spec, ev, eval_index + j * config.eval_games)
            parts.append((ev, ts))
            tasks.extend(ts)
        outs = workers.run(tasks, pending_delta)
        pending_delta.clear()
        by_index = {g.index: g for g in outs}
        for ev, ts in parts:
            w, d, lo = score((by_index[t.index] for t in ts), ts)
            row[f"{ev.label}_score"] = round((w + 0.5 * d) / max(len(ts), 1), 4)
            row[f"{ev.label}_wdl"] = f"{w}-{d}-{lo}"
        result.evals.append(row)
        if config.csv_path:
            _append_csv(config.csv_path, row)
        if on_eval is not None:
            on_eval(row)

    every = config.eval_every if config.eval_games > 0 else 0
    target = games_done + config.games
    next_index = games_done  # the next game to hand out

    def make_round() -> list[GameTask]:
        nonlocal next_index
        n = min(config.round_games * workers.n, target - next_index)
        if every > 0:  # rounds end on evaluation points
            n = min(n, every - next_index % every)
        exploration = start_exploration
        if config.exploration_final is not None and config.games > 0:
            frac = (next_index - (target - config.games)) / config.games
            exploration += (config.exploration_final - start_exploration) * frac
        lspec = spec
        if hasattr(learner, "exploration"):
            lspec = AgentSpec(spec.name, {**spec.params, "exploration": exploration})
        tasks = []
        for g in range(next_index, next_index + n):
            opp = opponents[g % len(opponents)]
            tasks.append(
                GameTask(
                    index=g,
                    learner=lspec,
                    opponent=None if opp is None else opp[0],
                    opponent_budget=Budget() if opp is None else opp[1],
                    learner_seat=None if opp is None else (g // len(opponents)) % 2,
                    self_opponent=opp is not None and opp[2],
                    opening_seed=f"train-opening:{config.seed}:{g}",
                    rng_seed=f"train-game:{config.seed}:{g}",
                    opening_plies=opening_plies,
                )
            )
        next_index += n
        return tasks

    def learn_round(tasks: list[GameTask], outs: list[GameOut]) -> None:
        nonlocal games_done, unsaved
        by_index = {t.index: t for t in tasks}
        for out in outs:
            task = by_index[out.index]
            states = replay(start, out.opening, out.moves)
            self_play = task.opponent is None or task.self_opponent
            seats = learning_seats(learner, self_play, task.learner_seat)
            changed = apply_learning(learner, memory, states, list(out.moves), out.winner, seats)
            pending_delta.update(changed)
            dirty.update(changed)
            seat = 0 if task.learner_seat is None else task.learner_seat
            rolling.append(0.5 if out.winner is None else float(out.winner == seat))
            games_done += 1
            unsaved += 1
            result.games_run += 1

    try:
        if every > 0 and games_done == 0:
            evaluate()
        t1 = time.perf_counter()
        inflight: list[GameTask] = []
        while True:
            if not inflight:
                if next_index >= target or should_stop():
                    break
                inflight = make_round()
                workers.submit(inflight, pending_delta)
                pending_delta.clear()
            outs = workers.collect()
            done, inflight = inflight, []
            # Pipelining: the workers play the next round while this one is learned (so a game
            # sees the memory as of up to two rounds ago), except across an evaluation point.
            at_eval = every > 0 and next_index % every == 0
            if next_index < target and not at_eval and not should_stop():
                inflight = make_round()
                workers.submit(inflight, pending_delta)
                pending_delta.clear()
            learn_round(done, outs)
            result.play_seconds = time.perf_counter() - t1
            if on_progress is not None:
                rate = sum(rolling) / max(len(rolling), 1)
                who = "first player" if opponents == [None] else "learner"
                on_progress(len(outs), f"{who} {100 * rate:.0f}% (last {len(rolling)})")
            if unsaved >= config.checkpoint:
                checkpoint()
            if every > 0 and not inflight and games_done % every == 0:
                t2 = time.perf_counter()
                evaluate()
                t1 += time.perf_counter() - t2  # evaluation is not training time
        result.interrupted = result.games_run < config.games
        if every > 0 and result.games_run and not result.interrupted and games_done % every:
            evaluate()
    finally:
        workers.close()
        checkpoint()
        result.games_total = games_done
        result.rows = len(memory)
        result.seconds = time.perf_counter() - t0
    return result


def _format_note(kind: str, start: GameState) -> str:
    if kind == "trainer":
        cols = getattr(start, "cols", 7)
        return f"key: canonical position (mirror-merged); value: {cols} x float32 (<f4) weights"
    if kind == "weightgrid":
        return "key b'grid': 64 x float64 (<f8), a1..h8"
    return ""


def _append_csv(path: str, row: Mapping[str, Any]) -> None:
    """Append an evaluation row (header first if the file is new or empty)."""
    new = not os.path.exists(path) or os.path.getsize(path) == 0
    with open(path, "a", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(row))
        if new:
            writer.writeheader()
        writer.writerow(row)


def read_csv(path: str) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def plot_curves(rows: Sequence[Mapping[str, Any]], path: str, title: str) -> None:
    """Learning curves (learner score against each evaluation opponent) to a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [k[: -len("_score")] for k in rows[0] if k.endswith("_score")] if rows else []
    fig, ax = plt.subplots(figsize=(7, 4.2))
    xs = [int(r["games"]) for r in rows]
    for label in labels:
        ax.plot(xs, [100 * float(r[f"{label}_score"]) for r in rows], marker="o", label=label)
    ax.axhline(50, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("training games")
    ax.set_ylabel("learner score % (win 1, draw 1/2)")
    ax.set_ylim(0, 100)
    ax.set_title(title)
    ax.legend(loc="lower right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
