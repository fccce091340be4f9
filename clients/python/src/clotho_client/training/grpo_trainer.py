"""The training loop: batches in (leased over HTTP, or trainStep activities), GRPO steps, checkpoints, weights out.

Exactly once, across a kill -9 at any moment:

- a batch is acked (HTTP) or its trainStep completed (Temporal) only after a checkpoint holds the step it fed;
- the lease of a batch being trained is journalled first (``inflight.json``), so a restarted trainer takes that
  batch back by its lease id instead of waiting for the lease to run out;
- every lease held until its ack is renewed from a thread of its own (``LeaseKeeper``), so acking only at a
  checkpoint never lets one run out however long the steps; a lease the API would not renew stops the trainer before
  it trains that batch again, and an API that renews no leases is refused with ``--checkpoint-interval`` above 1;
- the engine gets only checkpointed weights, so a restart never has to take a version back;
- after a restart the trainer acks what its checkpoint trained but had not acked, and syncs its version again
  (the engine treats a repeated version as a no-op).

A batch is trained twice only when its lease ran out while the trainer was down after the checkpoint and
before the ack: choose ``--lease-seconds`` longer than a restart. Then the ack is refused (409): the trainer records the
lost lease in its state (``leases_lost``, also a metric) and exits with an error, once.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
import os
import threading
import time
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

import httpx
import torch

from ..api import TrajectoryClient
from ..errors import LeaseExpiredError, LeaseLostError, UnknownBatchError
from ..leases import LeaseKeeper, unrenewed_refusal
from ..pull import ack_with_retries, poll_batches
from ..wire import auth_headers
from .checkpoint import Checkpoints, TrainerState, update_state
from .config import TrainerConfig
from .data import micro_batches
from .loss import LossStats, grpo_loss
from .metrics import MetricsSink
from .lora import load_policy
from .weight_sync import weight_sync_for

log = logging.getLogger("clotho_client.training")


def fingerprint(group: Mapping[str, Any]) -> str:
    """A group's identity for the exactly-once bookkeeping: a hash of its token lists."""
    return hashlib.sha256(json.dumps(group["tokens"], separators=(",", ":")).encode()).hexdigest()[:16]


def served_model(config: TrainerConfig) -> str:
    """The GGUF file `clotho inference` serves (``GET /v1/weights``): the policy to train when ``--model`` is not given."""
    url = f"{(config.inference_url or '').rstrip('/').removesuffix('/v1')}/v1/weights"
    try:
        response = httpx.get(url, headers=auth_headers(config.inference_token, "CLOTHO_INFERENCE_TOKEN"), timeout=30.0)
        response.raise_for_status()
    except httpx.HTTPError as error:
        raise SystemExit(f"--model not given and the engine's weights could not be read from {url}: {error}") from error
    path = str(response.json()["path"])
    log.info("training the model the engine serves: %s", path)
    return path


def _device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def _schedule(config: TrainerConfig):
    def factor(step: int) -> float:
        if step < config.warmup_steps:
            return (step + 1) / (config.warmup_steps + 1)
        if config.lr_schedule == "constant":
            return 1.0
        span = max(config.training_steps - config.warmup_steps, 1)
        done = min(max(step - config.warmup_steps, 0) / span, 1.0)
        return 1.0 - done if config.lr_schedule == "linear" else 0.5 * (1.0 + math.cos(math.pi * done))

    return factor


