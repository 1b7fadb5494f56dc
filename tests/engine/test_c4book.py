"""The perfect agent's opening book: the file, the lookup, the builder and the shipped book."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from engine.agents import registry
from engine.agents.base import Budget
from engine.agents.connect4 import book as c4book
from engine.agents.connect4 import solver as sv
from engine.games.connect4 import Connect4State
from tests.machine import scaled
from tools import c4book as book_builder


def test_parse_reads_entries_and_skips_comments() -> None:
    book = c4book.parse("# a comment\n\n5 1 4\n7 -1 1\n")
    assert book == {5: (1, 3), 7: (-1, 0)}


@pytest.mark.parametrize(
    "line", ["5 1", "5 1 4 9", "x 1 4", "5 22 4", "5 -22 4", "5 1 0", "5 1 8", "-3 0 1", "5 one 4"]
)
def test_parse_rejects_a_malformed_line_by_number(line: str) -> None:
    with pytest.raises(c4book.BookError, match="book line 2"):
        c4book.parse(f"1 0 4\n{line}\n")


def test_a_mirror_image_reads_the_mirrored_column() -> None:
    state = Connect4State.from_moves("1121")  # not symmetric: its mirror is "7767"
    mirror = Connect4State.from_moves("7767")
    key, col = c4book.canonical(state, 1)
    book = {key: (1, col)}
    assert c4book.lookup_in(book, state) == (1, 1)
    assert c4book.lookup_in(book, mirror) == (1, 5)
    assert c4book.lookup_in(book, Connect4State.from_moves("1122")) is None


def test_lookup_is_for_early_7x6_four_in_a_row_positions_only() -> None:
    assert c4book.lookup(Connect4State.from_moves("44444")) is None  # past the book
    assert c4book.lookup(Connect4State.from_moves("444444333")) is None  # past MAX_PLY
    assert c4book.lookup(Connect4State.new(6, 8, 4)) is None
    assert c4book.lookup(Connect4State.from_moves("", 6, 7, 3)) is None


def _keeps(state: Connect4State, col: int, score: int) -> bool:
    child = state.play(col)
    result = child.outcome()
    if result is not None:
        cells = state.rows * state.cols
        return (0 if result.winner is None else (cells + 1 - state.ply) // 2) == score
    return -sv.solve(child) == score


def test_build_on_a_small_board_is_exact_and_resumes(tmp_path: Path) -> None:
    out = tmp_path / "book.txt"
    size, solved, total = book_builder.build(
        out, ply=3, rows=4, cols=5, workers=1, table_size=100_003
    )
    book = c4book.parse(out.read_text())
    assert solved == total == len(list(book_builder.positions(3, 4, 5)))
    assert size == len(book) == sum(len(list(book_builder.positions(p, 4, 5))) for p in range(4))
    for p in range(4):
        for state in book_builder.positions(p, 4, 5):
            entry = c4book.lookup_in(book, state)
            assert entry is not None
            score, col = entry
            assert score == sv.solve(state), state.to_notation()
            assert _keeps(state, col, score), state.to_notation()
    # A rerun finds every solved position in the work file and solves nothing again.
    work = tmp_path / "book.txt.ply3.work"
    lines = work.read_text()
    out.unlink()
    again = book_builder.build(out, ply=3, rows=4, cols=5, workers=1, table_size=100_003)
    assert again == (size, solved, total)
    assert work.read_text() == lines
    assert c4book.parse(out.read_text()) == book


def test_an_interrupted_build_keeps_what_it_solved(tmp_path: Path) -> None:
    out = tmp_path / "book.txt"
    work = tmp_path / "book.txt.ply3.work"
    # Pretend an earlier run solved two positions (one as its mirror image), then stop at once.
    first, second = list(book_builder.positions(3, 4, 5))[:2]
    mirror = Connect4State.from_moves([4 - c for c in second.moves], 4, 5)
    work.write_text(
        f"{first.to_notation()} {sv.solve(first)} 2\n{mirror.to_notation()} {sv.solve(second)} 2\n"
    )
    size, solved, total = book_builder.build(
        out, ply=3, rows=4, cols=5, workers=1, table_size=100_003, stop_after=0
    )
    assert (size, solved) == (2, 2) and total > 2
    book = c4book.parse(out.read_text())
    assert c4book.lookup_in(book, first) == (sv.solve(first), 2)
    assert c4book.lookup_in(book, second) == (sv.solve(second), 2)
    assert "(2 of the" in out.read_text().splitlines()[0]


# -- the shipped book (built with `python -m tools book --ply 4`) ----------------------------

SHIPPED = c4book.load()
LEAVES = list(book_builder.positions(c4book.BOOK_PLY))


def _pons_opening() -> list[tuple[str, int]]:
    path = Path(__file__).parents[1] / "data" / "pons_opening.txt"
    lines = [line.split() for line in path.read_text().splitlines() if line[:1].isdigit()]
    return [(moves, int(score)) for moves, score in lines]


def test_the_shipped_book_holds_what_its_header_says() -> None:
    header = c4book.BOOK_PATH.read_text().splitlines()[0]
    solved = sum(1 for s in LEAVES if c4book.lookup(s) is not None)
    assert f"{len(SHIPPED)} positions of <= {c4book.BOOK_PLY} discs" in header
    assert f"({solved} of the {len(LEAVES)} with {c4book.BOOK_PLY} discs solved)" in header
    assert solved == len(LEAVES) == 568  # complete: every earlier position is derived too
    assert len(SHIPPED) == sum(len(list(book_builder.positions(p))) for p in range(5)) == 719


def test_the_shipped_book_agrees_with_pons_exact_scores() -> None:
    # Pons' test sets hold 256 positions of <= 4 discs with exact scores, computed by his
    # solver: an independent check of ours.
    checked = 0
    for moves, score in _pons_opening():
        entry = c4book.lookup(Connect4State.from_moves(moves))
        if entry is not None:
            assert entry[0] == score, moves
            checked += 1
    assert checked == 256


def test_the_shipped_book_knows_the_opening_theory() -> None:
    # Allis (1988): the first player wins only by starting in the centre; columns 3 and 5 draw.
    # Pons' score 1: the first player's win comes with the last of its 21 discs.
    assert c4book.lookup(Connect4State.new()) == (1, 3)
    expected = {1: 1, 2: 1, 3: 0, 4: -1, 5: 0, 6: 1, 7: 1}  # for the second player
    for col, outcome in expected.items():
        entry = c4book.lookup(Connect4State.from_moves(str(col)))
        assert entry is not None and (entry[0] > 0) - (entry[0] < 0) == outcome


def test_the_shipped_book_is_consistent_with_its_own_leaves() -> None:
    derived = 0
    for p in range(c4book.BOOK_PLY):
        for state in book_builder.positions(p):
            entry = c4book.lookup(state)
            children = [c4book.lookup(state.play(col)) for col in state.legal_moves()]
            if any(child is None for child in children):
                assert entry is None  # derived only from a complete set of children
                continue
            assert entry is not None
            assert entry[0] == max(-child[0] for child in children if child is not None)
            best = c4book.lookup(state.play(entry[1]))
            assert best is not None and -best[0] == entry[0]
            derived += 1
    assert derived == len(SHIPPED) - sum(1 for s in LEAVES if c4book.lookup(s) is not None)


def test_the_perfect_agent_plays_a_move_of_the_book_s_score() -> None:
    spec, _ = registry.resolve("perfect", "connect4")
    agent = registry.build(spec, "connect4")
    rng = random.Random(0)
    booked = [s for s in LEAVES if c4book.lookup(s) is not None][:40]
    signs = set()
    for state in booked:
        decision = agent.choose(state, Budget(time=scaled(0.3)), rng)
        entry = c4book.lookup(state)
        assert entry is not None
        signs.add((entry[0] > 0) - (entry[0] < 0))
        if decision.info["reason"] in ("win now", "only move"):
            continue
        assert decision.info["reason"] == "solved" and decision.score == entry[0]
        assert _keeps(state, decision.move, entry[0]), state.to_notation()
    assert signs == {-1, 0, 1}
    # Before 4 discs the children are in the book too: only the centre wins the empty board.
    decision = agent.choose(Connect4State.new(), Budget(time=scaled(0.9)), rng)
    assert (decision.move, decision.score) == (3, 1)
    state = Connect4State.from_moves("3")  # a draw for the second player
    decision = agent.choose(state, Budget(time=scaled(0.9)), rng)
    child = c4book.lookup(state.play(decision.move))
    assert decision.score == 0 and child is not None and child[0] == 0


def test_the_book_command_refuses_bad_options() -> None:
    import subprocess
    import sys

    for args in (["--ply", "0"], ["--ply", "9"], ["--workers", "0"], ["--minutes", "0"]):
        proc = subprocess.run(
            [sys.executable, "-m", "tools", "book", *args], capture_output=True, text=True
        )
        assert proc.returncode == 2 and "error:" in proc.stderr


# -- the book command: where it writes (a fake build: these tests check the paths, not the solver)


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, list[Path]]:
    """(user data folder, a stand-in for the shipped book, the `out` of every build run); the
    fake build writes a finished 5-line book, or an unfinished one when --minutes is given."""
    from tools import builds

    data, shipped = tmp_path / "user-data", tmp_path / "package" / "c4book.txt"
    shipped.parent.mkdir()
    shipped.write_text("# the shipped book\n1 0 4\n2 1 3\n")
    monkeypatch.setattr(builds, "user_data_dir", lambda: data)
    monkeypatch.setattr(c4book, "BOOK_PATH", shipped)
    outs: list[Path] = []

    def fake_build(out: Path, **kw: object) -> tuple[int, int, int]:
        outs.append(out)
        if out.resolve().is_relative_to(Path(c4book.__file__).resolve().parent.parent):
            return 0, 0, 1  # never write into the package, even when the command is wrong
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("# built\n1 0 4\n2 1 3\n3 -1 1\n4 0 2\n")
        return 4, (1 if kw["stop_after"] is None else 0), 1

    monkeypatch.setattr(book_builder, "build", fake_build)
    return data, shipped, outs


def test_the_book_command_builds_into_the_user_data_folder(
    places: tuple[Path, Path, list[Path]], capsys: pytest.CaptureFixture[str]
) -> None:
    from tools.cli import main

    data, shipped, outs = places
    before = shipped.read_text()
    assert main(["book", "--minutes", "0.2"]) == 0
    assert outs == [data / "c4book.txt"]
    assert shipped.read_text() == before
    assert f"wrote 4 positions to {data / 'c4book.txt'}" in capsys.readouterr().out


def test_the_book_command_writes_where_out_says_but_not_over_the_shipped_book(
    places: tuple[Path, Path, list[Path]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tools.cli import main

    _, shipped, outs = places
    assert main(["book", "--out", str(tmp_path / "mine.txt")]) == 0
    assert outs == [tmp_path / "mine.txt"]
    assert main(["book", "--out", str(shipped)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is the shipped book" in err and "--replace-shipped" in err
    assert len(outs) == 1


def test_replace_shipped_copies_a_finished_book_and_says_what_it_replaced(
    places: tuple[Path, Path, list[Path]], capsys: pytest.CaptureFixture[str]
) -> None:
    from tools.cli import main

    data, shipped, _ = places
    old_size = shipped.stat().st_size
    # An unfinished build leaves the shipped book alone, and says so.
    assert main(["book", "--minutes", "0.2", "--replace-shipped"]) == 0
    captured = capsys.readouterr()
    assert "# the shipped book" in shipped.read_text()
    assert "the shipped book is not replaced" in captured.err
    assert main(["book", "--replace-shipped"]) == 0
    out = capsys.readouterr().out
    built = data / "c4book.txt"
    assert shipped.read_text() == built.read_text()
    assert (
        f"replaced the shipped book {shipped}: was 3 lines, {old_size} bytes, "
        f"now 5 lines, {built.stat().st_size} bytes"
    ) in out


def test_the_expert_still_reads_the_shipped_book_after_a_build(
    places: tuple[Path, Path, list[Path]],
) -> None:
    from tools.cli import main

    assert main(["book"]) == 0  # a (fake) book of other entries in the user data folder
    c4book.load.cache_clear()
    assert c4book.lookup(Connect4State.new()) == (1, 3)  # the shipped book: the centre wins
    assert len(c4book.load()) == len(SHIPPED)
