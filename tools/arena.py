"""Round-robin tournaments between agents: the schedule, the games in a process pool, the tables.

Every pair of agents plays `games` games. Colours alternate within a pairing (game i: the first
agent of the pair moves first when i is even) and games 2j and 2j+1 start from the same random
opening j, so neither side of a pair gets the better openings. Opening j is the same for every
pairing, so all agents face the same set of openings.

Results do not depend on the number of workers or on scheduling: each game's opening and agent RNG
are derived from (seed, pairing, game index) alone, and each game is played by fresh copies of the
agents (an agent carrying a transposition table from an earlier game in the same worker could
otherwise play differently). Only the measured move times vary from run to run, and agents
limited by time rather than depth or nodes.
"""

from __future__ import annotations

import copy
import math
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from openskill.models import PlackettLuce

from engine.agents import registry
from engine.agents.base import Agent, Budget, Limits
from engine.games import new_game
from engine.games.base import GameState
from engine.play import play_game, random_opening
from engine.warm import warm_agent, warm_positions
from tools.pool import as_done, pool


@dataclass(frozen=True, slots=True)
class ArenaConfig:
    """What to play: plain data, sent once to each worker process."""

    game: str
    specs: tuple[str, ...]
    labels: tuple[str, ...]
    games: int
    seed: int
    opening_plies: int
    variant: str | None = None


@dataclass(frozen=True, slots=True)
class GameTask:
    """One scheduled game: agents `a` and `b` (indices, a < b), the pairing's `index`-th game."""

    a: int
    b: int
    index: int
    a_first: bool
    opening: int


@dataclass(frozen=True, slots=True)
class GameResult:
    """One finished game, from agent `a`'s point of view (1 win, 0.5 draw, 0 loss)."""

    task: GameTask
    a_result: float
    plies: int
    a_times: tuple[float, ...]
    b_times: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class PairResult:
    a: str
    b: str
    a_wins: int
    draws: int
    b_wins: int

    @property
    def games(self) -> int:
        return self.a_wins + self.draws + self.b_wins

    @property
    def a_score(self) -> float:
        """Agent a's points per game: 1 a win, 0.5 a draw."""
        return (self.a_wins + 0.5 * self.draws) / max(self.games, 1)


@dataclass(frozen=True, slots=True)
class Rating:
    mu: float
    sigma: float

    @property
    def ordinal(self) -> float:
        return self.mu - 3 * self.sigma


@dataclass(frozen=True, slots=True)
class MoveTimes:
    moves: int
    mean: float
    p95: float
    max: float


@dataclass(frozen=True, slots=True)
class ArenaResult:
    config: ArenaConfig
    pairs: list[PairResult]
    ratings: dict[str, Rating]
    move_times: dict[str, MoveTimes]

    def total_score(self, label: str) -> float:
        """`label`'s points per game over all its games."""
        points = games = 0.0
        for p in self.pairs:
            if p.a == label:
                points, games = points + p.a_wins + 0.5 * p.draws, games + p.games
            elif p.b == label:
                points, games = points + p.b_wins + 0.5 * p.draws, games + p.games
        return points / max(games, 1)

    def pair(self, x: str, y: str) -> tuple[int, int, int]:
        """(wins, draws, losses) of `x` against `y`."""
        for p in self.pairs:
            if (p.a, p.b) == (x, y):
                return p.a_wins, p.draws, p.b_wins
            if (p.a, p.b) == (y, x):
                return p.b_wins, p.draws, p.a_wins
        raise KeyError((x, y))


# --- the schedule -------------------------------------------------------------------------------


