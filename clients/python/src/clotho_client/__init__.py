"""Trainer-side client of Clotho: the Atropos-compatible trajectory API, and a Temporal trainer worker.

- :class:`TrajectoryClient` speaks the HTTP API (``clotho api`` or Atropos's ``run-api``), with
  Clotho's leases and acks, and a pull loop like Atropos's example trainer; :class:`LeaseKeeper` renews the
  leases a trainer holds until it acks them.
- :func:`run_trainer_worker` runs the ``trainStep`` activities of ``clotho api --trainer temporal``.
- :func:`advantages` computes GRPO advantages as Atropos's example trainer does.
"""

from .api import TrajectoryClient
from .errors import ApiError, LeaseExpiredError, LeaseLostError, NotRegisteredError, UnknownBatchError
from .grpo import advantages, batch_advantages
from .leases import LeaseKeeper
from .trainer import TRAIN_STEP_ACTIVITY, TRAINER_TASK_QUEUE, TrainStepInput, connect_temporal, run_trainer_worker
from .types import SCORED_DATA_FIELDS, Batch, Info, LeaseRenewal, Message, ScoredDataGroup, Status

__all__ = [
    "ApiError",
    "Batch",
    "Info",
    "LeaseExpiredError",
    "LeaseKeeper",
    "LeaseLostError",
    "LeaseRenewal",
    "Message",
    "NotRegisteredError",
    "SCORED_DATA_FIELDS",
    "ScoredDataGroup",
    "Status",
    "TRAINER_TASK_QUEUE",
    "TRAIN_STEP_ACTIVITY",
    "TrainStepInput",
    "TrajectoryClient",
    "UnknownBatchError",
    "advantages",
    "batch_advantages",
    "connect_temporal",
    "run_trainer_worker",
]
