"""The console as a person meets it: `python bot.py` in a pseudo-terminal (pexpect).

The first screen, Ctrl-C, the prompt while the bot thinks, and what is left after a kill.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pexpect
import pytest

from tests.botrun import ROOT, Terminals
from tests.machine import scaled
from tests.procs import children_of, gone


@pytest.mark.slow
def test_first_screen_prompt_and_ctrl_c(terminals: Terminals) -> None:
    t0 = time.monotonic()
    term = terminals.spawn(timeout=scaled(60))
    term.expect("Board-game bot")
    first = time.monotonic() - t0
    assert first < scaled(1.5), f"the first output took {first:.2f} s"
    term.expect("tester>")  # the prompt (its space is a cursor move), while the engine starts
    term.sendline("/help")
    term.expect("/matches")
    term.sendline("/play game:connect4 opponent:easy")
    term.expect(r"Move 1: .* to play")
    term.sendline("4")
    term.expect(r"Bot \(easy\) 🟡 plays")  # the bot's reply arrives on its own
    term.expect("tester>")  # and the prompt is drawn again after it
    workers = children_of(term.pid)
    term.sendcontrol("c")  # Ctrl-C at the prompt: a clean exit
    term.expect(pexpect.EOF)
    term.close()
    assert "Traceback" not in (term.before or "")
    assert term.exitstatus == 0, term.exitstatus
    deadline = time.monotonic() + scaled(1)
    while time.monotonic() < deadline and not all(gone(w) for w in workers):
        time.sleep(0.05)
    assert not [w for w in workers if not gone(w)]


@pytest.mark.slow
def test_the_console_answers_while_the_bot_thinks(terminals: Terminals) -> None:
    term = terminals.spawn(timeout=scaled(60))
    term.expect("tester>")
    term.sendline("/play game:connect4 opponent:expert first:bot")
    term.expect(r"thinking")
    t0 = time.monotonic()
    term.sendline("/matches")  # answered while the expert thinks (up to 0.9 s a move)
    term.expect(r"Live matches of")
    assert time.monotonic() - t0 < scaled(5)
    term.sendline("/quit")
    term.expect(pexpect.EOF)
    term.close()
    assert term.exitstatus == 0 and "Traceback" not in (term.before or "")


@pytest.mark.slow
def test_no_worker_survives_a_kill(terminals: Terminals) -> None:
    term = terminals.spawn(timeout=scaled(60), extra={"BOARDBOT_WORKERS": "2"})
    term.expect("tester>")
    term.sendline("/botmatch game:othello first:easy second:hard delay:1")
    term.expect(r"Move 2")
    workers = children_of(term.pid)
    assert len(workers) >= 2
    os.kill(term.pid, signal.SIGKILL)
    deadline = time.monotonic() + scaled(5)
    while time.monotonic() < deadline and not all(gone(w) for w in workers):
        time.sleep(0.1)
    assert not [w for w in workers if not gone(w)], "workers outlived their bot"
    term.close(force=True)


@pytest.mark.slow
def test_output_keeps_what_is_being_typed(terminals: Terminals) -> None:
    term = terminals.spawn(timeout=scaled(60))
    term.expect("tester>")
    term.sendline("/botmatch game:connect4 first:easy second:easy delay:1")
    term.expect(r"Move 2")
    term.send("/matc")  # typed, not yet sent, while the bot match prints its moves
    term.expect(r"/matc")
    term.expect(r"plays")  # a move printed in the middle of the typing
    term.expect(r"tester> /matc")  # the prompt again, with what was typed
    term.send("x\x7fhes\r")  # Backspace works; Enter sends the line
    term.expect(r"tester has no live match")  # the answer to /matches
    term.sendline("/quit")
    term.expect(pexpect.EOF)
    term.close()
    assert term.exitstatus == 0 and "Traceback" not in (term.before or "")


def test_the_registry_compiles_nothing_on_import() -> None:
    """The console needs the registry before its prompt. On a first run (no numba cache) the
    Connect Four search's recursive kernels take seconds to compile when their module is
    imported, so the registry must not import it: the prompt came at 5.5 s, now 0.5 s."""
    code = (
        "import sys, engine.agents.registry as r; r.resolve('minimax', 'connect4');"
        " print('engine.agents.connect4.minimax' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
        timeout=scaled(60),
    )  # fmt: skip
    assert out.stdout.strip() == "False", out.stderr
