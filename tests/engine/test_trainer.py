"""Seed 000's trainer: reinforcement arithmetic, mirror keys, exploration range, priors,
persistence through SQLite, the training loop, resuming a killed run, and `match --db`."""

from __future__ import annotations

import random
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from engine.agents import registry
from engine.agents.base import Budget
from engine.agents.connect4.trainer import (
    TrainerAgent,
    board_values,
    candidates,
    decode_weights,
    encode_weights,
    outcome_term,
    position_key,
)
from engine.games.connect4 import Connect4State
from engine.learning import InMemoryBackend, MemorySession, apply_learning
from tests.machine import scaled
from tools.train_cli import StoreBackend
from tools.training import TrainConfig, train

ROOT = Path(__file__).resolve().parents[2]


def c4(moves: str) -> Connect4State:
    return Connect4State.from_moves(moves)


def seed_board_value(state: Connect4State) -> int:
    """Seed 000's board value for the side to move, straight from the seed's description.

    For every chip: the stripes of 4 with offsets -3..0 in directions (1,1), (1,0), (0,1),
    (-1,1) through it, counted when all 4 cells are on the board and hold that chip or nothing;
    +1 per own stripe, -1 per opponent stripe (the won/lost terms are not needed here).
    """
    grid = state.board()[::-1]  # row 0 at the bottom
    me = 1 if state.to_move() == 0 else 2
    total = 0
    for r in range(state.rows):
        for c in range(state.cols):
            chip = int(grid[r, c])
            if not chip:
                continue
            for dc, dr in ((1, 1), (1, 0), (0, 1), (-1, 1)):
                for off in range(-3, 1):
                    cells = [(c + (off + i) * dc, r + (off + i) * dr) for i in range(4)]
                    if all(
                        0 <= cc < state.cols and 0 <= rr < state.rows and grid[rr, cc] in (0, chip)
                        for cc, rr in cells
                    ):
                        total += 1 if chip == me else -1
    return total


def value_after(state: Connect4State, col: int) -> int:
    """The seed's value of the board after `col`, for the player who dropped it."""
    after = state.play(col)
    if after.is_over() and after.outcome() is not None and after.outcome().winner is not None:
        return 10_000
    return -seed_board_value(after)  # `after` is seen from the opponent's side


# --- board values and keys -----------------------------------------------------------------------


def test_board_values_match_the_seeds_stripe_count() -> None:
    rng = random.Random(5)
    for _ in range(60):
        state = Connect4State.new()
        for _ in range(rng.randrange(0, 30)):
            nxt = state.play(rng.choice(state.legal_moves()))
            if nxt.is_over():
                break
            state = nxt
        values = board_values(state)
        for col in state.legal_moves():
            assert values[col] == value_after(state, col), (state.to_notation(), col)


def test_empty_board_values_by_hand() -> None:
    # A lone disc in column 1 has 3 open stripes (right, up, diagonal up); in the middle 7.
    assert board_values(c4("")) == [3, 4, 5, 7, 5, 4, 3]
    # The position after 1 2, X to move: see test_reinforcement_exact_weights.
    assert board_values(c4("12"))[0] == 3


def test_mirror_images_share_a_row_and_weights_flip() -> None:
    left, right = c4("121"), c4("767")
    kl, ml, sl = position_key(left)
    kr, mr, sr = position_key(right)
    assert kl == kr and ml != mr and not sl and not sr
    assert len(kl) == 10 and kl[:3] == bytes((7, 6, 4))
    agent = TrainerAgent(prior="zero")
    rows = agent.learn([left], [1], seat=1, result=1.0, rows={})  # column 2 on the left board
    assert list(rows) == [kl]
    w_left = agent.weights(left, rows)
    w_right = agent.weights(right, rows)
    assert w_left[1] == w_right[5] != 0
    assert w_left == w_right[::-1]
    # The bytes hold the canonical orientation: decoding with the other flag flips them.
    raw = rows[kl]
    assert decode_weights(raw, 7, True) == decode_weights(raw, 7, False)[::-1]
    assert encode_weights(w_left, ml) == raw


def test_symmetric_position_reinforces_both_mirror_columns() -> None:
    state = c4("44")
    _, mirrored, symmetric = position_key(state)
    assert symmetric and not mirrored
    agent = TrainerAgent(prior="zero")
    rows = agent.learn([state], [2], seat=0, result=0.0, rows={})
    w = agent.weights(state, rows)
    assert w[2] == w[4] != 0 and w[0] == w[1] == w[3] == w[5] == w[6] == 0


# --- reinforcement arithmetic --------------------------------------------------------------------


def test_outcome_terms() -> None:
    assert outcome_term(1.0, 0) == outcome_term(1.0, 1) == 10
    assert outcome_term(0.0, 0) == outcome_term(0.0, 1) == -10
    assert outcome_term(0.5, 0) == -1  # drew having placed the first disc
    assert outcome_term(0.5, 1) == 1


