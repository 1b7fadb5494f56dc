"""The supervised engine pool: caps, crashes, shutdown, parent death, SIGINT, fault injection.

Most tests share one started pool of two unwarmed workers (a worker then starts in ~0.1 s);
the job functions are module level, so the workers import them from `tests.lobby.test_pool`.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import cast
from unittest import mock

import pytest
import pytest_asyncio

import faults
import lobby.jobs
import lobby.pool
from engine.agents.base import AgentSpec, Budget, Decision
from engine.games.connect4 import Connect4State
from lobby.joberrors import JobTimeout, PoolClosed, WorkerCrashed
from lobby.pool import EnginePool
from lobby.workers import Job, JobTiming
from tests.machine import scaled
from tests.procs import children_of, gone

pytestmark = pytest.mark.asyncio(loop_scope="module")

ROOT = Path(__file__).resolve().parents[2]


# --- jobs (run in the workers) ---


def pid_of() -> int:
    return os.getpid()


def sleeper(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


def exit_now(status: int) -> None:
    os._exit(status)


def fail_with(text: str) -> None:
    raise ValueError(text)


class Stubborn(Exception):
    """Pickles, but cannot be rebuilt from its args."""

    def __init__(self, a: str, b: str) -> None:
        super().__init__(f"{a}/{b}")


def fail_stubbornly() -> None:
    raise Stubborn("a", "b")


# --- helpers ---


async def until(check: object, within: float) -> float:
    """Seconds until `check()` holds; fails past `within` (on the reference machine: scaled)."""
    t0 = time.monotonic()
    while not check():  # type: ignore[operator]
        assert time.monotonic() - t0 < scaled(within), "timed out"
        await asyncio.sleep(0.02)
    return time.monotonic() - t0


def python(script: str, **kwargs: object) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen(  # type: ignore[call-overload, no-any-return]
        [sys.executable, "-c", script], cwd=ROOT, env=env, text=True, **kwargs
    )


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared() -> AsyncIterator[EnginePool]:
    pool = EnginePool(workers=2, warm=False, ceiling=10.0)
    await pool.start()
    yield pool
    await pool.close()


async def both_idle(pool: EnginePool) -> None:
    await until(lambda: pool.idle == 2, within=5.0)


# --- tests ---


async def test_a_worker_that_cannot_start_is_retried_with_backoff_then_start_gives_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(lobby.pool, "_COMMAND", [sys.executable, "-c", "raise SystemExit(1)"])
    pool = EnginePool(workers=1, warm=False)
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="fail to start"):
        await pool.start()
    # three attempts, 0.5 s then 1 s apart: no spinning
    assert pool.start_failures == 3 and 1.4 < time.monotonic() - t0 < scaled(4.0)
    with pytest.raises(PoolClosed):
        await pool.run(pid_of)


async def test_caps_come_from_the_budget_and_never_pass_the_ceiling() -> None:
    pool = EnginePool(workers=0, ceiling=30.0, untimed=3.0)
    assert pool.cap_for(Budget(time=2.0)) == 4.0
    assert pool.cap_for(Budget(time=100.0)) == 30.0
    assert pool.cap_for(Budget(nodes=10)) == 3.0  # no time: a quick agent, a short cap
    for bad in (float("nan"), float("inf"), 0.0, -1.0):  # Budget refuses them: a stand-in
        assert pool.cap_for(cast(Budget, SimpleNamespace(time=bad))) == 3.0
    assert EnginePool(workers=0, ceiling=2.0).cap_for(Budget()) == 2.0


async def test_a_hanging_job_is_killed_at_its_cap_and_the_others_go_on(
    shared: EnginePool,
) -> None:
    await both_idle(shared)
    before, timeouts = set(shared.pids), shared.timeouts
    t0 = time.monotonic()
    hang = asyncio.ensure_future(shared.run(sleeper, 60, cap=0.5))
    # urgent: a background job leaves the other worker to people's jobs
    innocent = asyncio.ensure_future(shared.run(sleeper, 1.0, urgent=True))
    with pytest.raises(JobTimeout):
        await hang
    assert time.monotonic() - t0 < scaled(0.5 + 1.0)
    survivor = await innocent
    (killed,) = before - {survivor}
    await until(lambda: gone(killed), within=1.0)
    assert shared.timeouts == timeouts + 1
    assert await shared.run(pid_of) in shared.pids  # and the pool serves new jobs
    await both_idle(shared)  # a replacement started
    assert killed not in shared.pids and survivor in shared.pids


async def test_a_crashing_job_fails_alone(shared: EnginePool) -> None:
    await both_idle(shared)
    crashes = shared.crashes
    crash = asyncio.ensure_future(shared.run(exit_now, 3))
    innocent = asyncio.ensure_future(shared.run(sleeper, 0.5))
    with pytest.raises(WorkerCrashed):
        await crash
    assert await innocent > 0
    # a job that crashes its worker every time, three times, among innocent jobs
    jobs = [shared.run(exit_now, 9) if i % 2 else shared.run(sleeper, 0.2) for i in range(6)]
    results = await asyncio.gather(*jobs, return_exceptions=True)
    assert all(isinstance(r, WorkerCrashed) for r in results[1::2])
    assert all(isinstance(r, int) for r in results[0::2])
    assert shared.crashes == crashes + 4


async def test_an_exception_of_the_job_reaches_the_caller_as_itself(shared: EnginePool) -> None:
    await both_idle(shared)
    pids, crashes = sorted(shared.pids), shared.crashes
    with pytest.raises(ValueError, match="bad budget") as caught:
        await shared.run(fail_with, "bad budget")
    assert any("fail_with" in note for note in getattr(caught.value, "__notes__", []))
    with pytest.raises(RuntimeError, match="Stubborn: a/b"):  # cannot be rebuilt: its text
        await shared.run(fail_stubbornly)
    with pytest.raises(Exception, match="pickle"):  # a job that cannot even be sent
        await shared.run(lambda: 1)
    assert sorted(shared.pids) == pids and shared.crashes == crashes
    assert shared.idle == 2


async def test_the_fault_hook_crashes_or_hangs_the_nth_job(shared: EnginePool) -> None:
    await both_idle(shared)
    try:
        faults.reset("crash:job:2")
        assert await shared.run(pid_of) > 0
        with pytest.raises(WorkerCrashed):
            await shared.run(pid_of)
        assert await shared.run(pid_of) > 0
        faults.reset("hang:job:1")
        t0 = time.monotonic()
        with pytest.raises(JobTimeout):
            await shared.run(pid_of, cap=0.3)
        assert time.monotonic() - t0 < scaled(0.3 + 1.0)
    finally:
        faults.reset()


async def test_close_fails_queued_jobs_kills_running_ones_and_reaps_every_worker() -> None:
    pool = EnginePool(workers=2, warm=False)
    await pool.start()
    pids = pool.pids
    running = [asyncio.ensure_future(pool.run(sleeper, 60, urgent=True)) for _ in range(2)]
    queued = [asyncio.ensure_future(pool.run(pid_of)) for _ in range(2)]
    await until(lambda: pool.idle == 0, within=2.0)
    t0 = time.monotonic()
    await pool.close(timeout=1.0)
    assert time.monotonic() - t0 < scaled(1.0 + 1.0)
    for job in running + queued:
        with pytest.raises(PoolClosed):
            await job
    for pid in pids:
        with pytest.raises(ProcessLookupError):  # dead and reaped: no zombie
            os.kill(pid, 0)
    with pytest.raises(PoolClosed):
        await pool.run(pid_of)
    await pool.close()  # idempotent


async def test_idle_workers_exit_at_close_without_being_killed() -> None:
    pool = EnginePool(workers=2, warm=False)
    await pool.start()
    workers = list(pool._live)
    t0 = time.monotonic()
    await pool.close(timeout=scaled(2.0))
    assert time.monotonic() - t0 < scaled(1.0)
    assert [w.exited.result() for w in workers] == [0, 0]


async def test_workers_die_with_their_parent_killed_by_sigkill() -> None:
    script = """if True:
        import asyncio, time
        from lobby.pool import EnginePool
        async def main():
            pool = EnginePool(workers=2, warm=False)
            await pool.start()
            job = asyncio.ensure_future(pool.run(time.sleep, 60))
            await asyncio.sleep(0.2)
            print(*pool.pids, flush=True)
            await job
        asyncio.run(main())
    """
    parent = python(script, stdout=subprocess.PIPE)
    try:
        assert parent.stdout is not None
        pids = [int(p) for p in parent.stdout.readline().split()]
        assert len(pids) == 2
        family = set(pids) | set(children_of(parent.pid))  # a resource tracker would be here
    finally:
        parent.kill()
        parent.wait()
    seconds = await until(lambda: all(gone(pid) for pid in family), within=3.0)
    print(f"workers gone {seconds:.2f} s after kill -9 of their parent")


async def test_sigint_reaches_no_worker_and_prints_no_traceback() -> None:
    # The parent handles Ctrl-C as bot.py does (the loop's own handler, which wakes the loop
    # through its wakeup fd): with asyncio.run's default handling a SIGINT that the kernel
    # hands to a native thread (numpy's, say) leaves the loop asleep in select.
    script = """if True:
        import asyncio, signal, time
        from lobby.pool import EnginePool
        async def main():
            stop = asyncio.Event()
            asyncio.get_running_loop().add_signal_handler(signal.SIGINT, stop.set)
            pool = EnginePool(workers=2, warm=False)
            await pool.start()
            try:
                job = asyncio.ensure_future(pool.run(time.sleep, 1.0))
                print(*pool.pids, flush=True)
                await job
                print("done", flush=True)
                await asyncio.wait_for(stop.wait(), 60)
                print("interrupted", flush=True)
            finally:
                await pool.close()
        asyncio.run(main())
    """
    parent = python(script, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        assert parent.stdout is not None
        pids = [int(p) for p in parent.stdout.readline().split()]
        for pid in pids:  # a worker that would take SIGINT dies or prints a traceback
            os.kill(pid, signal.SIGINT)
        assert parent.stdout.readline() == "done\n"  # the job in a SIGINTed worker finished
        os.killpg(parent.pid, signal.SIGINT)  # Ctrl-C in the parent's terminal
        out, err = parent.communicate(timeout=scaled(10))
    finally:
        parent.kill()
        parent.wait()
    assert out == "interrupted\n" and parent.returncode == 0
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert all(gone(pid) for pid in pids)


async def test_without_workers_jobs_run_in_a_thread_with_the_same_caps() -> None:
    pool = EnginePool(workers=0, warm=False)
    await pool.start()
    try:
        assert await pool.run(pid_of) == os.getpid()
        t0 = time.monotonic()
        with pytest.raises(JobTimeout):  # the thread cannot be killed: it runs on, unseen
            await pool.run(sleeper, 1.0, cap=0.2)
        assert time.monotonic() - t0 < scaled(0.2 + 0.5)
        assert await pool.run(pid_of) == os.getpid()  # the next job does not wait for it
    finally:
        await pool.close()
    with pytest.raises(PoolClosed):
        await pool.run(pid_of)


async def test_a_warmed_worker_answers_a_real_agent_and_is_replaced_when_it_dies() -> None:
    t0 = time.monotonic()
    pool = EnginePool(workers=1)
    await pool.start()
    print(f"one warmed worker started in {time.monotonic() - t0:.2f} s")
    try:
        (pid,) = pool.pids
        # a fresh interpreter (fork+exec), never a bare fork of the bot
        assert b"lobby.worker" in Path(f"/proc/{pid}/cmdline").read_bytes()
        state = Connect4State.from_moves("444")
        decision = await pool.choose(state, AgentSpec("onestep"), Budget(time=1.0))
        assert decision.move in state.legal_moves()
        with pytest.raises(WorkerCrashed):
            await pool.run(exit_now, 3)
        decision = await pool.choose(state, AgentSpec("random"), Budget())
        assert decision.move in state.legal_moves()
        assert pool.workers_started == 2 and pool.crashes == 1 and pool.jobs_run == 2
        assert pool.pids != [pid]
    finally:
        await pool.close()


def stamp(tag: str) -> tuple[str, float]:
    return tag, time.monotonic()


async def test_a_job_a_person_waits_for_goes_before_the_others() -> None:
    pool = EnginePool(workers=1, warm=False, ceiling=10.0)
    await pool.start()
    try:
        busy = asyncio.ensure_future(pool.run(sleeper, 0.5))  # the only worker is busy
        await asyncio.sleep(0.1)
        later = [asyncio.ensure_future(pool._submit(stamp, (t,), 5.0, t)) for t in "ab"]
        await asyncio.sleep(0)
        first = asyncio.ensure_future(pool._submit(stamp, ("urgent",), 5.0, "u", urgent=True))
        await busy
        done = sorted([await t for t in (*later, first)], key=lambda r: r[1])
        assert [tag for tag, _ in done] == ["urgent", "a", "b"]
    finally:
        await pool.close()


def thinking_time(state: object, spec: object, budget: Budget, *rest: object) -> float | None:
    return budget.time  # stands in for `choose_in_worker`: what the agent would be given


async def test_the_wait_for_a_worker_counts_in_a_decisions_time_budget() -> None:
    """The person's wait for a move is its time budget: a decision that waited for a worker
    thinks that much less, but at least half of it; one sent at once keeps all of it."""
    pool = EnginePool(workers=1, warm=False, ceiling=10.0)
    await pool.start()
    state, spec = Connect4State.from_moves("44"), AgentSpec("minimax")

    async def given(budget: Budget, urgent: bool = False) -> float | None:
        return cast("float | None", await pool.choose(state, spec, budget, urgent=urgent))

    try:
        with mock.patch("lobby.pool.choose_in_worker", thinking_time):
            at_once = await given(Budget(time=1.0))
            busy = asyncio.ensure_future(pool.run(sleeper, 0.6))  # the only worker is busy
            await asyncio.sleep(0)
            waited = await given(Budget(time=1.0))
            short = asyncio.ensure_future(pool.run(sleeper, 0.3))
            await asyncio.sleep(0)
            partly = await given(Budget(time=4.0), urgent=True)
            depth = await given(Budget(depth=3))
            await asyncio.gather(busy, short)
    finally:
        await pool.close()
    assert at_once is not None and 0.9 < at_once <= 1.0
    assert waited == 0.5  # it waited over half its second: half is left
    assert partly is not None and 2.0 <= partly <= 3.7
    assert depth is None


async def test_a_persons_wait_counts_from_when_they_asked() -> None:
    """The lobby's work before a decision is queued (a busy event loop, the store) is part
    of the person's wait too: the budget counts from `asked`, leaving at least half."""
    pool = EnginePool(workers=1, warm=False, ceiling=10.0)
    await pool.start()
    state, spec = Connect4State.from_moves("44"), AgentSpec("minimax")

    async def given(asked: float) -> float | None:
        budget = Budget(time=1.0)
        return cast("float | None", await pool.choose(state, spec, budget, asked=asked))

    try:
        with mock.patch("lobby.pool.choose_in_worker", thinking_time):
            await until(lambda: pool.idle == 1, within=scaled(5.0))
            recent = await given(time.monotonic() - 0.3)
            long_ago = await given(time.monotonic() - 5.0)
            later = await given(time.monotonic() + 5.0)  # a clock that cannot be: no wait
    finally:
        await pool.close()
    assert recent is not None and 0.5 <= recent <= 0.7  # (half at least, on a loaded machine)
    assert long_ago == 0.5
    assert later is not None and 0.7 < later <= 1.0


