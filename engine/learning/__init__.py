"""Learning agents' one learning core: the rule, one training game, memories, the CLI's loop.

* `rule`: which seats learn, with what result, on which rows (`learning_seats`, `seat_result`,
  `apply_learning`, `replay`); every runner (CLI, `match`, the lobby) applies it.
* `selfplay`: `play_and_learn`, one game on `engine.play.play_game` (the CLI's workers and the
  bot's `/train` batches).
* `memory`: the `MemoryBackend` protocol, `InMemoryBackend`, `MemorySession` (`match`, `serve`).
* `specs`: which specs learn and how to name one that trains (`with_memory`, `trainable_text`).
* `runner`, `workers`, `evals`, `curves`: `python -m engine train` (docs/learning.md).
"""

from engine.learning.curves import plot_curves, read_csv
from engine.learning.evals import EvalSpec
from engine.learning.memory import InMemoryBackend, MemoryBackend, MemorySession
from engine.learning.rule import apply_learning, learning_seats, replay, seat_result
from engine.learning.runner import SELF, TrainConfig, TrainReport, train
from engine.learning.selfplay import line_up, play_and_learn
from engine.learning.specs import learning_agent, trainable_text, uses_memory, with_memory

__all__ = [
    "SELF",
    "EvalSpec",
    "InMemoryBackend",
    "MemoryBackend",
    "MemorySession",
    "TrainConfig",
    "TrainReport",
    "apply_learning",
    "learning_agent",
    "learning_seats",
    "line_up",
    "play_and_learn",
    "plot_curves",
    "read_csv",
    "replay",
    "seat_result",
    "train",
    "trainable_text",
    "uses_memory",
    "with_memory",
]