def test_reinforcement_exact_weights_after_a_known_short_game() -> None:
    # Player 0 stacks column 1 four times and wins; player 1 answers in column 2.
    moves = [0, 1, 0, 1, 0, 1, 0]
    states = [c4("1212121"[:i]) for i in range(len(moves))]
    assert states[-1].play(0).outcome().winner == 0
    f32 = np.float32
    # Board values after each move, counted by hand with the seed's rule (own stripes - the
    # opponent's). Ply 2, X plays a2 over a1 with O on b1: a1 keeps up and up-right (2), a2 has
    # right, up from a1, up from a2 and up-right (4); O's b1 has right, up, up-right (3): 6-3 = 3.
    v = [value_after(states[i], moves[i]) for i in (0, 2, 4, 6)]
    assert v == [3, 3, 2, 10_000]
    u = [value_after(states[i], moves[i]) for i in (1, 3, 5)]
    assert u == [1, 3, 6]
    assert [board_values(states[i])[moves[i]] for i in range(7)] == [3, 1, 3, 3, 2, 6, 10_000]

    zero = TrainerAgent(prior="zero")  # lr 1, value_scale 0.1, value_clip 100
    won = zero.learn(states, moves, seat=0, result=1.0, rows={})
    assert len(won) == 4
    # Each played column: +10 (won) + 0.1 * value (a won board is clipped to 100: +10).
    assert zero.weights(states[0], won) == [f32(10.3), 0, 0, 0, 0, 0, f32(10.3)]  # symmetric
    assert zero.weights(states[2], won) == [f32(10.3), 0, 0, 0, 0, 0, 0]
    assert zero.weights(states[4], won) == [f32(10.2), 0, 0, 0, 0, 0, 0]
    assert zero.weights(states[6], won) == [f32(20.0), 0, 0, 0, 0, 0, 0]
    lost = zero.learn(states, moves, seat=1, result=0.0, rows={})
    assert zero.weights(states[1], lost) == [0, f32(-9.9), 0, 0, 0, 0, 0]
    assert zero.weights(states[3], lost) == [0, f32(-9.7), 0, 0, 0, 0, 0]
    assert zero.weights(states[5], lost) == [0, f32(-9.4), 0, 0, 0, 0, 0]

    # prior="value": unseen rows start from 0.1 * value after each column, then the same update.
    valued = TrainerAgent()
    won = valued.learn(states, moves, seat=0, result=1.0, rows={})
    prior = [0.1 * x for x in board_values(states[0])]  # 0.3 0.4 0.5 0.7 0.5 0.4 0.3
    expect = [f32(p) for p in prior]
    expect[0] = expect[6] = f32(0.3 + 10.3)
    assert valued.weights(states[0], won) == expect
    # A second game adds on top of the stored (float32) weights; a draw as first player: -1.
    again = valued.learn(states[:1], moves[:1], seat=0, result=0.5, rows=won)
    assert valued.weights(states[0], again)[0] == f32(f32(10.6) + (-1 + 0.3))


def test_learn_keys_are_the_seats_own_positions() -> None:
    states = [c4("1212"[:i]) for i in range(4)]
    agent = TrainerAgent()
    assert agent.learn_keys(states, [0, 1, 0, 1], 0) == [
        position_key(states[0])[0],
        position_key(states[2])[0],
    ]
    assert len(agent.learn_keys(states, [0, 1, 0, 1], 1)) == 2


# --- choosing ------------------------------------------------------------------------------------


def test_exploration_range_candidates_are_exactly_those_within_range() -> None:
    w = [5.0, 9.0, 7.0, 7.5, 100.0, 6.9, 9.0]
    legal = [0, 1, 2, 3, 5, 6]  # column 5 (100.0) is full: its weight must not count
    assert candidates(w, legal, 0.0) == [1, 6]
    assert candidates(w, legal, 1.5) == [1, 3, 6]
    assert candidates(w, legal, 2.0) == [1, 2, 3, 6]  # 7.0 >= 9 - 2 exactly
    assert candidates(w, legal, 2.1) == [1, 2, 3, 5, 6]
    assert candidates(w, legal, 100.0) == legal


def test_choose_draws_uniformly_among_the_candidates() -> None:
    # Column 4 is full; weights set so that columns 1, 2 and 6 are within 2.0 of the best.
    state = c4("555555")
    agent = TrainerAgent(exploration=2.0, prior="zero")
    key, mirrored, _ = position_key(state)
    w = [-5.0, 3.0, 1.0, -1.0, 50.0, 0.0, 2.5]
    agent.use_memory({key: encode_weights(w, mirrored)})
    rng = random.Random(3)
    picks = [agent.choose(state, Budget(), rng).move for _ in range(600)]
    assert set(picks) == {1, 2, 6}
    assert all(150 < picks.count(c) < 250 for c in (1, 2, 6))
    greedy = TrainerAgent(exploration=0.0, prior="zero")
    greedy.use_memory({key: encode_weights(w, mirrored)})
    assert {greedy.choose(state, Budget(), random.Random(i)).move for i in range(20)} == {1}


