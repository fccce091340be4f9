"""``--weight-sync vllm-restart``: each synced version as a Hugging Face folder, served by a vLLM the trainer restarts.

The trainer owns the vLLM it starts: ``--vllm-restart-command`` runs in a process group of its own, recorded in
``<save_path>/vllm.pid`` (pid, group, start time) with its output appended to ``<save_path>/vllm.log``. A sync stops
that group (SIGTERM, SIGKILL after a grace period) and starts the command on ``<save_path>/hf/step-<n>``.

vLLM outlives the trainer: a trainer that exits, or is killed, leaves it serving. The next trainer on the same
``--save-path`` adopts it (same pid, group and start time), so a restart after a crash reloads the model only when
it serves another version than the trainer's; stop it by hand with ``kill -TERM -<pgid>``. A server that answers at
``--inference-url`` but is not in the pid file is refused: this mode must be the one that starts vLLM.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import torch

from .config import TrainerConfig
from .vllm_http import Retry, VllmServer

log = logging.getLogger("clotho_client.training")

#: Health and model probes are polled by the restart loop itself.
_NO_RETRY = Retry(attempts=1)

#: Files of a Hugging Face model folder that make up its tokenizer (and chat template), copied beside each export.
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "tokenizer.model",
    "vocab.json",
    "vocab.txt",
    "merges.txt",
    "chat_template.jinja",
    "chat_template.json",
)


@dataclass
class _Managed:
    pid: int
    pgid: int
    popen: Optional[subprocess.Popen] = None  # None when adopted from an earlier trainer

    def alive(self) -> bool:
        if self.popen is not None:
            self.popen.poll()  # reaps the leader
        return _group_alive(self.pgid)

    def exit_code(self) -> Optional[int]:
        return self.popen.poll() if self.popen is not None else None


def _group_alive(pgid: int) -> bool:
    """Whether a process of the group runs. On Linux zombies do not count: an adopted group's leader is reaped by
    whoever inherited it, if ever."""
    proc = Path("/proc")
    if proc.is_dir():
        for stat in proc.glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
                return True
        return False
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _is_ours(pid: int, pgid: int, start_ticks: object) -> bool:
    """Whether the recorded group still runs the command we started. A live group's id is never given to a new
    process, so with its leader gone the group is still ours; a leader's pid, once free, can be, which its start time
    tells apart."""
    if not _group_alive(pgid):
        return False
    if Path("/proc").is_dir():
        ticks = _start_ticks(pid)
        return ticks is None or ticks == start_ticks
    try:
        return os.getpgid(pid) == pgid
    except ProcessLookupError:
        return True


def _start_ticks(pid: int) -> Optional[int]:
    """The process's start time in clock ticks after boot (Linux), which a reused pid does not share."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


