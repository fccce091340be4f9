"""Fixtures of the trainer's suite: the generated tiny GGUF, and the whole stack a training run needs."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Optional

import httpx
import pytest

from servers import REPO_ROOT, Process, start_api, terminate_workflow, wait_until

_GENERATE_TINY = """
import('./src/inference/local/generate-model.ts').then(async (m) => console.log(await m.ensureGeneratedModel(m.MODEL_SPECS.tiny)));
"""


@pytest.fixture(scope="session")
def tiny_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private copy of the generated tiny Qwen2 GGUF (random weights, Qwen's tokenizer)."""
    found = subprocess.run(
        ["node", "--conditions=clotho-source", "--import", "tsx", "-e", _GENERATE_TINY],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300, check=True,
    )
    source = Path(found.stdout.strip().splitlines()[-1])
    copy = tmp_path_factory.mktemp("model") / "tiny.gguf"
    shutil.copyfile(source, copy)
    return copy


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_engine(model: Path, weights_dir: Path, port: Optional[int] = None) -> tuple[Process, str]:
    """`clotho inference` on the model, taking new weights from ``weights_dir`` (which holds every trainer's save path);
    returns it and its base URL (without /v1)."""
    port = port or free_port()
    engine = Process(
        ["node", "bin/clotho.js", "inference", "--model", str(model), "--port", str(port), "--slots", "8", "--weights-dir", str(weights_dir)]
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: httpx.get(f"{url}/health", timeout=2).status_code == 200, timeout=120, what="clotho inference", interval=0.3)
    except BaseException:
        engine.print_tail()
        engine.stop()
        raise
    return engine, url


@dataclass
class Stack:
    """An engine, `clotho api` and `clotho serve lowercase` on one Temporal server and store: a trainer's world."""

    temporal_address: str
    store: Path
    model: Path
    engine_url: str = ""
    api_url: str = ""
    batcher_id: str = field(default_factory=lambda: f"py-test/trainer/{uuid.uuid4()}")
    processes: list[Process] = field(default_factory=list)

    def start_engine_and_api(self, *api_flags: str) -> None:
        # The trainers' save paths are beside the store, in the test's folder: the engine takes weights from there.
        engine, self.engine_url = start_engine(self.model, self.store.parent)
        self.processes.append(engine)
        api, self.api_url = start_api(self.temporal_address, self.store, "--batcher-id", self.batcher_id, *api_flags)
        self.processes.append(api)

    def start_serve(self, *extra: str) -> Process:
        env = {"TEMPORAL_ADDRESS": self.temporal_address, "TEMPORAL_NAMESPACE": "default"}
        serve = Process(
            ["node", "bin/clotho.js", "serve", "lowercase", "--batcher-id", self.batcher_id, "--store", str(self.store),
             "--openai.base_url", f"{self.engine_url}/v1", "--env.steps_per_eval", "0", *extra],
            env=env,
        )
        self.processes.append(serve)
        return serve

    def trainer(self, save_path: Path, *extra: str, inference_url: Optional[str] = None, env: Optional[dict[str, str]] = None) -> Process:
        args = [
            sys.executable, "-m", "clotho_client.training",
            "--model", str(self.model), "--save-path", str(save_path), "--atropos-url", self.api_url,
            "--weight-sync", "clotho", "--inference-url", inference_url or self.engine_url, *extra,
        ]
        trainer = Process(args, env={"TEMPORAL_ADDRESS": self.temporal_address, "PYTHONUNBUFFERED": "1", **(env or {})})
        self.processes.append(trainer)
        return trainer

    def stop(self) -> None:
        for process in reversed(self.processes):
            process.stop()
        terminate_workflow(self.temporal_address, self.batcher_id)

    def print_tails(self) -> None:
        for process in self.processes:
            process.print_tail(25)


@pytest.fixture
def stack(temporal_address: str, tmp_path: Path, tiny_gguf: Path) -> Iterator[Stack]:
    s = Stack(temporal_address=temporal_address, store=tmp_path / "store", model=tiny_gguf)
    try:
        yield s
    finally:
        s.print_tails()
        s.stop()


def metrics_of(save_path: Path) -> list[dict]:
    """The trainer's metrics, one dict per step: a step's lines merged (its figures, then its checkpoint and sync times),
    later lines winning (a step repeated after a crash logs again)."""
    by_step: dict[int, dict] = {}
    path = save_path / "metrics.jsonl"
    if path.is_file():
        for line in path.read_text().splitlines():
            row = json.loads(line)
            by_step.setdefault(row["step"], {}).update(row)
    return [by_step[k] for k in sorted(by_step)]


def results_dir() -> Optional[Path]:
    folder = os.environ.get("CLOTHO_TRAINER_RESULTS")
    return Path(folder) if folder else None


_READ_WANDB = """
const [{ readTransactionLog }, { decodeRecord }, fs] = await Promise.all([
  import('./src/cli/wandb/transaction-log.ts'), import('./src/cli/wandb/records.ts'), import('node:fs')]);
const records = readTransactionLog(fs.readFileSync(process.argv[1])).map(decodeRecord);
console.log(JSON.stringify(records));
"""


def wandb_records(run_file: Path) -> list[dict]:
    """The records of a W&B run's transaction log (``run-*.wandb``), decoded by Clotho's own reader."""
    found = subprocess.run(
        ["node", "--conditions=clotho-source", "--import", "tsx", "--input-type=module", "-e", _READ_WANDB, str(run_file)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, check=True,
    )
    return json.loads(found.stdout)


def kill_9(process: Process) -> None:
    os.killpg(process.popen.pid, signal.SIGKILL)
    process.popen.wait(30)
