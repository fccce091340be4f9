from pathlib import Path

import pytest

from clotho_atropos import EnvSpecError, load_env_class
from conftest import ENVS

TWO_ENVS = '''
from atroposlib.envs.base import BaseEnv

class FirstEnv(BaseEnv):
    async def get_next_item(self): return 1
    async def evaluate(self, *a, **k): pass

class SecondEnv(FirstEnv):
    pass
'''


def test_the_class_the_file_runs_under_main() -> None:
    # arithmetic_env.py defines two environments and runs ArithmeticEnv.cli() as a script.
    assert load_env_class(str(ENVS / "arithmetic_env.py")).__name__ == "ArithmeticEnv"


def test_a_named_class() -> None:
    assert load_env_class(f"{ENVS / 'arithmetic_env.py'}:CheckpointedArithmeticEnv").__name__ == "CheckpointedArithmeticEnv"


def test_the_only_class() -> None:
    assert load_env_class(str(ENVS / "flaky_env.py")).__name__ == "FlakyEnv"


def test_several_classes_are_listed(tmp_path: Path) -> None:
    path = tmp_path / "two_envs.py"
    path.write_text(TWO_ENVS)
    with pytest.raises(EnvSpecError) as error:
        load_env_class(str(path))
    assert "several BaseEnv subclasses" in str(error.value)
    assert "FirstEnv (line 4), SecondEnv (line 8)" in str(error.value)
    assert f"{path}:<class>" in str(error.value)


def test_a_missing_class_or_file(tmp_path: Path) -> None:
    with pytest.raises(EnvSpecError, match="no BaseEnv subclass named Nope; it has ArithmeticEnv"):
        load_env_class(f"{ENVS / 'arithmetic_env.py'}:Nope")
    with pytest.raises(EnvSpecError, match="no such file"):
        load_env_class(str(tmp_path / "absent.py"))