def schedule(n_agents: int, games: int) -> list[GameTask]:
    """Every game of the round robin, pairing by pairing, in a fixed order."""
    return [
        GameTask(a, b, i, a_first=i % 2 == 0, opening=i // 2)
        for a in range(n_agents)
        for b in range(a + 1, n_agents)
        for i in range(games)
    ]


def opening(start: GameState, plies: int, seed: int, j: int) -> GameState:
    """Opening `j` of a tournament: `plies` random plies from `start`, never a finished game."""
    return random_opening(start, plies, random.Random(f"arena-opening:{seed}:{j}"))


def game_rng(seed: int, task: GameTask) -> random.Random:
    """The agents' RNG for one game, from (seed, pairing, game index) only."""
    return random.Random(f"arena-game:{seed}:{task.a}:{task.b}:{task.index}")


# --- playing (in worker processes, or in this one) ----------------------------------------------

_CONFIG: ArenaConfig | None = None
_AGENTS: dict[str, tuple[Agent, Budget]] = {}


def _template(spec_text: str, game: str) -> tuple[Agent, Budget]:
    """The agent a spec names, built once per process (games play on copies of it)."""
    if spec_text not in _AGENTS:
        spec, budget = registry.resolve(spec_text, game, limits=Limits.none())
        _AGENTS[spec_text] = (registry.build(spec, game), budget)
    return _AGENTS[spec_text]


def init_worker(config: ArenaConfig) -> None:
    """Build the agents and compile (or load) their numba kernels before the first game."""
    global _CONFIG
    _CONFIG = config
    _AGENTS.clear()
    # The end of a game too: the endgame solvers' kernels would otherwise load (or, after an
    # update, compile) inside a timed move.
    picks = warm_positions(config.game, random.Random(0))
    if config.variant is not None:
        picks.append(new_game(config.game, config.variant))
    for spec_text in dict.fromkeys(config.specs):
        agent, _ = _template(spec_text, config.game)
        warm_agent(copy.deepcopy(agent), picks, random.Random(0))


def play_task(config: ArenaConfig, task: GameTask) -> GameResult:
    """Play one scheduled game with fresh copies of the two agents."""
    start = opening(
        new_game(config.game, config.variant), config.opening_plies, config.seed, task.opening
    )
    agent_a, budget_a = _template(config.specs[task.a], config.game)
    agent_b, budget_b = _template(config.specs[task.b], config.game)
    seats = (copy.deepcopy(agent_a), copy.deepcopy(agent_b))
    budgets = (budget_a, budget_b)
    a_seat = 0 if task.a_first else 1
    order = (0, 1) if task.a_first else (1, 0)
    record = play_game(
        start,
        (seats[order[0]], seats[order[1]]),
        (budgets[order[0]], budgets[order[1]]),
        game_rng(config.seed, task),
    )
    assert record.outcome is not None
    times: tuple[list[float], list[float]] = ([], [])
    state = start
    for decision in record.decisions:
        times[state.to_move()].append(decision.seconds)
        state = state.play(decision.move)
    return GameResult(
        task=task,
        a_result=record.outcome.result_for(a_seat),
        plies=len(record.moves),
        a_times=tuple(times[a_seat]),
        b_times=tuple(times[1 - a_seat]),
    )


def _play_batch(tasks: list[GameTask]) -> list[GameResult]:
    assert _CONFIG is not None, "init_worker was not called"
    return [play_task(_CONFIG, task) for task in tasks]


def play_all(
    config: ArenaConfig,
    workers: int,
    on_done: Callable[[int], None] | None = None,
) -> list[GameResult]:
    """Play the whole schedule on `workers` processes (1: in this process), results in order."""
    tasks = schedule(len(config.specs), config.games)
    if workers <= 1:
        init_worker(config)
        results = []
        for batch in _batches(tasks, 1):
            results.extend(_play_batch(batch))
            if on_done is not None:
                on_done(len(batch))
    else:
        results = _play_in_pool(config, tasks, workers, on_done)
    return sorted(results, key=lambda r: (r.task.a, r.task.b, r.task.index))


def _batches(tasks: list[GameTask], size: int) -> list[list[GameTask]]:
    return [tasks[i : i + size] for i in range(0, len(tasks), size)]


def _play_in_pool(
    config: ArenaConfig,
    tasks: list[GameTask],
    workers: int,
    on_done: Callable[[int], None] | None,
) -> list[GameResult]:
    # Small batches cut the per-task overhead of quick games but keep the load balanced.
    size = max(1, min(8, math.ceil(len(tasks) / (workers * 8))))
    results: list[GameResult] = []
    with pool(workers, init_worker, (config,)) as executor:
        jobs = [(batch,) for batch in _batches(tasks, size)]
        for batch_results in as_done(executor, _play_batch, jobs):
            results.extend(batch_results)
            if on_done is not None:
                on_done(len(batch_results))
    return results


# --- the tables ---------------------------------------------------------------------------------


def cross_table(labels: Sequence[str], results: Iterable[GameResult]) -> list[PairResult]:
    """Wins, draws and losses of every pairing, in schedule order."""
    counts: dict[tuple[int, int], list[int]] = {}
    for r in results:
        key = (r.task.a, r.task.b)
        row = counts.setdefault(key, [0, 0, 0])
        row[0 if r.a_result == 1 else 2 if r.a_result == 0 else 1] += 1
    return [
        PairResult(labels[a], labels[b], w, d, lo) for (a, b), (w, d, lo) in sorted(counts.items())
    ]


def ratings(labels: Sequence[str], results: Iterable[GameResult]) -> dict[str, Rating]:
    """openskill Plackett-Luce ratings, updated game by game in schedule order."""
    model = PlackettLuce()
    current = {label: model.rating(name=label) for label in labels}
    ordered = sorted(results, key=lambda r: (r.task.index, r.task.a, r.task.b))
    for r in ordered:
        a, b = labels[r.task.a], labels[r.task.b]
        ranks = [1.0, 1.0] if r.a_result == 0.5 else [0.0, 1.0] if r.a_result == 1 else [1.0, 0.0]
        [[new_a], [new_b]] = model.rate([[current[a]], [current[b]]], ranks=ranks)
        current[a], current[b] = new_a, new_b
    return {label: Rating(float(r.mu), float(r.sigma)) for label, r in current.items()}


def move_times(labels: Sequence[str], results: Iterable[GameResult]) -> dict[str, MoveTimes]:
    """Each agent's seconds per move: mean, 95th percentile (nearest rank) and max."""
    samples: dict[str, list[float]] = {label: [] for label in labels}
    for r in results:
        samples[labels[r.task.a]].extend(r.a_times)
        samples[labels[r.task.b]].extend(r.b_times)
    out = {}
    for label, xs in samples.items():
        xs.sort()
        if not xs:
            out[label] = MoveTimes(0, 0.0, 0.0, 0.0)
            continue
        p95 = xs[max(0, math.ceil(0.95 * len(xs)) - 1)]
        out[label] = MoveTimes(len(xs), sum(xs) / len(xs), p95, xs[-1])
    return out


def summarise(config: ArenaConfig, results: Sequence[GameResult]) -> ArenaResult:
    return ArenaResult(
        config=config,
        pairs=cross_table(config.labels, results),
        ratings=ratings(config.labels, results),
        move_times=move_times(config.labels, results),
    )


def run(
    config: ArenaConfig, workers: int, on_done: Callable[[int], None] | None = None
) -> ArenaResult:
    """Play the tournament and build its tables."""
    return summarise(config, play_all(config, workers, on_done))


# --- output -------------------------------------------------------------------------------------


def by_rating(result: ArenaResult) -> list[str]:
    """Labels from the best conservative rating (ordinal) down; ties keep the given order."""
    labels = result.config.labels
    return sorted(labels, key=lambda x: (-result.ratings[x].ordinal, labels.index(x)))


def to_json(result: ArenaResult) -> dict[str, Any]:
    c = result.config
    return {
        "game": c.game,
        "games_per_pairing": c.games,
        "seed": c.seed,
        "opening_plies": c.opening_plies,
        "agents": list(c.labels),
        "pairs": [
            {
                "a": p.a,
                "b": p.b,
                "a_wins": p.a_wins,
                "draws": p.draws,
                "b_wins": p.b_wins,
                "a_score": round(p.a_score, 4),
            }
            for p in result.pairs
        ],
        "scores": {x: round(result.total_score(x), 4) for x in c.labels},
        "ratings": {
            x: {
                "mu": round(r.mu, 4),
                "sigma": round(r.sigma, 4),
                "ordinal": round(r.ordinal, 4),
            }
            for x, r in ((x, result.ratings[x]) for x in by_rating(result))
        },
        "move_time": {
            x: {"mean": round(t.mean, 6), "p95": round(t.p95, 6), "max": round(t.max, 6)}
            for x, t in result.move_times.items()
        },
    }


def _cell(w: int, d: int, lo: int) -> str:
    games = max(w + d + lo, 1)
    return f"{w}-{d}-{lo} {100 * (w + 0.5 * d) / games:.0f}%"


def format_report(result: ArenaResult) -> str:
    """The cross table, the ratings and the move times as plain text."""
    c = result.config
    order = by_rating(result)
    short = {x: str(i + 1) for i, x in enumerate(order)}
    name_w = max(len("agent"), *(len(x) for x in order)) + 2
    cells = {(x, y): _cell(*result.pair(x, y)) for x in order for y in order if x != y}
    cell_w = max(7, *(len(s) for s in cells.values())) + 2 if cells else 9
    lines = [
        f"{c.game} round robin: {len(c.labels)} agents, {c.games} games per pairing, "
        f"seed {c.seed}, openings of {c.opening_plies} random plies",
        "",
        "cross table (row agent's wins-draws-losses and score against the column agent)",
        f"{'#':>3} {'agent':<{name_w}}"
        + "".join(f"{'vs ' + short[y]:>{cell_w}}" for y in order)
        + f"{'total':>9}",
    ]
    for x in order:
        row = "".join(f"{cells.get((x, y), '-'):>{cell_w}}" for y in order)
        lines.append(f"{short[x]:>3} {x:<{name_w}}{row}{100 * result.total_score(x):>8.1f}%")
    lines += [
        "",
        "ratings (openskill Plackett-Luce; ordinal = mu - 3 sigma)",
        f"{'#':>3} {'agent':<{name_w}}{'ordinal':>9}{'mu':>8}{'sigma':>8}{'score':>8}",
    ]
    for x in order:
        r = result.ratings[x]
        lines.append(
            f"{short[x]:>3} {x:<{name_w}}{r.ordinal:>9.2f}{r.mu:>8.2f}{r.sigma:>8.2f}"
            f"{100 * result.total_score(x):>7.1f}%"
        )
    lines += [
        "",
        "move time (seconds)",
        f"{'#':>3} {'agent':<{name_w}}{'moves':>7}{'mean':>9}{'p95':>9}{'max':>9}",
    ]
    for x in order:
        t = result.move_times[x]
        lines.append(
            f"{short[x]:>3} {x:<{name_w}}{t.moves:>7}{t.mean:>9.4f}{t.p95:>9.4f}{t.max:>9.4f}"
        )
    return "\n".join(lines)


def plot(result: ArenaResult, path: str) -> None:
    """A PNG: the cross table as a heatmap of score % (cells annotated W-D-L) and the ratings."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    c = result.config
    order = by_rating(result)
    n = len(order)
    grid = np.full((n, n), np.nan)
    for i, x in enumerate(order):
        for j, y in enumerate(order):
            if x != y:
                w, d, lo = result.pair(x, y)
                grid[i, j] = 100 * (w + 0.5 * d) / max(w + d + lo, 1)

    side = max(4.0, 1.1 * n + 2.0)
    fig, (ax_table, ax_bars) = plt.subplots(
        1, 2, figsize=(2 * side + 2, side), gridspec_kw={"width_ratios": [1.15, 1]}
    )
    cmap = matplotlib.colormaps["RdYlGn"].with_extremes(bad="#dddddd")
    image = ax_table.imshow(np.ma.masked_invalid(grid), cmap=cmap, vmin=0, vmax=100)
    for i, x in enumerate(order):
        for j, y in enumerate(order):
            if x == y:
                continue
            w, d, lo = result.pair(x, y)
            ax_table.text(
                j,
                i,
                f"{w}-{d}-{lo}\n{grid[i, j]:.0f}%",
                ha="center",
                va="center",
                fontsize=9,
                color="white" if abs(grid[i, j] - 50) > 35 else "black",
            )
    ax_table.set_xticks(range(n), order, rotation=30, ha="right")
    ax_table.set_yticks(range(n), [f"{x}  ({100 * result.total_score(x):.0f}%)" for x in order])
    ax_table.set_xlabel("opponent")
    ax_table.set_title("score % of the row agent (W-D-L)")
    fig.colorbar(image, ax=ax_table, fraction=0.046, pad=0.04, label="score %")

    ords = [result.ratings[x].ordinal for x in order]
    mus = [result.ratings[x].mu for x in order]
    sigmas = [result.ratings[x].sigma for x in order]
    ys = list(range(n))
    ax_bars.barh(ys, ords, color="#4c72b0", alpha=0.8, label="ordinal (mu - 3 sigma)")
    ax_bars.errorbar(mus, ys, xerr=sigmas, fmt="o", color="black", capsize=4, label="mu ± sigma")
    ax_bars.set_yticks(ys, order)
    ax_bars.invert_yaxis()
    ax_bars.axvline(0, color="grey", linewidth=0.8)
    ax_bars.set_xlabel("rating")
    ax_bars.set_title("openskill ratings")
    ax_bars.legend(loc="lower right", fontsize=8)
    ax_bars.grid(axis="x", alpha=0.3)

    fig.suptitle(
        f"{c.game}: {c.games} games per pairing, seed {c.seed}, "
        f"{c.opening_plies}-ply random openings"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
