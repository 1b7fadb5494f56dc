"""/train: a learning agent trained by self-play in the background, its progress lines, and
stopping it."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from console import render
from console.values import UsageError, game_name
from lobby.training import TrainingJob

if TYPE_CHECKING:
    from console.session import Session

TRAIN_REPORT_SECONDS = 5.0  # a progress line this often while a /train job runs (a script)
TRAIN_REDRAW_SECONDS = 1.0  # in a terminal the one progress line is redrawn this often
TRAIN_STOP_SECONDS = 2.0  # /train stop lets the batch in flight end this long, then drops it


def running_training(console: Session) -> TrainingJob | None:
    """The training job of this session still running, if any (one at a time)."""
    return next((job for job in console.training if not job.progress.finished), None)


async def cmd_train(console: Session, opts: dict[str, str]) -> None:
    if opts.get("action") == "stop":
        stopped = await stop_training(console)
        if stopped is None:
            raise UsageError("no training is running")
        console.write(stopped)
        return
    running = running_training(console)
    if running is not None:
        p = running.progress
        raise UsageError(
            f"a training job is already running ({p.agent}, {p.done}/{p.total} games):"
            " one at a time; /train stop stops it"
        )
    game = game_name(opts["game"])
    try:
        games = int(opts["games"])
    except ValueError:
        raise UsageError(f"games must be a whole number, not {opts['games']!r}") from None
    job = console.lobby.train(game, opts["agent"], games, opts.get("opponent"), raw_ok=True)
    console.training.append(job)
    console.progress(render.training_line(job.progress), last=True)
    console.background(lambda: _follow_training(console, job), "training")


async def _follow_training(console: Session, job: TrainingJob) -> None:
    """Progress until the job ends: one line redrawn in a terminal, a line per report in
    a script; then the final line."""
    assert job.task is not None
    every = TRAIN_REDRAW_SECONDS if console.terminal is not None else TRAIN_REPORT_SECONDS
    while True:
        done, _ = await asyncio.wait({job.task}, timeout=every)
        if done:
            break
        console.progress(render.training_line(job.progress))
    console.progress(render.training_line(job.progress), last=True)


async def stop_training(console: Session) -> str | None:
    """Stop the running training job: the batch in flight may end (briefly), then it is
    dropped; every batch before it is stored. What to say, or None if none runs."""
    job = running_training(console)
    if job is None:
        return None
    job.cancel()
    if job.task is not None:
        done, _ = await asyncio.wait({job.task}, timeout=TRAIN_STOP_SECONDS)
        if not done:
            job.task.cancel()
            await asyncio.gather(job.task, return_exceptions=True)
    p = job.progress
    return f"Training {p.agent} stopped after {p.done} of {p.total} games; what it learned is kept."