def test_prior_zero_plays_at_random_prior_value_plays_the_board_value() -> None:
    state = c4("1122")  # player 0 to move; column 3 would make three in a row
    zero = TrainerAgent(prior="zero", exploration=0.0)
    moves = {zero.choose(state, Budget(), random.Random(i)).move for i in range(200)}
    assert moves == set(state.legal_moves())
    valued = TrainerAgent(exploration=0.0)
    w = valued.weights(state)
    assert w == [0.1 * v for v in board_values(state)]
    best = {c for c in range(7) if w[c] == max(w)}  # ties: a random one of them
    assert {valued.choose(state, Budget(), random.Random(i)).move for i in range(50)} == best
    # A winning move gets the clipped won-board value: 0.1 * 100 = 10.
    win = c4("121212")
    assert TrainerAgent().weights(win)[0] == pytest.approx(10.0)
    assert TrainerAgent(exploration=0.0).choose(win, Budget(), random.Random(0)).move == 0


def test_registry_builds_the_trainer_and_it_pickles() -> None:
    import pickle

    spec, _ = registry.resolve("trainer:exploration=0.5:prior=zero", "connect4")
    agent = registry.build(spec, "connect4")
    assert isinstance(agent, TrainerAgent) and agent.exploration == 0.5 and agent.prior == "zero"
    assert agent.memory_kind == "trainer" and agent.memory_name == "default"
    assert pickle.loads(pickle.dumps(agent)).exploration == 0.5
    with pytest.raises(ValueError, match="prior"):
        TrainerAgent(prior="ones")
    with pytest.raises(ValueError):
        registry.resolve("trainer", "othello")


# --- persistence and the training loop ----------------------------------------------------------


def test_training_loop_learns_in_process_and_checkpoints() -> None:
    backend = InMemoryBackend()
    config = TrainConfig(
        game="connect4", agent="trainer", games=300, workers=1, checkpoint=100, eval_every=0
    )
    result = train(config, backend)
    assert result.games_run == 300 and result.games_total == 300
    assert backend.games[("trainer", "default")] == 300
    assert backend.saves == 3
    rows = backend.memories[("trainer", "default")]
    assert len(rows) == result.rows > 300
    assert all(len(v) == 28 for v in rows.values())
    assert backend.meta[("trainer", "default")]["format"] == (
        "key: canonical position (mirror-merged); value: 7 x float32 (<f4) weights"
    )
    # A second run continues counting and evaluates on the way.
    config = TrainConfig(
        game="connect4",
        agent="trainer",
        games=100,
        workers=1,
        checkpoint=1000,
        eval_every=50,
        eval_games=4,
    )
    result = train(config, backend)
    assert backend.games[("trainer", "default")] == 400
    assert [r["games"] for r in result.evals] == [350, 400]
    assert set(result.evals[0]) >= {"random_score", "onestep_score", "untrained-self_score"}


def test_training_with_worker_processes_matches_the_contract() -> None:
    backend = InMemoryBackend()
    config = TrainConfig(
        game="connect4",
        agent="trainer",
        games=200,
        workers=2,
        checkpoint=1000,
        eval_every=0,
        round_games=25,
        opponents=("self", "random"),
    )
    result = train(config, backend)
    assert result.games_run == 200 and backend.games[("trainer", "default")] == 200
    rows = backend.memories[("trainer", "default")]
    # Every stored row decodes, and re-learning nothing changes nothing.
    for key, raw in list(rows.items())[:50]:
        assert len(key) == 10 and len(decode_weights(raw, 7, False)) == 7


def test_memory_round_trip_through_a_real_sqlite_file(tmp_path: Path) -> None:
    db = str(tmp_path / "bot.db")
    agent = TrainerAgent()
    memory: dict[bytes, bytes] = {}
    rng = random.Random(11)
    from engine.play import play_game

    for _ in range(5):
        agent.use_memory(memory)
        record = play_game(c4(""), (agent, agent), (Budget(), Budget()), rng)
        states = [c4(record.moves[:i]) for i in range(len(record.moves))]
        winner = record.outcome.winner
        apply_learning(agent, memory, states, record.moves, winner, [0, 1])
    store = StoreBackend(db)
    try:
        store.save("trainer", "default", memory, 5, {"note": "test"})
    finally:
        store.close()
    store = StoreBackend(db)
    try:
        rows, games = store.load("trainer", "default")
    finally:
        store.close()
    assert rows == memory and games == 5
    fresh = TrainerAgent(exploration=0.0)
    fresh.use_memory(rows)
    agent.exploration = 0.0
    for moves in ("", "4", "44", "1234"):
        s = c4(moves)
        assert fresh.weights(s) == agent.weights(s)
        assert (
            fresh.choose(s, Budget(), random.Random(1)).move
            == agent.choose(s, Budget(), random.Random(1)).move
        )


