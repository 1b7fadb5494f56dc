"""Learning agents' one learning core: the rule, one training game, memories, naming.

* `rule`: which seats learn, with what result, on which rows (`learning_seats`, `seat_result`,
  `apply_learning`, `replay`); every runner (the `train` tool, `match`, the lobby) applies it.
* `selfplay`: `play_and_learn`, one game on `engine.play.play_game` (the `train` tool's
  workers and the bot's `/train` batches).
* `memory`: the `MemoryBackend` protocol, `InMemoryBackend`, `MemorySession` (`match`, `serve`).
* `specs`: which specs learn and how to name one that trains (`with_memory`, `trainable_text`).

The training runs themselves (rounds on worker processes, evaluations, learning curves) are a
tool: `tools.training` (docs/learning.md).
"""

from engine.learning.memory import InMemoryBackend, MemoryBackend, MemorySession
from engine.learning.rule import apply_learning, learning_seats, replay, seat_result
from engine.learning.selfplay import line_up, play_and_learn
from engine.learning.specs import learning_agent, trainable_text, uses_memory, with_memory

__all__ = [
    "InMemoryBackend",
    "MemoryBackend",
    "MemorySession",
    "apply_learning",
    "learning_agent",
    "learning_seats",
    "line_up",
    "play_and_learn",
    "replay",
    "seat_result",
    "trainable_text",
    "uses_memory",
    "with_memory",
]
