"""Runs an unchanged Atropos ``BaseEnv`` subclass as Temporal activities that Clotho's workflows drive.

``load_env_class("env.py[:Class]")`` imports the class, ``build_env(cls, ["serve", "--env.x", ...])`` builds
the object exactly as Atropos's CLI would, ``AtroposActivities`` serves it, ``run_worker`` runs them.
"""

from .activities import ACTIVITY_NAMES, AtroposActivities
from .building import BuildError, BuiltEnv, build_env
from .codec import decode_item, encode_item, group_to_json
from .cursor import Checkpoint, ItemCursor
from .loading import EnvSpecError, load_env_class
from .worker import WorkerStop, connect_temporal, run_worker

__all__ = [
    "ACTIVITY_NAMES",
    "AtroposActivities",
    "BuildError",
    "BuiltEnv",
    "Checkpoint",
    "EnvSpecError",
    "ItemCursor",
    "WorkerStop",
    "build_env",
    "connect_temporal",
    "decode_item",
    "encode_item",
    "group_to_json",
    "load_env_class",
    "run_worker",
]
