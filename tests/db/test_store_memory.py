"""Tests for what the store keeps for agents and analyses (`store.memory`, `store.analyses`):
a learned memory written in one transaction and read back exactly, an analysis kept once per
match and analyser version. Each against both backends (tests/conftest.py's `store_target`)."""

from __future__ import annotations

import io
import time
from collections.abc import AsyncIterator

import numpy as np
import pytest

from db import (
    Store,
)
from tests.machine import scaled
from tests.stores import people


@pytest.fixture
async def store(store_target: str) -> AsyncIterator[Store]:
    s = await Store.open(store_target)
    yield s
    await s.close()


async def test_agent_memory_batch_roundtrip(store: Store) -> None:
    buf = io.BytesIO()
    arr = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
    np.save(buf, arr)
    npy = buf.getvalue()
    items: list[tuple[bytes | str, bytes]] = [
        (i.to_bytes(8, "little"), bytes([i % 256]) * (i % 50 + 1)) for i in range(5000)
    ]
    items += [("weights", npy), (b"\x00\xff", b"")]

    t0 = time.perf_counter()
    n = await store.memory.put("qlearn", "c4-a", items, games_trained_delta=10, meta={"eps": 0.1})
    assert time.perf_counter() - t0 < scaled(1.0)
    assert n == 5002

    got = await store.memory.get("qlearn", "c4-a")
    assert len(got) == 5002
    for k, v in items:
        assert got[k.encode() if isinstance(k, str) else k] == v
    back = np.load(io.BytesIO(got[b"weights"]))
    assert back.dtype == arr.dtype and np.array_equal(back, arr)
    assert await store.memory.get_one("qlearn", "c4-a", "weights") == npy

    # Upsert overwrites, counters accumulate, meta is kept unless given.
    await store.memory.put("qlearn", "c4-a", [(b"\x00\xff", b"new")], games_trained_delta=5)
    assert await store.memory.get_one("qlearn", "c4-a", b"\x00\xff") == b"new"
    info = await store.memory.info("qlearn", "c4-a")
    assert info is not None and (info.rows, info.games_trained, info.meta) == (
        5002,
        15,
        {"eps": 0.1},
    )

    await store.memory.put("qlearn", "c4-b", [("k", b"v")])
    await store.memory.put("mcts", "oth", [("k", b"v")], replace=True)
    assert [(i.kind, i.name, i.rows) for i in await store.memory.infos()] == [
        ("mcts", "oth", 1),
        ("qlearn", "c4-a", 5002),
        ("qlearn", "c4-b", 1),
    ]
    await store.memory.put("qlearn", "c4-b", [("k2", b"v2")], replace=True)
    assert await store.memory.get("qlearn", "c4-b") == {b"k2": b"v2"}

    with pytest.raises(TypeError, match="bytes"):
        await store.memory.put("qlearn", "c4-b", [("k", "not bytes")])  # type: ignore[list-item]


async def test_an_analysis_is_kept_once_per_match_by_version(store_target: str) -> None:
    store = await Store.open(store_target)
    alice, bob, _ = await people(store)
    m = await store.matches.create("connect4", "pvp", alice.id, bob.id)
    assert await store.analyses.get(m.id, 1) is None
    await store.analyses.put(m.id, 1, {"moves": [{"ply": 0, "verdict": "best"}]})
    assert await store.analyses.get(m.id, 1) == {"moves": [{"ply": 0, "verdict": "best"}]}
    assert await store.analyses.get(m.id, 2) is None  # a newer analyser recomputes
    await store.analyses.put(m.id, 2, {"moves": []})
    assert await store.analyses.get(m.id, 1) is None and await store.analyses.get(m.id, 2)
    with pytest.raises(ValueError):
        await store.analyses.put(m.id, 3, {"x": float("nan")})  # not JSON: nothing written
    await store.close()
    store = await Store.open(store_target)  # a restart keeps it
    assert await store.analyses.get(m.id, 2) == {"moves": []}
    await store.close()
