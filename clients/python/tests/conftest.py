"""Fixtures: one Temporal dev server per session (or `TEMPORAL_ADDRESS`), `clotho api` processes on it."""

from __future__ import annotations

import asyncio
import gc
import os
import uuid
from pathlib import Path
from typing import Iterator

import pytest
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import Client

from servers import start_api, start_temporal_dev_server, terminate_workflow, wait_until


async def _serving(address: str) -> bool:
    client = await Client.connect(address, namespace="default")
    await client.workflow_service.describe_namespace(DescribeNamespaceRequest(namespace="default"))
    return True


@pytest.fixture(scope="session")
def temporal_address() -> Iterator[str]:
    """`TEMPORAL_ADDRESS` when set (as the project's vitest setup does), else a fresh in-memory dev server."""
    external = os.environ.get("TEMPORAL_ADDRESS")
    if external:
        yield external
        return
    server, address = start_temporal_dev_server()
    try:
        wait_until(lambda: asyncio.run(_serving(address)), timeout=120, what=f"the Temporal dev server on {address}", interval=0.5)
        yield address
    finally:
        server.stop()


@pytest.fixture(scope="session")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One store for every API process: batcher workers share a task queue, so any of them may run any batcher's activities."""
    return tmp_path_factory.mktemp("store")


@pytest.fixture(scope="module")
def http_api(temporal_address: str, store_dir: Path) -> Iterator[str]:
    """`clotho api` (trainers pull `GET /batch`) with its own batcher; yields its URL."""
    batcher_id = f"py-test/http/{uuid.uuid4()}"
    api, url = start_api(temporal_address, store_dir, "--batcher-id", batcher_id)
    try:
        yield url
    finally:
        api.stop()
        api.print_tail()
        terminate_workflow(temporal_address, batcher_id)


def pytest_unconfigure(config: pytest.Config) -> None:
    # Temporal clients hold native objects; released now rather than while the interpreter shuts down,
    # when their threads could abort the process (see clotho_client.trainer.run_trainer_worker).
    gc.collect()