def test_memory_session_learns_each_seat_once(tmp_path: Path) -> None:
    backend = InMemoryBackend()
    session = MemorySession(backend)
    a = TrainerAgent(prior="zero")
    session.attach(a)
    moves = [0, 1, 0, 1, 0, 1, 0]
    written = session.after_game(c4(""), moves, (a, a), 0)
    assert written == {("trainer", "default"): 7}
    assert backend.games[("trainer", "default")] == 1
    assert a.weights(c4("")) == [np.float32(10.3), 0, 0, 0, 0, 0, np.float32(10.3)]


# --- the command line ----------------------------------------------------------------------------


def engine(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tools", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )


def memory_state(db: str, kind: str = "trainer") -> tuple[int, int]:
    """(games_trained, rows) read straight from the SQLite file."""
    con = sqlite3.connect(db)
    try:
        meta = con.execute(
            "SELECT games_trained FROM agent_memory_meta WHERE kind = ? AND name = 'default'",
            (kind,),
        ).fetchall()
        rows = con.execute(
            "SELECT COUNT(*) FROM agent_memory WHERE kind = ? AND name = 'default'", (kind,)
        ).fetchone()[0]
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        con.close()
    return (int(meta[0][0]) if meta else 0), int(rows)


def test_train_resumes_after_sigkill_losing_at_most_one_batch(tmp_path: Path) -> None:
    db = str(tmp_path / "train.db")
    args = [
        sys.executable, "-m", "tools", "train", "--game", "connect4", "--agent", "trainer",
        "--games", "1000000", "--db", db, "--checkpoint", "400", "--eval-every", "0",
        "--workers", "2", "--round-games", "50", "--progress",
    ]  # fmt: skip
    err = tmp_path / "stderr.txt"
    with open(err, "w") as stderr:
        proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=stderr)
        try:
            deadline = time.monotonic() + scaled(90)
            while time.monotonic() < deadline:
                time.sleep(0.3)
                if Path(db).exists():
                    try:
                        if memory_state(db)[0] >= 1200:
                            break
                    except sqlite3.OperationalError:
                        pass
            time.sleep(0.4)  # kill somewhere between checkpoints
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=scaled(10))
        finally:
            if proc.poll() is None:
                proc.kill()
    played = [int(n) for n in re.findall(r"\] (\d+)/1000000", err.read_text())]
    games, rows = memory_state(db)
    assert games >= 1200 and games % 400 == 0 and rows > 0
    assert played and max(played) - games <= 400 + 100  # at most one checkpoint batch lost
    # The next run continues counting from what was stored.
    done = engine(
        "train", "--game", "connect4", "--agent", "trainer", "--games", "300", "--db", db,
        "--checkpoint", "400", "--eval-every", "0", "--workers", "1",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert memory_state(db)[0] == games + 300
    assert memory_state(db)[1] >= rows
    # --total: train up to a total, here nothing left to do.
    done = engine(
        "train", "--game", "connect4", "--agent", "trainer", "--games", str(games + 300),
        "--total", "--db", db, "--eval-every", "0", "--workers", "1",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert memory_state(db)[0] == games + 300


def test_match_with_db_keeps_learning_across_invocations(tmp_path: Path) -> None:
    db = str(tmp_path / "match.db")
    cmd = ["match", "--game", "connect4", "--agents", "trainer,random", "--games", "4"]
    first = engine(*cmd, "--db", db, "--seed", "1")
    assert first.returncode == 0, first.stderr
    games, rows = memory_state(db)
    assert games == 4 and rows > 0
    second = engine(*cmd, "--db", db, "--seed", "2")
    assert second.returncode == 0, second.stderr
    games2, rows2 = memory_state(db)
    assert games2 == 8 and rows2 > rows
    # A named memory is separate; serve plays from the stored one without writing.
    named = engine(*cmd, "--db", db, "--memory", "experiment", "--seed", "3")
    assert named.returncode == 0, named.stderr
    assert memory_state(db) == (8, rows2)
    served = subprocess.run(
        [sys.executable, "-m", "tools", "serve", "--game", "connect4", "--agent", "trainer",
         "--db", db, "--seed", "1"],
        input="\n44\n", capture_output=True, text=True, timeout=scaled(60), cwd=ROOT,
    )  # fmt: skip
    assert served.returncode == 0, served.stderr
    assert len(served.stdout.split()) == 2
    assert memory_state(db) == (8, rows2)
