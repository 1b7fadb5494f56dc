"""The `train` CLI's loop: rounds of games on worker processes, learning in the parent.

The loop is pure apart from the `MemoryBackend` it is handed, and talks to the agent only through
the `LearningAgent` contract and the rule of engine/learning/rule.py, as the lobby does, so what
is trained here is what the bot plays. How a run goes (rounds and their pipelining, checkpoints,
evaluation, opponents, who learns, stopping): docs/learning.md, "Training".
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine.agents import registry
from engine.agents.base import Agent, AgentSpec, Budget, LearningAgent, Limits
from engine.games import new_game
from engine.games.catalog import game_info
from engine.learning.memory import MemoryBackend
from engine.learning.rule import apply_learning, learning_seats, replay, seat_result
from engine.learning.specs import with_memory
from tools.training.curves import append_csv
from tools.training.evals import EvalSpec, default_evals, eval_games, score
from tools.training.workers import PlayedGame, TrainGame, Workers

SELF = "self"
#: The first index of evaluation games: they never collide with training ones.
EVAL_INDEX = 10**12


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
    #: Random plies before each training game; None: the game's `opening_plies` (catalog).
    opening_plies: int | None = None
    exploration_final: float | None = None
    round_games: int = 50
    csv_path: str | None = None


@dataclass
class TrainReport:
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


# --- the loop ------------------------------------------------------------------------------------


def train(
    config: TrainConfig,
    backend: MemoryBackend,
    on_progress: Callable[[int, str], None] | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    on_eval: Callable[[dict[str, Any]], None] | None = None,
) -> TrainReport:
    """Train `config.agent` for `config.games` games (docs/learning.md, "Training").

    `should_stop` (the CLI's Ctrl-C / SIGTERM flag) is checked between rounds: the run then
    learns the round in flight, checkpoints and returns with `interrupted` set.
    """
    return _Run(config, backend, on_progress, on_eval).go(should_stop)


class _Run:
    """One `train` call: the learner, its memory, the workers and the counts of the run."""

    def __init__(
        self,
        config: TrainConfig,
        backend: MemoryBackend,
        on_progress: Callable[[int, str], None] | None,
        on_eval: Callable[[dict[str, Any]], None] | None,
    ) -> None:
        self.config, self.backend = config, backend
        self.on_progress, self.on_eval = on_progress, on_eval
        spec, _ = registry.resolve(config.agent, config.game, limits=Limits.none())
        self.spec = spec = with_memory(spec, config.memory)
        learner = registry.build(spec, config.game)
        if not isinstance(learner, LearningAgent):
            raise ValueError(f"agent {spec.name!r} does not learn (it has no memory)")
        self.learner = learner
        self.kind, self.name = learner.memory_kind, learner.memory_name
        self.memory, self.games_done = backend.load(self.kind, self.name)
        self.evals = (
            config.evals if config.evals is not None else default_evals(config.game, learner, spec)
        )
        opponent_texts = config.opponents or default_opponents(learner)
        self.opponents = [_opponent(o, spec, config.game) for o in opponent_texts]
        self.opening_plies = (
            game_info(config.game).opening_plies
            if config.opening_plies is None
            else config.opening_plies
        )
        self.start_exploration = float(getattr(learner, "exploration", 0.0))
        self.start = new_game(config.game, config.variant)
        self.result = TrainReport(games_total=self.games_done, rows=len(self.memory))
        self.meta_base = {
            "game": config.game,
            "variant": self.start.variant,
            "agent": spec.label(),
            "format": learner.memory_format(self.start),
        }
        self.t0 = time.perf_counter()
        self.workers = Workers(config.game, config.variant, config.workers, self.memory)
        self.pending_delta: dict[bytes, bytes] = {}  # rows the workers have not seen yet
        self.dirty: dict[bytes, bytes] = {}  # rows not yet checkpointed
        self.unsaved = 0
        self.rolling: deque[float] = deque(maxlen=1000)
        self.every = config.eval_every if config.eval_games > 0 else 0
        self.target = self.games_done + config.games
        self.next_index = self.games_done  # the next game to hand out

    def checkpoint(self) -> None:
        if not self.dirty and not self.unsaved:
            return
        meta = {**self.meta_base, "games": self.games_done, "updated_rows": len(self.dirty)}
        self.backend.save(self.kind, self.name, dict(self.dirty), self.unsaved, meta)
        self.dirty.clear()
        self.unsaved = 0
        self.result.checkpoints += 1

    def evaluate(self) -> None:
        config = self.config
        row: dict[str, Any] = {
            "games": self.games_done,
            "rows": len(self.memory),
            "seconds": round(time.perf_counter() - self.t0, 2),
        }
        tasks: list[TrainGame] = []
        parts: list[tuple[EvalSpec, list[TrainGame]]] = []
        for j, ev in enumerate(self.evals):
            base = EVAL_INDEX + j * config.eval_games
            ts = eval_games(config.game, config.seed, config.eval_games, self.spec, ev, base)
            parts.append((ev, ts))
            tasks.extend(ts)
        outs = self.workers.run(tasks, self.pending_delta)
        self.pending_delta.clear()
        by_index = {g.index: g for g in outs}
        for ev, ts in parts:
            mean, wdl = score((by_index[t.index] for t in ts), ts)
            row[f"{ev.label}_score"] = round(mean, 4)
            row[f"{ev.label}_wdl"] = wdl
        self.result.evals.append(row)
        if config.csv_path:
            append_csv(config.csv_path, row)
        if self.on_eval is not None:
            self.on_eval(row)

    def make_round(self) -> list[TrainGame]:
        config, first = self.config, self.next_index
        n = min(config.round_games * self.workers.n, self.target - first)
        if self.every > 0:  # rounds end on evaluation points
            n = min(n, self.every - first % self.every)
        exploration = self.start_exploration
        if config.exploration_final is not None and config.games > 0:
            frac = (first - (self.target - config.games)) / config.games
            exploration += (config.exploration_final - self.start_exploration) * frac
        lspec = self.spec
        if hasattr(self.learner, "exploration"):
            lspec = AgentSpec(lspec.name, {**lspec.params, "exploration": exploration})
        tasks = []
        for g in range(first, first + n):
            opp = self.opponents[g % len(self.opponents)]
            tasks.append(
                TrainGame(
                    index=g,
                    learner=lspec,
                    opponent=None if opp is None else opp[0],
                    opponent_budget=Budget() if opp is None else opp[1],
                    learner_seat=None if opp is None else (g // len(self.opponents)) % 2,
                    self_opponent=opp is not None and opp[2],
                    opening_seed=f"train-opening:{config.seed}:{g}",
                    rng_seed=f"train-game:{config.seed}:{g}",
                    opening_plies=self.opening_plies,
                )
            )
        self.next_index += n
        return tasks

    def learn_round(self, tasks: list[TrainGame], outs: list[PlayedGame]) -> None:
        by_index = {t.index: t for t in tasks}
        for out in outs:
            task = by_index[out.index]
            states = replay(self.start, out.opening, out.moves)
            seat = 0 if task.learner_seat is None else task.learner_seat
            self_play = task.opponent is None or task.self_opponent
            seats = learning_seats(self.learner, (0, 1) if self_play else (seat,))
            changed = apply_learning(
                self.learner, self.memory, states, list(out.moves), out.winner, seats
            )
            self.pending_delta.update(changed)
            self.dirty.update(changed)
            self.rolling.append(seat_result(out.winner, seat))
            self.games_done += 1
            self.unsaved += 1
            self.result.games_run += 1

    def submit(self) -> list[TrainGame]:
        """Hand the next round to the workers, with the rows they have not seen."""
        tasks = self.make_round()
        self.workers.submit(tasks, self.pending_delta)
        self.pending_delta.clear()
        return tasks

    def go(self, should_stop: Callable[[], bool]) -> TrainReport:
        result, every = self.result, self.every
        try:
            if every > 0 and self.games_done == 0:
                self.evaluate()
            t1 = time.perf_counter()
            inflight: list[TrainGame] = []
            while True:
                if not inflight:
                    if self.next_index >= self.target or should_stop():
                        break
                    inflight = self.submit()
                outs = self.workers.collect()
                done, inflight = inflight, []
                # Pipelining: the workers play the next round while this one is learned (so a
                # game sees the memory as of up to two rounds ago), except across an
                # evaluation point.
                at_eval = every > 0 and self.next_index % every == 0
                if self.next_index < self.target and not at_eval and not should_stop():
                    inflight = self.submit()
                self.learn_round(done, outs)
                result.play_seconds = time.perf_counter() - t1
                self.report(len(outs))
                if self.unsaved >= self.config.checkpoint:
                    self.checkpoint()
                if every > 0 and not inflight and self.games_done % every == 0:
                    t2 = time.perf_counter()
                    self.evaluate()
                    t1 += time.perf_counter() - t2  # evaluation is not training time
            result.interrupted = result.games_run < self.config.games
            last = every > 0 and result.games_run and not result.interrupted
            if last and self.games_done % every:
                self.evaluate()
        finally:
            self.workers.close()
            self.checkpoint()
            result.games_total = self.games_done
            result.rows = len(self.memory)
            result.seconds = time.perf_counter() - self.t0
        return result

    def report(self, played: int) -> None:
        if self.on_progress is not None:
            rate = sum(self.rolling) / max(len(self.rolling), 1)
            who = "first player" if self.opponents == [None] else "learner"
            self.on_progress(played, f"{who} {100 * rate:.0f}% (last {len(self.rolling)})")
