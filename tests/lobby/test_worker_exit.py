"""A worker whose bot is gone (its reply pipe closed) exits quietly: the bot's terminal, which
the worker shares, never shows a traceback of it (a bot that refuses to start, for instance,
exits right after starting its first worker)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_worker_whose_reply_pipe_is_closed_exits_with_no_traceback() -> None:
    jobs_in, jobs_out = os.pipe()
    replies_in, replies_out = os.pipe()
    os.close(replies_in)  # the bot's end of the replies: the bot has exited
    command = [sys.executable, "-m", "lobby.worker", str(jobs_in), str(replies_out)]
    proc = subprocess.Popen(
        [*command, str(os.getpid()), "bare"],
        pass_fds=(jobs_in, replies_out),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    os.close(jobs_in)
    os.close(replies_out)
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        os.close(jobs_out)
    assert (proc.returncode, out, err.decode()) == (0, b"", "")
