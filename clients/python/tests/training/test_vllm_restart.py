"""--weight-sync vllm-restart: a scripted "vllm serve" started by the restart command records its argv and what it
found in the model folder, and serves /health and /v1/models as vLLM does (the base card's root is the path served)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
import torch

import clotho_client
from clotho_client.training.config import TrainerConfig, parse_config
from clotho_client.training.vllm_restart import VllmRestartSync, _group_alive
from conftest import free_port
from scripted_vllm import ScriptedServer, tiny_model_folder, tiny_qwen2

SCRIPT = r'''
import json, os, signal, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

args = sys.argv[1:]
model = args[0]
opts = dict(zip(args[1::2], args[2::2]))
record = opts["--record"]
files = sorted(os.listdir(model)) if os.path.isdir(model) else []
def note(event, **extra):
    with open(record, "a") as out:
        out.write(json.dumps({"event": event, "pid": os.getpid(), "pgid": os.getpgid(0), **extra}) + "\n")
note("start", argv=args, files=files)
if "config.json" not in files:
    print(f"ValueError: no config.json in {model}", flush=True)
    sys.exit(3)
def on_term(*_):
    note("sigterm")
    if opts.get("--ignore-sigterm") != "1":
        os._exit(0)
signal.signal(signal.SIGTERM, on_term)
ready_at = time.monotonic() + float(opts.get("--ready-after", "0"))
name = opts.get("--served-model-name", model)

class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/health":
            status, body = (200, {}) if time.monotonic() >= ready_at else (503, {"error": "loading"})
        elif self.path == "/v1/models":
            status, body = 200, {"object": "list", "data": [{"id": name, "object": "model", "root": model, "parent": None}]}
        else:
            status, body = 404, {"detail": "Not Found"}
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def log_message(self, *_):
        pass

print("INFO: Uvicorn running", flush=True)
ThreadingHTTPServer(("127.0.0.1", int(opts["--port"])), Handler).serve_forever()
'''


class Setup:
    def __init__(self, tmp_path: Path) -> None:
        self.script = tmp_path / "fake_vllm.py"
        self.script.write_text(SCRIPT)
        self.record = tmp_path / "record.jsonl"
        self.port = free_port()
        self.base = tiny_model_folder(tmp_path / "base")
        self.save = tmp_path / "run"
        self.syncs: list[VllmRestartSync] = []

    def config(self, *flags: str, model: str = "", start_timeout: float = 30.0) -> TrainerConfig:
        command = f"{sys.executable} {self.script} {{model}} --port {self.port} --served-model-name policy --record {self.record} {' '.join(flags)}"
        return TrainerConfig(
            model=model or str(self.base), save_path=str(self.save), weight_sync="vllm-restart",
            inference_url=f"http://127.0.0.1:{self.port}/v1", vllm_restart_command=command, vllm_start_timeout=start_timeout,
        )

    def sync(self, *flags: str, stop_grace: float = 5.0, **kwargs: Any) -> VllmRestartSync:
        sync = VllmRestartSync(self.config(*flags, **kwargs), stop_grace=stop_grace, poll_interval=0.05)
        self.syncs.append(sync)
        return sync

    def events(self, kind: str = "") -> list[dict]:
        rows = [json.loads(line) for line in self.record.read_text().splitlines()] if self.record.is_file() else []
        return [r for r in rows if not kind or r["event"] == kind]

    def pid_record(self) -> dict:
        return json.loads((self.save / "vllm.pid").read_text())

    def stop_all(self) -> None:
        for sync in self.syncs:
            if sync.process is not None:
                sync._stop()
        if (self.save / "vllm.pid").is_file():
            try:
                os.killpg(self.pid_record()["pgid"], signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[Setup]:
    s = Setup(tmp_path)
    try:
        yield s
    finally:
        s.stop_all()


def alive(pgid: int) -> bool:
    """Whether a process of the group runs, zombies aside (an exited process stays one until init reaps it)."""
    return _group_alive(pgid)


def test_each_version_restarts_vllm_on_its_hugging_face_folder_once(setup: Setup) -> None:
    model = tiny_qwen2()
    sync = setup.sync()
    sync.serve_starting_weights(model, 0)
    (first,) = setup.events("start")
    assert first["argv"][:3] == [str(setup.base), "--port", str(setup.port)]  # version 0: --model's own folder
    assert first["pgid"] == setup.pid_record()["pgid"] != os.getpgid(0)  # a process group of its own, in the pid file

    with torch.no_grad():
        model.model.embed_tokens.weight.add_(1.0)
    sync.sync(model, 1)
    step1 = setup.save / "hf" / "step-1"
    second = setup.events("start")[1]
    assert second["argv"][0] == str(step1)
    assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} <= set(second["files"])
    assert (step1 / "tokenizer.json").read_text() == (setup.base / "tokenizer.json").read_text()
    assert [e["pid"] for e in setup.events("sigterm")] == [first["pid"]] and not alive(first["pgid"])
    assert setup.pid_record()["pgid"] == second["pgid"] and setup.pid_record()["model"] == str(step1)
    reloaded = type(model).from_pretrained(step1)
    assert torch.equal(reloaded.model.embed_tokens.weight, model.model.embed_tokens.weight)

    sync.sync(model, 1)  # the trainer's repeat after a restart: vLLM already serves step-1
    assert len(setup.events("start")) == 2

    sync.sync(model, 2)
    assert sorted(p.name for p in (setup.save / "hf").iterdir()) == ["step-2"]  # the served export only
    assert len(setup.events("start")) == 3 and len(setup.events("sigterm")) == 2


KILLED_TRAINER = """
import os, signal, sys
sys.path[:0] = {paths!r}
from clotho_client.training.config import TrainerConfig, parse_config
from clotho_client.training.vllm_restart import VllmRestartSync, _group_alive
from scripted_vllm import tiny_qwen2
VllmRestartSync(TrainerConfig(**{fields!r}), poll_interval=0.05).serve_starting_weights(tiny_qwen2(), 1)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_new_trainer_adopts_the_vllm_a_killed_one_left_running(setup: Setup) -> None:
    paths = [str(Path(clotho_client.__file__).parents[1]), str(Path(__file__).parent)]
    killed = subprocess.run([sys.executable, "-c", KILLED_TRAINER.format(paths=paths, fields=vars(setup.config()))], timeout=120)
    assert killed.returncode == -signal.SIGKILL
    (started,) = setup.events("start")  # its vLLM runs on, orphaned
    assert alive(started["pgid"]) and started["argv"][0] == str(setup.save / "hf" / "step-1")

    model = tiny_qwen2()
    adopter = setup.sync()
    adopter.serve_starting_weights(model, 1)
    assert len(setup.events("start")) == 1 and adopter.process is not None and adopter.process.pgid == started["pgid"]
    adopter.sync(model, 2)  # and it is the one stopped at the next version
    assert [e["pid"] for e in setup.events("sigterm")] == [started["pid"]] and not alive(started["pgid"])
    assert setup.events("start")[-1]["argv"][0] == str(setup.save / "hf" / "step-2")

    # A pid file naming a process that is not ours (a reused pid) is ignored, and a server it does not name refused.
    setup.stop_all()
    (setup.save / "vllm.pid").write_text(json.dumps({"pid": os.getpid(), "pgid": os.getpgid(0), "start_ticks": -1}))
    foreign = ScriptedServer({("GET", "/health"): lambda call: (200, {})})
    try:
        setup.port = int(foreign.url.rsplit(":", 1)[1])
        with pytest.raises(RuntimeError, match="not started by this trainer"):
            setup.sync().serve_starting_weights(model, 2)
        assert not (setup.save / "vllm.pid").exists()
    finally:
        foreign.close()


