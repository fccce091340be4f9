"""Fixtures: a tiny tokenizer on disk (the tests reach no Hub), the fake OpenAI server, argv for the test envs."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Callable, Iterator

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("WANDB_MODE", "disabled")

HERE = Path(__file__).resolve().parent
ENVS = HERE / "envs"
sys.path.insert(0, str(HERE))

from openai_server import FakeOpenAI  # noqa: E402

from clotho_atropos.codec import set_item_key  # noqa: E402

#: The item key the tests' workers sign pickled items with, as a run's workers read it from its key file.
ITEM_KEY = b"a key of the tests' run"


@pytest.fixture(scope="session")
def tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The tiny tokenizer (``tiny_tokenizer.py``) in a folder of the session's."""
    from tiny_tokenizer import save_tiny_tokenizer

    return save_tiny_tokenizer(str(tmp_path_factory.mktemp("tokenizer")))


@pytest.fixture(scope="session")
def openai_server(tokenizer_dir: str) -> Iterator[FakeOpenAI]:
    server = FakeOpenAI(tokenizer=tokenizer_dir)
    yield server
    server.close()


@pytest.fixture
def flags(tokenizer_dir: str, openai_server: FakeOpenAI) -> Callable[..., list[str]]:
    """``flags("serve", "--env.group_size", "4")``: a mode and flags pointing at the tokenizer and the fake server."""

    def make(mode: str, *extra: str) -> list[str]:
        return [mode, "--env.tokenizer_name", tokenizer_dir, "--openai.base_url", openai_server.url, "--openai.model_name", "tiny", *extra]

    return make


@pytest.fixture(scope="session")
def temporal_address() -> Iterator[str]:
    """`TEMPORAL_ADDRESS` when set, else a dev server started as clients/python's tests start one (the project's CLI)."""
    external = os.environ.get("TEMPORAL_ADDRESS")
    if external:
        yield external
        return
    sys.path.insert(0, str(HERE.parents[1] / "python" / "tests"))
    from servers import start_temporal_dev_server, wait_until  # clients/python/tests/servers.py

    import asyncio

    from temporalio.client import Client

    server, address = start_temporal_dev_server()

    async def serving() -> bool:
        await Client.connect(address, namespace="default")
        return True

    try:
        wait_until(lambda: asyncio.run(serving()), timeout=120, what=f"the Temporal dev server on {address}", interval=0.5)
        yield address
    finally:
        server.stop()


@pytest.fixture(autouse=True)
def _in_a_scratch_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Atropos's process mode makes data/ in the working directory: keep it out of the checkout."""
    monkeypatch.chdir(tmp_path)


@pytest.fixture(autouse=True)
def _an_item_key() -> Iterator[None]:
    """This process signs and checks pickled items with ``ITEM_KEY``, as a worker of a run does."""
    set_item_key(ITEM_KEY)
    yield
    set_item_key(None)


@pytest.fixture
def item_key_file(tmp_path: Path) -> str:
    """``ITEM_KEY`` in a file of mode 0600, as the first command of a run writes it."""
    path = tmp_path / "atropos-item-key"
    path.write_bytes(ITEM_KEY)
    path.chmod(0o600)
    return str(path)