async def test_a_decision_sent_again_has_its_wait_taken_once() -> None:
    """A decision put back in the queue (the worker loading its agent died) and sent again
    keeps at least half its budget: its wait is not taken from it twice."""
    pool = EnginePool(workers=1, warm=False, ceiling=10.0)
    await pool.start()
    loop = asyncio.get_running_loop()
    args = (Connect4State.from_moves("44"), AgentSpec("minimax"), Budget(time=1.0), 0, None)
    job = Job(thinking_time, args, 5.0, "d", loop.create_future())
    job.queued -= 0.8  # it waited 0.8 s
    given: list[object] = []
    try:
        with mock.patch("lobby.pool.choose_in_worker", thinking_time):
            for _ in range(2):
                await until(lambda: pool.idle == 1, within=scaled(5.0))
                w = next(w for w in pool._live if w.state == "idle")
                job.future = loop.create_future()
                pool._send_job(w, job)
                given.append(await asyncio.wait_for(job.future, scaled(10.0)))
    finally:
        await pool.close()
    assert given == [0.5, 0.5]


async def test_the_pools_threads_never_take_ctrl_c() -> None:
    """A process-wide SIGINT goes to any thread that does not block it: one landing on a
    reader or sender thread would not wake `asyncio.run`'s loop (the parent slept on)."""
    pool = EnginePool(workers=1, warm=False)
    await pool.start()
    try:
        assert await pool.run(pid_of) != os.getpid()  # the sender thread has run too
        helpers = [t for t in threading.enumerate() if t.name.startswith("engine")]
        assert len(helpers) >= 2  # a reader and a sender
        for t in helpers:
            status = Path(f"/proc/self/task/{t.native_id}/status").read_text()
            blocked = int(
                next(ln for ln in status.splitlines() if ln.startswith("SigBlk:")).split()[1], 16
            )
            for sig in (signal.SIGINT, signal.SIGTERM):
                assert blocked >> (sig - 1) & 1, f"{t.name} may take {sig.name}"
    finally:
        await pool.close()