def test_a_gguf_model_is_served_as_an_export_with_its_tokenizer(setup: Setup, tmp_path: Path) -> None:
    tokenizer = setup.save / "hf" / "tokenizer"  # what transformers would export from the GGUF, made once
    tokenizer.mkdir(parents=True)
    (tokenizer / "tokenizer_config.json").write_text('{"from": "gguf"}')
    sync = setup.sync(model=str(tmp_path / "model.gguf"))
    sync.serve_starting_weights(tiny_qwen2(), 0)
    (start,) = setup.events("start")
    assert start["argv"][0] == str(setup.save / "hf" / "step-0") and "tokenizer_config.json" in start["files"]


def test_failures_to_start_or_stop_are_reported_with_vllm_output(setup: Setup) -> None:
    model = tiny_qwen2()
    broken = setup.config()
    broken = TrainerConfig(**{**vars(broken), "vllm_restart_command": broken.vllm_restart_command.replace("{model}", "{model}/missing")})
    with pytest.raises(RuntimeError, match=r"exited with code 3 before serving(.|\n)*no config.json"):
        VllmRestartSync(broken, poll_interval=0.05).sync(model, 0)

    started = time.monotonic()
    with pytest.raises(RuntimeError, match=r"did not answer GET .*/health with 200 within 1s(.|\n)*Uvicorn running"):
        setup.sync("--ready-after", "60", start_timeout=1.0).sync(model, 0)
    assert time.monotonic() - started < 15
    setup.stop_all()

    stubborn = setup.sync("--ignore-sigterm", "1", stop_grace=0.5)
    stubborn.sync(model, 0)
    pgid = setup.pid_record()["pgid"]
    stubborn.sync(model, 1)  # SIGTERM is ignored: SIGKILL after the grace period
    assert not alive(pgid) and setup.events("start")[-1]["argv"][0] == str(setup.save / "hf" / "step-1")

    with pytest.raises(ValueError, match=r"\{model\}"):
        VllmRestartSync(TrainerConfig(**{**vars(broken), "vllm_restart_command": "vllm serve /fixed"}))
    with pytest.raises(SystemExit):
        parse_config(["--model", "m", "--save-path", "s", "--weight-sync", "vllm-restart", "--inference-url", "http://h:8000", "--vllm-restart-command", "vllm serve m"])
