"""Learning agents in the lobby: memory to the worker, learning from every match, training.

A tiny fake learning agent (`counting` in tests/counting.py: it counts games per position) pins
the contract down without depending on the real agents; the real `trainer` has its own tests.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from db.store import Store
from engine.agents import registry
from engine.agents.base import AgentSpec, Budget, Decision
from lobby.core import Lobby, LobbyConfig, Person
from lobby.errors import LobbyError, TrainingRefused
from lobby.memory import LearningMemory
from lobby.pool import EnginePool
from lobby.training import BatchRequest, train_batch_in_worker
from tests.clock import Clock
from tests.counting import KIND, CountingLearner, pos_key, register_counting

#: These tests name their own learning agent by spec and let it learn (the bot does neither).
TEST_CONFIG = LobbyConfig(raw_specs=True, learn_any=True)
ALICE = Person("local", "alice", "Alice")
BOB = Person("local", "bob", "Bob")
pytestmark = pytest.mark.usefixtures("counting")


class Spy:
    """Records what the lobby sends to the pool and writes to the memory tables."""

    def __init__(self, lobby: Lobby) -> None:
        self.memories: list[Mapping[bytes, bytes] | None] = []
        self.decisions: list[Decision] = []
        self.puts: list[tuple[str, str, dict[bytes, bytes], int]] = []
        choose: Any = lobby.pool.choose
        apply = lobby.store.memory.apply

        async def spy_choose(*args: Any, memory: Any = None, **kw: Any) -> Decision:
            self.memories.append(None if memory is None else dict(memory))
            decision: Decision = await choose(*args, memory=memory, **kw)
            self.decisions.append(decision)
            return decision

        async def spy_apply(writes: Any, **kw: Any) -> bool:
            done: bool = await apply(writes, **kw)
            if done:
                self.puts += [(w.kind, w.name, dict(w.rows), w.games) for w in writes]
            return done

        lobby.pool.choose = spy_choose  # type: ignore[method-assign]
        lobby.store.memory.apply = spy_apply  # type: ignore[method-assign]


@pytest.fixture
async def lobby(tmp_path: Path, pool: EnginePool, clock: Clock) -> AsyncIterator[Lobby]:
    store = await Store.open(tmp_path / "learn.db", clock=clock)
    lob = Lobby(store, pool, LobbyConfig(seed=5, raw_specs=True, learn_any=True), clock=clock)
    yield lob
    await lob.close()
    await store.close()


async def play_out(lobby: Lobby, match_id: int, person: Person = ALICE) -> Any:
    """The person plays the rightmost legal column until the match ends."""
    snap = await lobby.advance(match_id)
    while snap.live:
        snap = await lobby.play(match_id, person, snap.state.legal_moves()[-1])
        snap = await lobby.advance(match_id)
    await lobby.learning.outbox.drain()
    return snap


async def test_a_match_against_a_learning_agent_is_learned_in_one_write(lobby: Lobby) -> None:
    spy = Spy(lobby)
    await lobby.store.memory.put(KIND, "default", [(b"prefer", b"3")])
    spy.puts.clear()
    snap = await lobby.start_pve(ALICE, "connect4", KIND, "bot")
    snap = await play_out(lobby, snap.id)
    assert snap.match.result is not None
    # the rows sent with each move are exactly those memory_keys asked for (if stored)
    agent = CountingLearner()
    states, _ = await lobby.learning.outbox.replay("connect4", snap.match.variant, snap.id)
    bot_states = [s for s in states if s.to_move() == 0]
    assert len(spy.memories) == len(bot_states)
    for sent, state in zip(spy.memories, bot_states, strict=True):
        assert sent is not None and set(sent) <= set(agent.memory_keys(state))
        assert sent[b"prefer"] == b"3"
    assert [d.move for d in spy.decisions][:2] == [3, 3]  # the memory reached the agent
    # one transaction at the end: every learned row and games_trained + 1
    [(kind, name, rows, delta)] = spy.puts
    assert (kind, name, delta) == (KIND, "default", 1)
    assert rows[b"games"] == b"1"
    assert rows[b"score"] == {"0": b"2", "draw": b"1", "1": b"0"}[snap.match.result]
    assert sum(k.startswith(b"seen:") for k in rows) == len(bot_states)
    info = await lobby.store.memory.info(KIND, "default")
    assert info is not None and info.games_trained == 1
    # a second game sees the first one's rows: positions met again are sent with their counts
    spy.memories.clear()
    snap = await lobby.start_pve(ALICE, "connect4", KIND, "bot")
    await play_out(lobby, snap.id)
    first = spy.memories[0]
    assert first is not None and first[pos_key(bot_states[0])] == b"1"
    assert (await lobby.store.memory.get_one(KIND, "default", b"games")) == b"2"


async def test_non_learning_agents_get_no_memory(lobby: Lobby) -> None:
    spy = Spy(lobby)
    snap = await lobby.start_pve(ALICE, "connect4", "random", "bot")
    await play_out(lobby, snap.id)
    assert spy.memories and all(m is None for m in spy.memories)
    assert spy.puts == [] and await lobby.store.memory.infos() == []


async def test_named_memories_are_separate(lobby: Lobby) -> None:
    snap = await lobby.start_pve(ALICE, "connect4", f"{KIND}:memory=other", "me")
    await lobby.resign(snap.id, ALICE)
    await lobby.learning.outbox.drain()
    assert [(m.name, m.games_trained) for m in await lobby.store.memory.infos(KIND)] == [
        ("other", 1)
    ]


async def test_resign_and_time_are_learned_abandon_and_stop_are_not(
    lobby: Lobby, clock: Clock
) -> None:
    spy = Spy(lobby)
    resigned = await lobby.start_pve(ALICE, "connect4", KIND, "me")
    resigned = await lobby.play(resigned.id, ALICE, 0)
    await lobby.advance(resigned.id)
    await lobby.resign(resigned.id, ALICE)
    await lobby.learning.outbox.drain()
    assert [p[3] for p in spy.puts] == [1]
    assert spy.puts[0][2][b"score"] == b"2"  # the agent won by resignation

    timed = await lobby.start_pve(ALICE, "connect4", KIND, "me")
    await lobby.play(timed.id, ALICE, 0)
    await lobby.advance(timed.id)
    never = await lobby.start_pve(BOB, "connect4", KIND, "me")  # bob never moves: abandoned
    clock.now += 601
    ended = {s.id: s.match for s in await lobby.expire_turns()}
    assert ended[timed.id].termination == "time" and ended[never.id].status == "abandoned"
    await lobby.learning.outbox.drain()
    assert [p[3] for p in spy.puts] == [1, 1]  # the loss on time only

    eve = await lobby.start_eve("connect4", KIND, "random", delay=30)  # one move, then a pause
    await lobby.stop(eve.id)
    await lobby.learning.outbox.drain()
    assert len(spy.puts) == 2
    info = await lobby.store.memory.info(KIND, "default")
    assert info is not None and info.games_trained == 2


async def test_bot_matches_learn_once_per_memory_even_in_self_play(lobby: Lobby) -> None:
    spy = Spy(lobby)
    snap = await lobby.start_eve("connect4", KIND, KIND, delay=0)
    snap = await lobby.run_botmatch(snap.id)
    await lobby.learning.outbox.drain()
    [(_, _, rows, delta)] = spy.puts
    assert delta == 1 and rows[b"games"] == b"2"  # both seats learned, one game counted
    assert rows[b"score"] == b"2"  # one win + one loss (or two draws)


async def test_a_crash_in_learn_is_logged_and_the_match_still_ends(
    lobby: Lobby, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="lobby.outbox"):
        snap = await lobby.start_pve(ALICE, "connect4", f"{KIND}:crash=true", "bot")
        snap = await play_out(lobby, snap.id)
    assert not snap.live and snap.match.status == "finished"
    assert lobby.learning.outbox.failures == 1
    assert any("learning failed" in r.getMessage() for r in caplog.records)
    assert await lobby.store.memory.infos(KIND) == []
    # and the lobby goes on: the next match plays and learns normally
    snap = await lobby.start_pve(ALICE, "connect4", KIND, "bot")
    await play_out(lobby, snap.id)
    assert (await lobby.store.memory.get_one(KIND, "default", b"games")) == b"1"


async def test_a_restarted_lobby_sees_the_learned_rows(
    tmp_path: Path, pool: EnginePool, clock: Clock
) -> None:
    db = tmp_path / "restart.db"
    store = await Store.open(db, clock=clock)
    lob = Lobby(store, pool, TEST_CONFIG, clock=clock)
    snap = await lob.start_pve(ALICE, "connect4", KIND, "bot")
    await play_out(lob, snap.id)
    first_pos = pos_key(
        (await lob.learning.outbox.replay("connect4", snap.match.variant, snap.id))[0][0]
    )
    await lob.close()
    await store.close()

    store = await Store.open(db, clock=clock)
    lob = Lobby(store, pool, TEST_CONFIG, clock=clock)
    try:
        spy = Spy(lob)
        assert await lob.learning.memory.rows(KIND, "default", [b"games", first_pos]) == {
            b"games": b"1",
            first_pos: b"1",
        }
        snap = await lob.start_pve(ALICE, "connect4", KIND, "bot")
        await play_out(lob, snap.id)
        assert spy.memories[0] == {first_pos: b"1"}
        assert (await store.memory.get_one(KIND, "default", first_pos)) == b"2"
    finally:
        await lob.close()
        await store.close()


async def test_big_memories_load_key_by_key(lobby: Lobby) -> None:
    hub = lobby.learning.memory
    hub.full_load_limit = 2
    await lobby.store.memory.put(KIND, "default", [(b"a", b"1"), (b"b", b"2"), (b"c", b"3")])
    calls: list[bytes] = []
    get_one = lobby.store.memory.get_one

    async def counting_get_one(kind: str, name: str, key: Any) -> bytes | None:
        calls.append(key)
        return await get_one(kind, name, key)

    lobby.store.memory.get_one = counting_get_one  # type: ignore[method-assign]
    assert await hub.rows(KIND, "default", [b"a", b"x"]) == {b"a": b"1"}
    assert await hub.rows(KIND, "default", [b"a", b"x", b"c"]) == {b"a": b"1", b"c": b"3"}
    assert calls == [b"a", b"x", b"c"]  # each key read once, absent keys remembered
    snap = await lobby.start_pve(ALICE, "connect4", KIND, "bot")
    await play_out(lobby, snap.id)
    assert (await hub.rows(KIND, "default", [b"games"])) == {b"games": b"1"}


async def test_another_writer_is_noticed(lobby: Lobby) -> None:
    hub = lobby.learning.memory
    hub.recheck_seconds = 0.0
    assert await hub.rows(KIND, "default", [b"k"]) == {}
    # e.g. `python -m tools train` writing the bot's database from another process
    await lobby.store.memory.put(KIND, "default", [(b"k", b"v")], games_trained_delta=5)
    assert await hub.rows(KIND, "default", [b"k"]) == {b"k": b"v"}


async def test_training_job_stores_batches_and_reports_progress(lobby: Lobby) -> None:
    spy = Spy(lobby)
    lobby.learning.training.batch_seconds = 0.01  # several small batches
    job = lobby.train("connect4", KIND, 40, seed=1)
    from lobby.errors import BadRequest

    with pytest.raises(BadRequest, match="already running"):  # one job at a time, in all
        lobby.train("connect4", f"{KIND}:memory=other", 10)
    with pytest.raises(BadRequest, match="does not learn"):
        lobby.train("connect4", "random", 10)
    with pytest.raises(BadRequest, match="between"):
        lobby.train("connect4", f"{KIND}:memory=x", 0)
    with pytest.raises(TrainingRefused, match="between 1 and") as refused:
        lobby.learning.training.start(lobby.pool, "connect4", AgentSpec(KIND), Budget(), 0)
    assert isinstance(refused.value, LobbyError)  # front ends show it as any lobby error
    progress = await job.wait()
    assert progress.finished and progress.error is None and progress.done == 40
    assert len(spy.puts) == progress.batches >= 2
    assert sum(p[3] for p in spy.puts) == 40
    info = await lobby.store.memory.info(KIND, "default")
    assert info is not None and info.games_trained == 40
    # self-play: both seats learned every game
    assert (await lobby.store.memory.get_one(KIND, "default", b"games")) == b"80"
    text = progress.text()
    assert "40/40 games" in text and "games/s" in text and "done" in text
    assert lobby.learning.training.jobs == {}  # the memory may train again
    job = lobby.train("connect4", KIND, 4, opponent="random", seed=2)
    progress = await job.wait()
    assert progress.done == 4 and progress.wins + progress.draws + progress.losses == 4
    assert (await lobby.store.memory.get_one(KIND, "default", b"games")) == b"84"


def test_training_batch_learns_after_every_game() -> None:
    register_counting()
    memory: dict[bytes, bytes] = {}
    req = BatchRequest(
        "connect4", AgentSpec(KIND), Budget(), (AgentSpec("random"), Budget()), 3, 7, 0
    )
    result = train_batch_in_worker(req, memory)
    assert result.games == 3 and len(result.scores) == 3
    assert result.rows[b"games"] == b"3" and memory[b"games"] == b"3"


async def test_memory_reaches_a_worker_process(tmp_path: Path, clock: Clock) -> None:
    pool = EnginePool(workers=1)
    await pool.start()
    store = await Store.open(tmp_path / "proc.db", clock=clock)
    lob = Lobby(store, pool, TEST_CONFIG, clock=clock)
    try:
        await pool.run(register_counting)  # the worker imports tests/counting.py: knows the agent
        await store.memory.put(KIND, "default", [(b"prefer", b"5")])
        snap = await lob.start_pve(ALICE, "connect4", KIND, "bot")
        snap = await lob.advance(snap.id)
        assert snap.last_move == 5  # chosen in the worker from the row the lobby sent
        await lob.resign(snap.id, ALICE)
        await lob.learning.outbox.drain()
        assert (await store.memory.get_one(KIND, "default", b"games")) == b"1"
        progress = await lob.train("connect4", KIND, 10, seed=4).wait()  # batches in the worker
        assert progress.error is None and progress.done == 10
        assert (await store.memory.get_one(KIND, "default", b"games")) == b"21"
    finally:
        await lob.close()
        await store.close()
        await pool.close()


async def test_the_real_trainer_learns_from_a_match_and_plays_from_its_memory(
    lobby: Lobby,
) -> None:
    pytest.importorskip("engine.agents.connect4.trainer")
    from engine.agents.connect4.trainer import TrainerAgent, position_key

    spy = Spy(lobby)
    snap = await lobby.start_pve(ALICE, "connect4", "trainer", "bot")
    snap = await play_out(lobby, snap.id)
    states, moves = await lobby.learning.outbox.replay("connect4", snap.match.variant, snap.id)
    mine = [s for s in states if s.to_move() == 0]
    for sent, state in zip(spy.memories, mine, strict=True):
        assert sent is not None and set(sent) <= {position_key(state)[0]}  # type: ignore[arg-type]
    [(kind, name, rows, delta)] = spy.puts
    assert (kind, name, delta) == ("trainer", "default", 1)
    assert set(rows) == {position_key(s)[0] for s in mine}  # type: ignore[arg-type]
    # the stored weights are what the agent computes from the same game
    expected = TrainerAgent().learn(
        states, moves, 0, {"0": 1.0, "1": 0.0}.get(snap.match.result or "", 0.5), {}
    )
    assert rows == expected
    # the next game starts from the same (empty) board: its learned row goes to the worker
    spy.memories.clear()
    snap = await lobby.start_pve(ALICE, "connect4", "trainer", "bot")
    await play_out(lobby, snap.id)
    empty = position_key(mine[0])[0]  # type: ignore[arg-type]
    assert spy.memories[0] == {empty: rows[empty]}
    info = await lobby.store.memory.info("trainer", "default")
    assert info is not None and info.games_trained == 2


async def test_the_real_trainer_trains_in_the_pool(lobby: Lobby) -> None:
    pytest.importorskip("engine.agents.connect4.trainer")
    job = lobby.train("connect4", "trainer:memory=t", 30, seed=3)
    progress = await job.wait()
    assert progress.error is None and progress.done == 30
    info = await lobby.store.memory.info("trainer", "t")
    assert info is not None and info.games_trained == 30 and info.rows > 30


async def test_console_train_and_agents(lobby: Lobby) -> None:
    import asyncio
    import io

    from console.run import run_console

    script = (
        f"/train game:connect4 agent:{KIND} games:20\n/wait\n/agents game:connect4\n"
        "/train game:connect4 agent:random games:5\n"
    )
    out = io.StringIO()
    assert await asyncio.wait_for(run_console(lobby, io.StringIO(script), out, user="you"), 30) == 0
    text = out.getvalue()
    assert "Traceback" not in text
    assert "Training counting (connect4, memory counting/default, self-play): training..." in text
    assert "20/20 games (100%)" in text and "): done" in text
    assert f"  {KIND}\n      test agent: counts games per position\n" in text
    assert "      Memory default: " in text and "20 games learned" in text
    assert "  minimax (levels medium, hard)\n" in text
    assert "error: random does not learn" in text


async def test_the_weight_grid_learns_once_per_game_and_a_fixed_grid_not_at_all(
    lobby: Lobby,
) -> None:
    wg = pytest.importorskip("engine.agents.othello.weightgrid")
    if not hasattr(wg, "grid_update"):
        pytest.skip("the learned weight grid is not there yet")
    spy = Spy(lobby)
    fixed = await lobby.start_eve("othello", "weightgrid:grid=default", "random", delay=0)
    await lobby.run_botmatch(fixed.id)
    await lobby.learning.outbox.drain()
    assert spy.puts == []  # grid=default keeps no memory: nothing to write
    learned = "weightgrid:memory=default"
    snap = await lobby.start_eve("othello", learned, learned, delay=0)
    snap = await lobby.run_botmatch(snap.id)
    await lobby.learning.outbox.drain()
    [(kind, name, rows, delta)] = spy.puts
    assert (kind, name, delta) == ("weightgrid", "default", 1)
    winner = None if snap.match.result == "draw" else int(snap.match.result or 0)
    expected = wg.grid_update(wg.zero_grid(), snap.state, winner)  # one update, not two
    assert rows == {b"grid": wg.encode_grid(expected)}
    # and the next match's agent gets the learned grid
    spy.memories.clear()
    snap = await lobby.start_pve(ALICE, "othello", learned, "bot")
    await lobby.advance(snap.id)
    assert spy.memories[0] == {b"grid": wg.encode_grid(expected)}


async def test_a_search_agent_is_not_built_in_the_bots_process_to_learn_it_does_not_learn(
    lobby: Lobby, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lobby asks whether the agent to move keeps a memory before each of its moves: a
    search (the experts' minimax) never does, and building one here loaded the Othello
    expert's weights in the bot's own process at a person's first move (a fifth of a second
    of its event loop)."""
    built: list[str] = []
    build = registry.build

    def spying(spec: AgentSpec, game: str) -> Any:
        built.append(spec.name)
        return build(spec, game)

    monkeypatch.setattr(registry, "build", spying)
    memory = LearningMemory(lobby.store)  # the lobby's kind: what `Turns` asks before a move
    for game in ("othello", "connect4"):
        for level in ("medium", "hard", "expert"):
            spec = registry.LEVELS[game][level].spec
            assert memory.agent(spec, game) is None
    assert "minimax" not in built and "expectiminimax" not in built
    assert memory.agent(AgentSpec("expectiminimax"), "othello") is None
    assert "expectiminimax" not in built