def span(seconds: float) -> tuple[float, float]:
    start = time.monotonic()
    time.sleep(seconds)
    return start, time.monotonic()


async def test_background_jobs_leave_a_worker_for_people() -> None:
    """Bot matches, training and analyses take at most all workers but one: a person's move
    never waits behind them."""
    pool = EnginePool(workers=2, warm=False, ceiling=30.0)
    await pool.start()
    try:
        await both_idle(pool)
        background = [asyncio.ensure_future(pool.run(span, 5.0)) for _ in range(2)]
        await until(lambda: pool.idle == 1 and len(pool._queue) == 1, within=5.0)
        busy = [w.job for w in pool._live if w.state == "busy"]
        assert len(busy) == 1 and not busy[0].urgent  # the second one waits: a worker is kept
        person = asyncio.ensure_future(pool._submit(span, (1.0,), 5.0, "p", urgent=True))
        await until(lambda: pool.idle == 0, within=5.0)
        busy = [w.job for w in pool._live if w.state == "busy"]
        assert sorted(j.urgent for j in busy) == [False, True]  # at once, on the kept worker
        assert [j.urgent for j in pool._queue] == [False]  # the background job still waits
        await person
        (_, a_end), (b_start, _) = sorted([await t for t in background])
        assert b_start >= a_end  # the second background job ran after the first
        waits = [t for t in pool.timings if t.label == "p"]
        assert len(waits) == 1 and waits[0].urgent
    finally:
        await pool.close()