class VllmRestartSync:
    """Serves each version by restarting vLLM on its Hugging Face export."""

    def __init__(self, config: TrainerConfig, *, stop_grace: float = 30.0, poll_interval: float = 0.5) -> None:
        command = config.vllm_restart_command or ""
        if "{model}" not in command:
            raise ValueError("--vllm-restart-command must contain {model}, which the trainer replaces by the checkpoint folder")
        self.command = command
        self.model_source = config.model
        self.save_path = Path(config.save_path).resolve()
        self.folder = self.save_path / "hf"
        self.pid_file = self.save_path / "vllm.pid"
        self.log_path = self.save_path / "vllm.log"
        self.start_timeout = config.vllm_start_timeout
        self.stop_grace = stop_grace
        self.poll_interval = poll_interval
        self.server = VllmServer(config.inference_url or "", retry=_NO_RETRY)
        self.process: Optional[_Managed] = None
        self.folder.mkdir(parents=True, exist_ok=True)

    # --- the WeightSync protocol --------------------------------------------------------------------------

    def serve_starting_weights(self, model: torch.nn.Module, version: int) -> None:
        """Adopts the vLLM an earlier trainer left running, or starts one, on the weights the trainer starts from."""
        self.process = self._adopt()
        if self.process is None and self.server.healthy():
            raise RuntimeError(
                f"a server answers at {self.server.url} but was not started by this trainer (no live process in {self.pid_file}): "
                "with --weight-sync vllm-restart the trainer starts and restarts vLLM itself; stop that server first"
            )
        self.sync(model, version)

    def sync(self, model: torch.nn.Module, version: int) -> None:
        target = self._target(version)
        if self._serving(target):
            return
        if target.parent == self.folder:
            self._export(model, target)
        self._stop()
        self._start(target)
        for old in self.folder.glob("step-*"):
            if old != target:
                shutil.rmtree(old, ignore_errors=True)

    # --- weights on disk ----------------------------------------------------------------------------------

    def _target(self, version: int) -> Path:
        """The folder vLLM serves for ``version``: ``--model`` itself for version 0 when it is a Hugging Face folder."""
        source = Path(self.model_source)
        if version == 0 and source.is_dir():
            return source.resolve()
        return self.folder / f"step-{version}"

    def _export(self, model: torch.nn.Module, target: Path) -> None:
        if (target / "config.json").is_file():
            return  # renamed into place only when whole: a crash mid-export leaves the temporary folder behind
        tmp = target.with_name(f".{target.name}.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(target, ignore_errors=True)
        started = time.perf_counter()
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer = self._tokenizer_folder()
        if tokenizer is not None:
            for name in TOKENIZER_FILES:
                if (tokenizer / name).is_file():
                    shutil.copyfile(tokenizer / name, tmp / name)
        os.replace(tmp, target)
        log.info("wrote %s in %.1fs", target, time.perf_counter() - started)

    def _tokenizer_folder(self) -> Optional[Path]:
        """Where the tokenizer files come from: ``--model``'s folder, or (a GGUF, a repo id) transformers' export of
        its tokenizer, made once into ``hf/tokenizer``."""
        source = Path(self.model_source)
        if source.is_dir():
            return source
        cache = self.folder / "tokenizer"
        if (cache / "tokenizer_config.json").is_file():
            return cache
        from transformers import AutoTokenizer

        try:
            if source.suffix.lower() == ".gguf":
                tokenizer = AutoTokenizer.from_pretrained(str(source.parent), gguf_file=source.name)
            else:
                tokenizer = AutoTokenizer.from_pretrained(self.model_source)
        except Exception as error:  # noqa: BLE001 - any failure means the same: no tokenizer to ship
            log.warning("no tokenizer written beside the exported weights (%s): give vLLM --tokenizer in the restart command", error)
            return None
        tmp = self.folder / ".tokenizer.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tokenizer.save_pretrained(str(tmp))
        shutil.rmtree(cache, ignore_errors=True)
        os.replace(tmp, cache)
        return cache

    # --- the vLLM process ---------------------------------------------------------------------------------

    def _serving(self, target: Path) -> bool:
        if self.process is None or not self.process.alive():
            return False
        try:
            self._wait_healthy()
            roots = self.server.served_roots()
        except RuntimeError as error:
            log.warning("the running vLLM is not usable (%s); restarting it", error)
            return False
        return str(target) in {_normalise(root) for root in roots.values()}

    def _adopt(self) -> Optional[_Managed]:
        try:
            record = json.loads(self.pid_file.read_text())
            pid, pgid = int(record["pid"]), int(record["pgid"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if not _is_ours(pid, pgid, record.get("start_ticks")):
            log.info("%s names no running vLLM of this trainer; ignoring it", self.pid_file)
            self.pid_file.unlink(missing_ok=True)
            return None
        log.info("adopting vLLM pid %d (serving %s), started by an earlier trainer", pid, record.get("model"))
        return _Managed(pid, pgid)

    def _start(self, target: Path) -> None:
        command = self.command.replace("{model}", shlex.quote(str(target)))
        with open(self.log_path, "ab") as out:
            out.write(f"\n--- {time.strftime('%Y-%m-%d %H:%M:%S')} clotho trainer starts: {command}\n".encode())
            out.flush()
            popen = subprocess.Popen(
                command, shell=True, start_new_session=True, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT
            )
        self.process = _Managed(popen.pid, popen.pid, popen)
        record = {"pid": popen.pid, "pgid": popen.pid, "start_ticks": _start_ticks(popen.pid), "command": command, "model": str(target)}
        tmp = self.pid_file.with_name(".vllm.pid.tmp")
        tmp.write_text(json.dumps(record))
        os.replace(tmp, self.pid_file)
        started = time.perf_counter()
        self._wait_healthy()
        roots = self.server.served_roots()
        if str(target) not in {_normalise(root) for root in roots.values()}:
            raise RuntimeError(
                f"vLLM started by `{command}` serves {sorted(str(r) for r in roots.values())}, not {target}: "
                "does --vllm-restart-command pass {model} to vllm serve?"
            )
        if any(name == str(target) for name in roots):
            log.warning("vLLM serves the model under its path, which changes at each restart: add --served-model-name to the restart command")
        log.info("vLLM serves %s (pid %d, up in %.1fs)", target, popen.pid, time.perf_counter() - started)

    def _wait_healthy(self) -> None:
        assert self.process is not None
        deadline = time.monotonic() + self.start_timeout
        while True:
            if not self.process.alive():
                code = self.process.exit_code()
                raise RuntimeError(f"vLLM exited{'' if code is None else f' with code {code}'} before serving; its output ({self.log_path}):\n{self._log_tail()}")
            if self.server.healthy():
                return
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"vLLM (pid {self.process.pid}) did not answer GET {self.server.url}/health with 200 within {self.start_timeout:.0f}s "
                    f"(--vllm-start-timeout); is --inference-url the port the restart command serves on? Its output ({self.log_path}):\n{self._log_tail()}"
                )
            time.sleep(self.poll_interval)

    def _stop(self) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        for sig, wait in ((signal.SIGTERM, self.stop_grace), (signal.SIGKILL, 30.0)):
            try:
                os.killpg(process.pgid, sig)
            except ProcessLookupError:
                break
            deadline = time.monotonic() + wait
            while process.alive() and time.monotonic() < deadline:
                time.sleep(0.05)
            if not process.alive():
                break
            log.warning("vLLM (process group %d) still running %.0fs after %s", process.pgid, wait, sig.name)
        else:
            raise RuntimeError(f"vLLM (process group {process.pgid}) survived SIGKILL")
        self.pid_file.unlink(missing_ok=True)

    def _log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no output)"


def _normalise(root: object) -> str:
    text = str(root)
    return str(Path(text).resolve()) if os.path.isabs(text) else text
