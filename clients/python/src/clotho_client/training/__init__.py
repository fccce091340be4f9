"""A GRPO trainer for Clotho's (and Atropos's) trajectory API: ``python -m clotho_client.training``.

Needs the ``train`` extra (PyTorch, transformers, gguf); importing ``clotho_client`` alone never loads it.
"""

from .config import TrainerConfig
from .data import MicroBatch, micro_batches
from .loss import LossStats, grpo_loss

__all__ = ["LossStats", "MicroBatch", "TrainerConfig", "grpo_loss", "micro_batches"]
