"""Seed 001's learned weight grid: the update rule, memory codec, normalisation and rendering,
the training loop (one update per self-play game) and `match --db` persistence."""

from __future__ import annotations

import random
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from engine.agents import registry
from engine.agents.base import Budget
from engine.agents.connect4.trainer import TrainerAgent
from engine.agents.othello.weightgrid import (
    DEFAULT_GRID,
    GRID_KEY,
    HEAT,
    HEAT_LEGEND,
    WeightGridAgent,
    decode_grid,
    encode_grid,
    grid_update,
    heat_levels,
    normalised_grid,
    render_grid_text,
    weight_capture_move,
)
from engine.games.othello import OthelloState
from engine.learning import InMemoryBackend, MemorySession, learning_seats
from engine.play import play_game
from tools.gridpicture import render_grid_png
from tools.training import TrainConfig, train

ROOT = Path(__file__).resolve().parents[2]


def squares(names: str) -> int:
    bb = 0
    for name in names.split():
        bb |= 1 << ("abcdefgh".index(name[0]) + 8 * (int(name[1]) - 1))
    return bb


def sq(name: str) -> int:
    return "abcdefgh".index(name[0]) + 8 * (int(name[1]) - 1)


def finished_game(seed: int) -> tuple[list[OthelloState], list[int], OthelloState]:
    rng = random.Random(seed)
    state = OthelloState.new()
    states, moves = [], []
    while not state.is_over():
        move = rng.choice(state.legal_moves())
        states.append(state)
        moves.append(move)
        state = state.play(move)
    return states, moves, state


def test_update_rule_winner_plus_one_loser_minus_one_per_square() -> None:
    final = OthelloState(squares("a1 b1 c1 h8"), squares("d4 e5"), 0, 60)
    grid = decode_grid(None)
    won = grid_update(grid, final, 0).reshape(64)
    for name in ("a1", "b1", "c1", "h8"):
        assert won[sq(name)] == 1.0
    for name in ("d4", "e5"):
        assert won[sq(name)] == -1.0
    assert np.count_nonzero(won) == 6
    lost = grid_update(grid, final, 1).reshape(64)
    assert lost[sq("a1")] == -1.0 and lost[sq("d4")] == 1.0
    assert np.array_equal(grid_update(grid, final, None), grid)  # a draw changes nothing
    twice = grid_update(grid_update(grid, final, 0), final, 0).reshape(64)
    assert twice[sq("a1")] == 2.0 and twice[sq("e5")] == -2.0


def test_learn_applies_the_seed_update_from_the_final_position() -> None:
    states, moves, final = finished_game(4)
    winner = final.outcome().winner
    agent = WeightGridAgent(memory="default")
    assert agent.learned and agent.memory_kind == "weightgrid"
    assert agent.learn_keys(states, moves, 0) == [GRID_KEY]
    seat = 0
    result = 0.5 if winner is None else float(winner == seat)
    rows = agent.learn(states, moves, seat, result, {})
    grid = decode_grid(rows[GRID_KEY]).reshape(64)
    for s in range(64):
        if winner is None:
            assert grid[s] == 0
        elif (final.black, final.white)[winner] >> s & 1:
            assert grid[s] == 1
        elif (final.black, final.white)[1 - winner] >> s & 1:
            assert grid[s] == -1
        else:
            assert grid[s] == 0
    # The other seat reports the same game the other way round: the same update.
    other = agent.learn(states, moves, 1, 1.0 - result, {})
    assert other == rows
    # ... and it builds on the stored grid.
    again = agent.learn(states, moves, seat, result, rows)
    assert np.array_equal(decode_grid(again[GRID_KEY]), 2 * decode_grid(rows[GRID_KEY]))


def test_grid_codec_is_64_little_endian_doubles() -> None:
    grid = np.arange(64, dtype=np.float64).reshape(8, 8) - 20.5
    raw = encode_grid(grid)
    assert len(raw) == 512 and raw[:8] == np.float64(-20.5).astype("<f8").tobytes()
    assert np.array_equal(decode_grid(raw), grid)
    assert np.array_equal(decode_grid(None), np.zeros((8, 8)))
    with pytest.raises(ValueError):
        decode_grid(b"\0" * 8)


