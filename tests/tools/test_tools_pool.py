"""The tools' one process-pool helper (`tools/pool.py`): results as they finish, an error or a
timeout cancels what has not started, and a worker of its own talks over its pipe."""

from __future__ import annotations

import time
from multiprocessing.connection import Connection

import pytest

from tests.machine import scaled
from tools.pool import as_done, pool, stop, worker


def square(x: int) -> int:
    return x * x


def fail_on(x: int, bad: int) -> int:
    if x == bad:
        raise ValueError(f"bad {x}")
    return x


def sleepy(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def echo_twice(conn: Connection, prefix: str) -> None:
    while (message := conn.recv()) is not None:
        conn.send(f"{prefix}{message}{message}")
    conn.close()


def test_every_result_comes_back() -> None:
    with pool(2) as executor:
        got = sorted(as_done(executor, square, [(x,) for x in range(12)]))
    assert got == [x * x for x in range(12)]


def test_an_error_reaches_the_caller() -> None:
    with pool(1) as executor, pytest.raises(ValueError, match="bad 3"):
        list(as_done(executor, fail_on, [(x, 3) for x in range(6)]))


def test_a_timeout_stops_the_run_and_keeps_what_finished() -> None:
    done: list[float] = []
    executor = pool(1)
    try:
        with pytest.raises(TimeoutError):
            for seconds in as_done(
                executor, sleepy, [(0.0,), (600.0,), (600.0,)], timeout=scaled(10)
            ):
                done.append(seconds)
    finally:
        stop(executor)
    assert done == [0.0]


def test_a_worker_of_its_own_answers_over_its_pipe() -> None:
    conn, proc = worker(echo_twice, ">")
    try:
        conn.send("ab")
        assert conn.recv() == ">abab"
        conn.send(None)
        proc.join(timeout=30)
        assert proc.exitcode == 0
    finally:
        if proc.is_alive():
            proc.terminate()
