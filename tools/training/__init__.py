"""`python -m tools train`: rounds of games on worker processes with memory replicas
(`workers`), learning in the parent by the engine's rule (`runner`), fixed evaluation games
(`evals`) and learning curves (`curves`). How a run goes: docs/learning.md, "Training"."""

from tools.training.curves import plot_curves, read_csv
from tools.training.evals import EvalSpec
from tools.training.runner import SELF, TrainConfig, TrainReport, train

__all__ = ["SELF", "EvalSpec", "TrainConfig", "TrainReport", "plot_curves", "read_csv", "train"]