def test_grid_choice_default_fixed_learned_with_memory() -> None:
    fixed = WeightGridAgent()
    assert fixed.grid_name == "default" and not fixed.learned
    assert fixed.grid is DEFAULT_GRID
    assert fixed.memory_keys(OthelloState.new()) == [] and fixed.learn([], [], 0, 1.0, {}) == {}
    learned = WeightGridAgent(memory="experiment")
    assert learned.grid_name == "learned" and learned.memory_name == "experiment"
    assert WeightGridAgent(grid="learned").memory_name == "default"
    assert WeightGridAgent(grid="default", memory="x").grid is DEFAULT_GRID
    # Unseen memory: the zero grid (the seed's reset).
    learned.use_memory({})
    assert np.array_equal(learned.grid, np.zeros((8, 8)))
    grid = np.zeros((8, 8))
    grid[2, 3] = 5.0  # d3
    learned.use_memory({GRID_KEY: encode_grid(grid)})
    assert learned.grid[2, 3] == 5.0
    with pytest.raises(ValueError, match="grid"):
        WeightGridAgent(grid="learned:nothing")


def test_learned_grid_drives_the_capture_strategy() -> None:
    state = OthelloState.new().play(sq("d3"))  # white to move: c3, e3, c5 are legal
    legal = state.legal_moves()
    agent = WeightGridAgent(capture_share=1.0, memory="default")
    for target in legal:
        flipped = state.flips(target)
        grid = np.zeros(64)
        for s in range(64):
            if flipped >> s & 1:
                grid[s] = 10.0
        agent.use_memory({GRID_KEY: encode_grid(grid.reshape(8, 8))})
        decision = agent.choose(state, Budget(), random.Random(0))
        assert decision.info["strategy"] == "weight_capture"
        expected, _ = weight_capture_move(state, grid.reshape(8, 8))
        assert decision.move == expected
        assert state.flips(decision.move) & flipped


def test_normalised_grid() -> None:
    grid = np.zeros((8, 8))
    grid[0, 0], grid[7, 7], grid[3, 3] = 40.0, -80.0, 20.0
    norm = normalised_grid(grid)
    assert norm[7, 7] == -1.0 and norm[0, 0] == 0.5 and norm[3, 3] == 0.25
    assert float(np.abs(norm).max()) == 1.0
    assert np.array_equal(normalised_grid(np.zeros((8, 8))), np.zeros((8, 8)))


def test_render_grid_text_heat_map_by_quantile() -> None:
    grid = np.arange(64, dtype=np.float64).reshape(8, 8)  # a1 lowest ... h8 highest
    text = render_grid_text(grid)
    lines = text.split("\n")
    assert len(lines) == 8 and all(len(line) == 8 for line in lines)
    assert lines[0] == HEAT[4] * 8  # rank 8 on top: the highest fifth
    assert lines[-1] == HEAT[0] * 8  # rank 1: the lowest fifth
    levels = heat_levels(grid)
    assert sorted(np.bincount(levels.reshape(64)).tolist()) == [12, 13, 13, 13, 13]
    assert render_grid_text(np.zeros((8, 8))) == "\n".join([HEAT[2] * 8] * 8)


def test_render_grid_png(tmp_path: Path) -> None:
    path = tmp_path / "grid.png"
    render_grid_png(DEFAULT_GRID, str(path))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_learning_rule_runs_a_whole_game_update_once() -> None:
    grid, trainer = WeightGridAgent(memory="default"), TrainerAgent()
    assert grid.learn_whole_game and not trainer.learn_whole_game
    assert learning_seats(grid, (0, 1)) == [0] and learning_seats(trainer, (0, 1)) == [0, 1]
    assert learning_seats(grid, (1,)) == [1] and learning_seats(trainer, (1,)) == [1]


