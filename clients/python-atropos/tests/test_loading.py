import json
import os
import re
import subprocess
import sys
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


def test_a_missing_module_is_named_with_the_way_to_add_it(flags, tmp_path) -> None:
    """instruction_following needs langdetect: the worker names the module and the commands of a layer venv, which work."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    describe = ["-m", "clotho_atropos", "describe", str(ENVS / "missing_module_env.py"), *flags("process")]
    failed = subprocess.run([sys.executable, *describe], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert failed.returncode == 2 and "Traceback" not in failed.stderr, failed.stderr[-2000:]
    assert re.search(r"clotho-atropos: the environment imports the Python module 'clotho_test_missing_module' at missing_module_env.py:\d+, "
                     r"which the worker's Python \(.+\) does not have", failed.stderr)
    # The advice, as a script: a venv layered on this one, the module installed there, CLOTHO_ATROPOS_PYTHON naming it.
    script = [line[2:] for line in failed.stderr.splitlines() if line.startswith("  ")]
    layer = tmp_path / "layer"
    assert script[0].startswith("LAYER=") and script[3] == '"$LAYER/bin/python" -m pip install clotho_test_missing_module'
    assert script[-1] == 'export CLOTHO_ATROPOS_PYTHON="$LAYER/bin/python"'
    # No index to install from here: the module is put where pip would put it.
    script[0] = f"LAYER={layer}"
    script[3] = '"$LAYER/bin/python" -c \'import sysconfig; print(sysconfig.get_paths()["purelib"])\' > purelib'
    subprocess.run(["bash", "-euc", "\n".join([*script, 'echo "$CLOTHO_ATROPOS_PYTHON" > python'])], cwd=tmp_path, check=True)
    (Path((tmp_path / "purelib").read_text().strip()) / "clotho_test_missing_module.py").write_text("def detect(text): return 'en'\n")
    layered = (tmp_path / "python").read_text().strip()
    assert layered == str(layer / "bin" / "python")
    described = subprocess.run([layered, *describe], capture_output=True, text=True, env=env, cwd=tmp_path, check=True)
    assert json.loads(described.stdout.splitlines()[-1])["className"] == "MissingModuleEnv"
