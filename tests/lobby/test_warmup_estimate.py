"""The warm-up's estimate on this machine: a step compiled here before (an update changed its
code since) is expected to take what it took then, at the load of then; the reference
machine's figures (`engine.warm.COSTS`) scaled by how much slower this machine was for the
steps it did not record (docs/architecture.md, "The engine pool", "Progress")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import lobby.warmup
from engine import warm


@pytest.fixture
def record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "seconds"
    monkeypatch.setattr(warm, "RECORD", folder)
    monkeypatch.setattr(warm.WarmStep, "cached", lambda self: False)  # a cold start
    monkeypatch.setattr(warm, "load_per_core", lambda: 1.0)
    return folder


def test_without_a_record_the_reference_figures_count(record: Path) -> None:
    plan, costs, cached = lobby.warmup.read_plan()
    assert not cached
    assert costs == {s.key: s.cost() for s in plan}
    assert all(s.cost() == max(warm.LOAD_COST, warm.COSTS[s.key]) for s in plan if s.kernels())
    assert all(s.cost() == warm.COSTS[s.key] < warm.LOAD_COST for s in plan if not s.kernels())
    assert lobby.warmup.first_guess() == 1.0


def test_a_step_compiled_here_before_costs_what_it_took_then(
    record: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expert, c4 = "othello-expert", "connect4-expert"
    warm.record_seconds(expert, 2 * warm.COSTS[expert], warm.KERNELS[expert])  # twice as slow
    monkeypatch.setattr(warm, "load_per_core", lambda: 4.0)
    warm.record_seconds(c4, 4 * warm.COSTS[c4], warm.KERNELS[c4])  # at a load of 4 (sqrt: 2)
    assert json.loads((record / f"{c4}.json").read_text())["load"] == 4.0
    monkeypatch.setattr(warm, "load_per_core", lambda: 1.0)
    costs = lobby.warmup.read_plan()[1]
    guess = lobby.warmup.first_guess()
    assert guess == pytest.approx(2.0)
    assert costs[expert] * guess == pytest.approx(2 * warm.COSTS[expert])  # what it took
    assert costs[c4] * guess == pytest.approx(2 * warm.COSTS[c4])  # at a load of 1 now
    other = "connect4-medium"  # never recorded: the reference's, twice as slow here
    assert costs[other] * guess == pytest.approx(2 * warm.COSTS[other])
    monkeypatch.setattr(warm, "load_per_core", lambda: 9.0)  # busier now: sqrt(9) = 3
    assert lobby.warmup.first_guess() == pytest.approx(6.0)


def test_a_warm_up_step_that_compiled_its_kernels_records_its_seconds(
    record: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    step = next(s for s in warm.warm_plan() if s.key == "connect4-easy")
    warm.warm_step(step)  # what this process had still to compile or load
    for file in record.glob("*.json"):
        file.unlink()
    counts = iter([40, 42])  # numba's count of kernels compiled, before and after the step
    monkeypatch.setattr(warm, "compiled_kernels", lambda: next(counts))
    monkeypatch.setitem(warm.KERNELS, step.key, 2)  # as many as it compiled
    warm.warm_step(step)
    [file] = record.glob("*.json")
    data = json.loads(file.read_text())
    assert data["key"] == "connect4-easy" and data["seconds"] > 0 and data["load"] == 1.0
    assert data["kernels"] == 2
    assert warm.recorded_seconds() == {"connect4-easy": data["seconds"]}


def test_a_step_that_compiles_no_kernel_is_no_record(
    record: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step whose agent shares every kernel of another takes milliseconds: counted against
    the reference's figures (at least `LOAD_COST` a step), a dozen of them made this machine
    look twice as fast as it is, and the next warm-up's estimate 40% short."""
    step = next(s for s in warm.warm_plan() if s.key == "othello-easy")
    monkeypatch.setitem(warm.KERNELS, step.key, 0)
    warm.warm_step(step)
    assert not list(record.glob("*.json"))
    for key in ("othello-easy", "othello-medium", "othello-greedy-first", "connect4-random"):
        monkeypatch.setitem(warm.KERNELS, key, 0)
        warm.record_seconds(key, 0.002, 0)  # (a record an older version wrote)
    mcts = "connect4-mcts"
    warm.record_seconds(mcts, 1.5 * warm.COSTS[mcts], warm.KERNELS[mcts])
    assert warm.recorded_seconds().keys() == {mcts}
    assert warm.machine_factor(warm.recorded_seconds()) == pytest.approx(1.5)
    assert lobby.warmup.first_guess() == pytest.approx(1.5)


def test_a_step_that_compiled_another_count_of_kernels_is_no_record(
    record: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only loads after an update that changed an agent's file but not its kernels, a part of
    them, or its family's too (asked for first): its seconds do not compare with the
    reference's, and made the estimates of the next compile five times too short."""
    step = next(s for s in warm.warm_plan() if s.key == "connect4-easy")
    warm.warm_step(step)  # what this process had still to compile or load
    for file in record.glob("*.json"):
        file.unlink()
    monkeypatch.setitem(warm.KERNELS, step.key, 3)  # as if it had 3 to compile: it has none
    warm.warm_step(step)
    assert not list(record.glob("*.json"))
    warm.record_seconds(step.key, 9.0, 2)  # a record of another count (an older table)
    assert warm.recorded_seconds() == {}
    warm.record_seconds(step.key, 9.0, 3)
    assert warm.recorded_seconds() == {step.key: 9.0}