def test_what_the_agent_shows_of_its_memory() -> None:
    agent = WeightGridAgent()  # a fixed grid shows any stored grid of its kind all the same
    assert agent.shown_keys() == [GRID_KEY]
    assert agent.show_memory({}) == []
    grid = np.arange(64, dtype=np.float64).reshape(8, 8)
    assert agent.show_memory({GRID_KEY: encode_grid(grid)}) == [
        render_grid_text(grid),
        HEAT_LEGEND,
    ]
    assert agent.memory_format(OthelloState.new()) == "key b'grid': 64 x float64 (<f8), a1..h8"


def test_self_play_training_updates_once_per_game() -> None:
    backend = InMemoryBackend()
    config = TrainConfig(
        game="othello",
        agent="weightgrid",
        games=1,
        workers=1,
        eval_every=0,
        opening_plies=0,
        seed=9,
    )
    train(config, backend)
    assert backend.games[("weightgrid", "default")] == 1
    grid = decode_grid(backend.memories[("weightgrid", "default")][GRID_KEY])
    # One update: every occupied square moved by exactly 1 (never 2).
    assert set(np.unique(np.abs(grid)).tolist()) <= {0.0, 1.0}
    config = TrainConfig(game="othello", agent="weightgrid", games=20, workers=1, eval_every=0)
    result = train(config, backend)
    assert result.games_total == 21 and backend.games[("weightgrid", "default")] == 21
    grid = decode_grid(backend.memories[("weightgrid", "default")][GRID_KEY])
    assert float(np.abs(grid).max()) <= 21


def test_memory_session_against_a_fixed_opponent() -> None:
    backend = InMemoryBackend()
    session = MemorySession(backend)
    learner = WeightGridAgent(memory="default")
    spec, _ = registry.resolve("greedy-random", "othello")
    other = registry.build(spec, "othello")
    session.attach(learner)
    record = play_game(OthelloState.new(), (other, learner), (Budget(), Budget()), random.Random(2))
    session.after_game(OthelloState.new(), record.moves, (other, learner), record.outcome.winner)
    assert backend.games[("weightgrid", "default")] == 1
    assert GRID_KEY in backend.memories[("weightgrid", "default")]
    # The agent's next move uses the updated grid (it keeps a reference to the memory).
    learner.choose(OthelloState.new(), Budget(), random.Random(0))
    stored = decode_grid(backend.memories[("weightgrid", "default")][GRID_KEY])
    assert np.array_equal(learner.grid, stored) and float(np.abs(stored).max()) == 1.0


def test_match_with_db_persists_the_learned_grid(tmp_path: Path) -> None:
    db = str(tmp_path / "grid.db")
    cmd = [
        sys.executable, "-m", "tools", "match", "--game", "othello",
        "--agents", "weightgrid,greedy-random", "--games", "2", "--db", db,
    ]  # fmt: skip

    def stored() -> tuple[int, np.ndarray]:
        con = sqlite3.connect(db)
        try:
            games = con.execute(
                "SELECT games_trained FROM agent_memory_meta"
                " WHERE kind = 'weightgrid' AND name = 'default'"
            ).fetchone()[0]
            raw = con.execute(
                "SELECT value FROM agent_memory WHERE kind = 'weightgrid' AND key = ?",
                (GRID_KEY,),
            ).fetchone()[0]
        finally:
            con.close()
        return int(games), decode_grid(raw)

    first = subprocess.run([*cmd, "--seed", "1"], capture_output=True, text=True, cwd=ROOT)
    assert first.returncode == 0, first.stderr
    games, grid = stored()
    assert games == 2 and float(np.abs(grid).max()) <= 2
    second = subprocess.run([*cmd, "--seed", "5"], capture_output=True, text=True, cwd=ROOT)
    assert second.returncode == 0, second.stderr
    games2, grid2 = stored()
    assert games2 == 4 and float(np.abs(grid2).max()) <= 4
