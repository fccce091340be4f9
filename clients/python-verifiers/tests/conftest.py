import sys
from pathlib import Path

import pytest

ENVS = Path(__file__).parent / "envs"


@pytest.fixture
def envs() -> Path:
    """The verifiers-style environments written for these tests (and the TypeScript e2e tests)."""
    return ENVS


@pytest.fixture(autouse=True)
def clean_import_path():
    """Each test imports its environment from where it names it: no module or path left over from the one before."""
    before_path = list(sys.path)
    before_modules = set(sys.modules)
    yield
    sys.path[:] = before_path
    for name in set(sys.modules) - before_modules:
        if name.split(".")[0] in {"arith_env", "lookup_env", "workdir_env"}:
            del sys.modules[name]