async def test_a_jobs_timing_counts_the_load_of_its_agent_apart_from_its_wait() -> None:
    """A job given a worker that first loads its agent's kernels: the queue wait ends when the
    worker is given, the load until the job starts."""
    future = asyncio.get_running_loop().create_future()
    job = Job(span, (0.0,), 1.0, "p", future, urgent=True)
    job.queued, job.taken, job.started = 10.0, 11.0, 14.0
    with mock.patch("lobby.workers.time.monotonic", return_value=15.0):
        timing = JobTiming.of(job)
    assert (timing.wait, timing.load, timing.run) == (1.0, 3.0, 1.0)
    assert timing.urgent and timing.label == "p"


async def test_bot_jobs_go_on_while_the_worker_kept_for_people_loads_an_agent() -> None:
    """A load on the worker kept for people (`for_people`) is not a background job: the other
    worker takes the bot jobs meanwhile, as when the kept worker is idle."""
    pool = EnginePool(workers=2, warm=False, ceiling=30.0)
    await pool.start()
    kept = None
    try:
        await both_idle(pool)
        kept = next(w for w in pool._live if not w.plain)
        loading = Job(span, (0.0,), 30.0, "warm[x]", asyncio.get_running_loop().create_future())
        loading.for_people = True
        kept.state, kept.job = "busy", loading  # as if it loaded an agent for people
        done = await asyncio.wait_for(pool.run(span, 0.1), scaled(10.0))
        assert done[1] >= done[0]  # the bot job ran on the other worker, the load still on
        assert kept.job is loading
    finally:
        if kept is not None and kept.job is not None:
            kept.idle()
        await pool.close()