class GrpoTrainer:
    """One policy, its optimizer and its bookkeeping; :meth:`run` feeds it until ``training_steps``."""

    def __init__(self, config: TrainerConfig) -> None:
        if not config.model:
            config = dataclasses.replace(config, model=served_model(config))
        if config.source == "temporal" and config.checkpoint_interval != 1:
            raise ValueError("--source temporal completes each trainStep when it is trained, so it checkpoints every step: --checkpoint-interval must be 1")
        self.config = config
        torch.manual_seed(config.seed)
        self.device = _device(config.device)
        dtype = getattr(torch, config.dtype)
        self.checkpoints = Checkpoints(config.save_path, config.keep_checkpoints)
        latest = self.checkpoints.latest()
        started = time.perf_counter()
        self.model = load_policy(config, latest / "model" if latest else None, dtype=dtype, device=self.device)
        self.model.train()
        trained = [p for p in self.model.parameters() if p.requires_grad]  # all of them, or the LoRA adapters'
        self.optimizer = torch.optim.AdamW(trained, lr=config.lr, weight_decay=config.weight_decay)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, _schedule(config))
        self.state = TrainerState()
        self.latest = latest
        if latest:
            self.state = self.checkpoints.load_state(latest)
            self.checkpoints.load_optimizer(latest, self.optimizer, self.scheduler)
        pad = self.model.config.pad_token_id
        self.pad_token_id = int(pad if pad is not None else (self.model.config.eos_token_id or 0))
        self.sync = weight_sync_for(config, self.model)
        self.metrics = MetricsSink(config)
        self.journal = Path(config.save_path) / "inflight.json"
        self.pending_acks: list[str] = list(self.state.unacked_leases)
        self.timings: list[dict[str, float]] = []
        log.info("loaded %s in %.1fs%s", config.model, time.perf_counter() - started, f", resumed at step {self.state.step}" if latest else "")

    # --- one step -------------------------------------------------------------------------------------------

    def train_on(self, groups: Sequence[Mapping[str, Any]]) -> dict[str, float]:
        """One optimizer step on the groups of one batch; returns its metrics."""
        started = time.perf_counter()
        batches = micro_batches(
            groups,
            self.config.batch_size,
            pad_token_id=self.pad_token_id,
            require_logprobs=not self.config.allow_missing_logprobs,
            device=self.device,
        )
        total = sum(b.size for b in batches)
        stats = LossStats()
        self.optimizer.zero_grad(set_to_none=True)
        for batch in batches:
            grpo_loss(self.model, batch, clip_eps=self.config.clip_eps, total_sequences=total, stats=stats).backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.config.max_grad_norm)
        lr = self.scheduler.get_last_lr()[0]
        self.optimizer.step()
        self.scheduler.step()
        self.state.step += 1
        scores = [float(s) for g in groups for s in g["scores"]]
        return {
            "loss": sum(stats.losses),
            "lr": lr,
            "grad_norm": float(grad_norm),
            "reward_mean": sum(scores) / max(len(scores), 1),
            "sequences": float(total),
            "groups": float(len(groups)),
            "train_seconds": time.perf_counter() - started,
            **stats.summary(),
        }

    def commit(self, groups: Sequence[Mapping[str, Any]], source: dict[str, Any], metrics: dict[str, float]) -> bool:
        """Records the step; checkpoints (and then syncs the engine) when one is due. Returns whether it checkpointed."""
        self.state.history.append({"step": self.state.step, **source, "groups": [fingerprint(g) for g in groups]})
        due = self.state.step % self.config.checkpoint_interval == 0 or self.state.step >= self.config.training_steps
        if due:
            started = time.perf_counter()
            self.state.unacked_leases = list(self.pending_acks)
            self.latest = self.checkpoints.save(self.model, self.optimizer, self.scheduler, self.state)
            metrics["checkpoint_seconds"] = time.perf_counter() - started
        return due

    def sync_weights(self, metrics: Optional[dict[str, float]] = None) -> None:
        """Sends the checkpointed weights to the engine, unless it already has this version."""
        if self.state.synced_version == self.state.step or self.latest is None:
            return
        started = time.perf_counter()
        self.sync.sync(self.model, self.state.step)
        self.state.synced_version = self.state.step
        update_state(self.latest, self.state)
        if metrics is not None:
            metrics["sync_seconds"] = time.perf_counter() - started

    def log_step(self, metrics: dict[str, float]) -> None:
        """Logs a step's figures as soon as it is taken: a crash before its checkpoint repeats the step, and its line."""
        self.metrics.log(self.state.step, metrics)
        self.timings.append(dict(metrics))
        log.info(
            "step %d: reward %.3f, loss %.4f, |dlogp| %.2e (max %.2e), ratio %.4f, clipped %.3f, wait %.1fs, train %.1fs",
            self.state.step,
            metrics["reward_mean"],
            metrics["loss"],
            metrics["logprob_diff_abs_mean"],
            metrics["logprob_diff_max"],
            metrics["ratio_mean"],
            metrics["clipped_fraction"],
            metrics.get("wait_seconds", 0.0),
            metrics["train_seconds"],
        )

    # --- HTTP: leased batches ---------------------------------------------------------------------------------

    def run_http(self, stop: Optional[threading.Event] = None) -> None:
        stop = stop or threading.Event()
        config = self.config
        with TrajectoryClient(config.atropos_url, token=config.token) as api, LeaseKeeper(
            config.atropos_url, config.lease_seconds, token=config.token
        ) as keeper:
            api.wait_for_server()
            self._register(api)
            self._ack_pending(api)
            self.sync_weights()
            not_renewed = api.renews_leases(config.lease_seconds)
            batches = poll_batches(api, lease_seconds=config.lease_seconds, poll_interval=0.1, max_poll_interval=0.5, stop=stop)
            resumed = self._inflight_batch(api)
            while self.state.step < config.training_steps and not stop.is_set():
                waited = time.perf_counter()
                batch = resumed or next(batches, None)
                resumed = None
                if batch is None:
                    break
                wait = time.perf_counter() - waited
                if batch.batch_id is not None:  # leased: held until acked
                    self._refuse_unrenewed(not_renewed)
                    keeper.hold(batch.batch_id)
                self._write_journal(batch.batch_id)
                metrics = self.train_on(batch.groups)
                # A lease that could not be renewed: its batch is served again; stop before anything more is trained.
                keeper.check()
                metrics["wait_seconds"] = wait
                metrics["leases_renewed"] = float(keeper.renewed)
                self.log_step(metrics)
                self.pending_acks.append(batch.batch_id)
                timings: dict[str, float] = {}
                if self.commit(batch.groups, {"lease": batch.batch_id}, timings):
                    # Released first: a renewal answered after its ack would say the lease is unknown.
                    keeper.release(*self.pending_acks)
                    self._ack_pending(api)
                    self.sync_weights(timings)
                self.log_timings(timings)

    def _refuse_unrenewed(self, status: Optional[int]) -> None:
        """Refuses, before training a leased batch, leases the API cannot renew with checkpoints several steps apart."""
        refusal = unrenewed_refusal(status, self.config.checkpoint_interval, self.config.lease_seconds)
        if refusal:
            raise SystemExit(f"python -m clotho_client.training: {refusal}")

    def _register(self, api: TrajectoryClient, trainer: Optional[str] = None) -> None:
        api.register(
            batch_size=self.config.sequences_per_step,
            max_token_len=self.config.seq_len,
            num_steps=self.config.training_steps,
            wandb_group=self.config.wandb_group,
            wandb_project=self.config.wandb_project,
            checkpoint_dir=str(Path(self.config.save_path).resolve()),
            save_checkpoint_interval=self.config.checkpoint_interval,
            starting_step=self.state.step,
            trainer=trainer,
        )

    def _ack_pending(self, api: TrajectoryClient) -> None:
        """Acks the leases of the batches the last checkpoint trained. One the API refuses ran out first: its batch is
        served again and will be trained twice, so it is recorded in the checkpoint's state, logged as a metric, and the
        trainer stops with an error (once: a restart does not ack it again)."""
        if not self.pending_acks:
            return
        refused = [lease for lease in self.pending_acks if not ack_with_retries(api, lease)]
        for lease in refused:
            step = next((h["step"] for h in reversed(self.state.history) if h.get("lease") == lease), None)
            self.state.leases_lost.append({"lease": lease, "step": step, "at": time.time()})
        self.pending_acks = []
        self.state.unacked_leases = []
        if self.latest is not None:
            update_state(self.latest, self.state)
        if refused:
            self.metrics.log(self.state.step, {"leases_lost": float(len(self.state.leases_lost))})
            raise LeaseLostError(
                f"the API refused the ack of {', '.join(refused)} (their leases ran out before it): those batches are served "
                f"again, and a trainer that takes them trains them a second time; {len(self.state.leases_lost)} lease(s) lost "
                f"in this run so far (leases_lost in {self.latest}/state.json). Keep the trainer's restarts shorter than "
                f"--lease-seconds ({self.config.lease_seconds:g})"
            )

    def _write_journal(self, lease: Optional[str]) -> None:
        tmp = self.journal.with_name(".inflight.json.tmp")
        tmp.write_text(json.dumps({"lease": lease, "step": self.state.step}))
        os.replace(tmp, self.journal)

    def _inflight_batch(self, api: TrajectoryClient):
        """The batch this trainer was training when it died, by its lease, if the API still holds it for us."""
        if not self.journal.is_file():
            return None
        lease = json.loads(self.journal.read_text()).get("lease")
        if not lease or any(h.get("lease") == lease for h in self.state.history):
            return None
        try:
            batch = api.batch_by_id(lease)
        except (UnknownBatchError, LeaseExpiredError):
            return None
        except httpx.HTTPError as error:
            log.warning("could not take back batch %s (%s); it comes back when its lease runs out", lease, error)
            return None
        log.info("taking back batch %s, leased before the restart", lease)
        return dataclasses.replace(batch, batch_id=lease)

    # --- Temporal: trainStep activities -----------------------------------------------------------------------

    def run_temporal(self) -> None:
        import asyncio

        from ..trainer import run_trainer_worker

        with TrajectoryClient(self.config.atropos_url, token=self.config.token) as api:
            api.wait_for_server()
            self._register(api, trainer="temporal")
        self.sync_weights()
        stop = asyncio.Event()
        lock = threading.Lock()
        idle_since = time.perf_counter()

        def train_step(step: int, batch_id: str, groups: list[dict[str, Any]]) -> None:
            nonlocal idle_since
            with lock:
                if self.state.batcher_step is not None and step <= self.state.batcher_step:
                    log.info("trainStep %d was trained before a restart; completing it without training again", step)
                    return
                metrics = self.train_on(groups)
                metrics["wait_seconds"] = max(time.perf_counter() - idle_since - metrics["train_seconds"], 0.0)
                self.state.batcher_step = step
                self.log_step(metrics)
                timings: dict[str, float] = {}
                self.commit(groups, {"batcher_step": step, "batch": batch_id}, timings)
                self.sync_weights(timings)
                self.log_timings(timings)
                idle_since = time.perf_counter()
                if self.state.step >= self.config.training_steps:
                    loop.call_soon_threadsafe(stop.set)

        async def serve() -> None:
            nonlocal loop
            loop = asyncio.get_running_loop()
            await run_trainer_worker(
                train_step,
                api_url=self.config.atropos_url,
                temporal_address=self.config.temporal_address,
                namespace=self.config.namespace,
                task_queue=self.config.task_queue,
                token=self.config.token,
                stop=stop,
            )

        loop: Any = None
        asyncio.run(serve())

    def log_timings(self, timings: dict[str, float]) -> None:
        """The step's checkpoint and sync times, logged under the same step once they are known."""
        if timings:
            self.metrics.log(self.state.step, timings)
            self.timings[-1].update(timings)

    def run(self) -> None:
        try:
            if self.config.source == "temporal":
                self.run_temporal()
            else:
                self.run_http()
        finally:
            self.metrics.close()
        print(self.summary(), flush=True)

    def summary(self) -> str:
        """Step time and the share of it spent waiting for batches, over the steps this process took."""
        if not self.timings:
            return "trained no step"
        parts = {k: sum(t.get(f"{k}_seconds", 0.0) for t in self.timings) for k in ("wait", "train", "checkpoint", "sync")}
        total = sum(parts.values())
        n = len(self.timings)
        return (
            f"{n} steps on {self.device}: {total / n:.2f} s per step (train {parts['train'] / n:.2f}, checkpoint "
            f"{parts['checkpoint'] / n:.2f}, sync {parts['sync'] / n:.2f}, waiting for batches {parts['wait'] / n:.2f}); "
            f"waiting {100 * parts['wait'] / max(total, 1e-9):.0f} % of the time"
        )
