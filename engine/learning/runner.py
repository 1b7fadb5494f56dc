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
from engine.learning.curves import append_csv
from engine.learning.evals import EvalSpec, default_evals, eval_games, score
from engine.learning.memory import MemoryBackend
from engine.learning.rule import apply_learning, learning_seats, replay, seat_result
from engine.learning.specs import with_memory
from engine.learning.workers import PlayedGame, TrainGame, Workers

SELF = "self"


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
        game_info(config.game).opening_plies
        if config.opening_plies is None
        else config.opening_plies
    )
    start_exploration = float(getattr(learner, "exploration", 0.0))
    start = new_game(config.game, config.variant)
    result = TrainReport(games_total=games_done, rows=len(memory))
    meta_base = {
        "game": config.game,
        "variant": start.variant,
        "agent": spec.label(),
        "format": learner.memory_format(start),
    }

    t0 = time.perf_counter()
    workers = Workers(config.game, config.variant, config.workers, memory)
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
        tasks: list[TrainGame] = []
        parts: list[tuple[EvalSpec, list[TrainGame]]] = []
        for j, ev in enumerate(evals):
            base = eval_index + j * config.eval_games
            ts = eval_games(config.game, config.seed, config.eval_games, spec, ev, base)
            parts.append((ev, ts))
            tasks.extend(ts)
        outs = workers.run(tasks, pending_delta)
        pending_delta.clear()
        by_index = {g.index: g for g in outs}
        for ev, ts in parts:
            mean, wdl = score((by_index[t.index] for t in ts), ts)
            row[f"{ev.label}_score"] = round(mean, 4)
            row[f"{ev.label}_wdl"] = wdl
        result.evals.append(row)
        if config.csv_path:
            append_csv(config.csv_path, row)
        if on_eval is not None:
            on_eval(row)

    every = config.eval_every if config.eval_games > 0 else 0
    target = games_done + config.games
    next_index = games_done  # the next game to hand out

    def make_round() -> list[TrainGame]:
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
                TrainGame(
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

    def learn_round(tasks: list[TrainGame], outs: list[PlayedGame]) -> None:
        nonlocal games_done, unsaved
        by_index = {t.index: t for t in tasks}
        for out in outs:
            task = by_index[out.index]
            states = replay(start, out.opening, out.moves)
            seat = 0 if task.learner_seat is None else task.learner_seat
            self_play = task.opponent is None or task.self_opponent
            seats = learning_seats(learner, (0, 1) if self_play else (seat,))
            changed = apply_learning(learner, memory, states, list(out.moves), out.winner, seats)
            pending_delta.update(changed)
            dirty.update(changed)
            rolling.append(seat_result(out.winner, seat))
            games_done += 1
            unsaved += 1
            result.games_run += 1

    try:
        if every > 0 and games_done == 0:
            evaluate()
        t1 = time.perf_counter()
        inflight: list[TrainGame] = []
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