async def test_a_workers_build_of_its_agent_counts_in_the_time_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The first decision of an agent in a worker builds it first (the Othello expert's
    weights: 0.15-0.3 s), before its clock starts: that time is the person's wait too, so it
    is taken from the budget, down to half of the budget before any wait."""
    given: list[float | None] = []

    class Stub:
        def choose(self, state: object, budget: Budget, rng: object) -> Decision:
            given.append(budget.time)
            return Decision(move=4)

    def slow_build(spec: AgentSpec, game: str) -> Stub:
        time.sleep(0.3)
        return Stub()

    state, spec = Connect4State.from_moves("44"), AgentSpec("minimax")
    monkeypatch.setattr(lobby.jobs, "worker_agent", slow_build)
    lobby.jobs.choose_in_worker(state, spec, Budget(time=2.0), 0)  # not sent by a pool
    args = lobby.jobs.after_wait((state, spec, Budget(time=1.0), 0, None), 0.3)
    lobby.jobs.choose_in_worker(*args)  # waited 0.3 s, then built for 0.3 s
    late = lobby.jobs.after_wait((state, spec, Budget(time=1.0), 0, None), 0.7)
    lobby.jobs.choose_in_worker(*late)  # half the budget is left after the wait alone
    lobby.jobs.choose_in_worker(state, spec, Budget(depth=3), 0)  # no clock: nothing taken
    assert given[0] is not None and 1.0 <= given[0] <= 1.7  # 2 s less the build, half at least
    assert given[1] == 0.5  # 0.7 s left after the wait, less a build of 0.3 s or more: the floor
    assert given[2] == 0.5
    assert given[3] is None
