"""Real processes for the integration tests: a Temporal dev server and `clotho api`, cleaned up on exit."""

from __future__ import annotations

import asyncio
import json
import os
import queue
import re
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable, Optional

from temporalio.client import Client
from temporalio.service import RPCError

# The checkout whose `clotho` CLI the tests run; CLOTHO_REPO_ROOT points them at another one.
REPO_ROOT = Path(os.environ.get("CLOTHO_REPO_ROOT") or Path(__file__).resolve().parents[3]).resolve()

# Gets the project's `temporal` binary and the dev server arguments it uses (search attributes, no
# calls home), with a free port, in one node start.
_DEV_SERVER_SCRIPT = """
import('./temporal-dev/index.ts').then(async (m) => {
  const cli = await m.ensureTemporalCli();
  const port = await m.freePort('127.0.0.1');
  const args = m.devServerArgs({ ip: '127.0.0.1', port, uiPort: 0, headless: true, dbFilename: null, namespace: 'default' });
  console.log(JSON.stringify({ cli, port, args }));
});
"""


class Process:
    """A child in its own process group, its output collected by a thread; `stop()` ends the whole group."""

    def __init__(self, args: list[str], env: Optional[dict[str, str]] = None, cwd: Path = REPO_ROOT) -> None:
        self.args = args
        self.popen = subprocess.Popen(
            args,
            cwd=cwd,
            env={**os.environ, **(env or {})},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.lines: list[str] = []
        self._new_lines: "queue.Queue[str]" = queue.Queue()
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        assert self.popen.stdout is not None
        for line in self.popen.stdout:
            self.lines.append(line.rstrip("\n"))
            self._new_lines.put(line)

    def wait_for_line(self, pattern: str, timeout: float) -> re.Match[str]:
        """The first output line matching `pattern`; fails if the process exits or time runs out first."""
        deadline = time.monotonic() + timeout
        regex = re.compile(pattern)
        for line in list(self.lines):
            if match := regex.search(line):
                return match
        while time.monotonic() < deadline:
            try:
                line = self._new_lines.get(timeout=0.2)
            except queue.Empty:
                if self.popen.poll() is not None:
                    break
                continue
            if match := regex.search(line):
                return match
        raise RuntimeError(f"{self.args[:3]} printed no line matching {pattern!r}; output:\n" + "\n".join(self.lines[-30:]))

    def print_tail(self, lines: int = 40) -> None:
        """Prints the last output lines; pytest shows them with a failed test."""
        print(f"--- last output of {' '.join(self.args[:3])} ---", *self.lines[-lines:], sep="\n")

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM to the group, SIGKILL if it has not exited within `timeout`; waits for the exit."""
        if self.popen.poll() is None:
            _signal_group(self.popen.pid, signal.SIGTERM)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                _signal_group(self.popen.pid, signal.SIGKILL)
                self.popen.wait(timeout)
        # Children of the group (esbuild under tsx) may outlive the leader.
        _signal_group(self.popen.pid, signal.SIGKILL)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def wait_until(condition: Callable[[], object], timeout: float, what: str, interval: float = 0.1) -> object:
    """Polls `condition` until it returns something truthy; exceptions count as not yet."""
    deadline = time.monotonic() + timeout
    last_error: Optional[BaseException] = None
    while time.monotonic() < deadline:
        try:
            value = condition()
            if value:
                return value
        except Exception as error:  # noqa: BLE001 - retried until the deadline
            last_error = error
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout}s waiting for {what}" + (f" (last error: {last_error})" if last_error else ""))


def start_temporal_dev_server() -> tuple[Process, str]:
    """Starts an in-memory dev server on a free port with the project's CLI; returns it and its address."""
    found = subprocess.run(
        ["node", "--import", "tsx", "-e", _DEV_SERVER_SCRIPT],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    spec = json.loads(found.stdout.strip().splitlines()[-1])
    server = Process([spec["cli"], *spec["args"]])
    return server, f"127.0.0.1:{spec['port']}"


def start_api(temporal_address: str, store: Path, *extra: str, token: Optional[str] = None) -> tuple[Process, str]:
    """Starts `clotho api --port 0` against `temporal_address`; returns it and the URL it printed."""
    env = {"TEMPORAL_ADDRESS": temporal_address, "TEMPORAL_NAMESPACE": "default"}
    if token is not None:
        env["CLOTHO_API_TOKEN"] = token
    api = Process(["node", "bin/clotho.js", "api", "--port", "0", "--store", str(store), *extra], env=env)
    try:
        url = api.wait_for_line(r"listening on (http://\S+)", timeout=120).group(1)
    except BaseException:
        api.stop()
        raise
    return api, url


def terminate_workflow(address: str, workflow_id: str) -> None:
    """Ends a test's batcher workflow, so a shared Temporal server (`TEMPORAL_ADDRESS`) keeps no leftovers."""

    async def terminate() -> None:
        client = await Client.connect(address, namespace="default")
        try:
            await client.get_workflow_handle(workflow_id).terminate("test finished")
        except RPCError:
            pass  # never started, or already closed

    asyncio.run(terminate())
