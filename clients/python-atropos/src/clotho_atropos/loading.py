"""Finds the ``BaseEnv`` subclass an Atropos environment file defines: ``path/to/env.py[:ClassName]``."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import os
import shlex
import sys
import sysconfig
import traceback
from pathlib import Path
from types import ModuleType
from typing import Optional

from atroposlib.envs.base import BaseEnv


class EnvSpecError(ValueError):
    """The spec names no file, no class, or a class that is not one ``BaseEnv`` subclass."""


def parse_spec(spec: str) -> tuple[Path, Optional[str]]:
    """Splits ``env.py:ClassName`` (the class is optional) into the file and the class name."""
    path, sep, name = spec.rpartition(":")
    if sep and name.isidentifier() and path:
        return Path(path), name
    return Path(spec), None


def load_env_class(spec: str) -> type[BaseEnv]:
    """Imports the file as ``python env.py`` would see it and returns the environment class.

    The file's folder goes on ``sys.path`` (scripts import their siblings that way) and the module is
    registered under its file name, so a sibling importing it gets the same classes. Without a class
    name the file must define one concrete ``BaseEnv`` subclass, or call ``X.cli()`` under
    ``if __name__ == "__main__"`` for exactly one of them; otherwise the error lists the candidates.
    """
    path, name = parse_spec(spec)
    if not path.is_file():
        raise EnvSpecError(f"{spec}: no such file {path}")
    module = _import_file(path.resolve())
    if name is not None:
        found = getattr(module, name, None)
        if not (inspect.isclass(found) and issubclass(found, BaseEnv)):
            raise EnvSpecError(f"{spec}: {path} has no BaseEnv subclass named {name}; it has {_listing(_candidates(module)) or 'none'}")
        return found
    candidates = _candidates(module)
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        raise EnvSpecError(f"{spec}: {path} defines no concrete BaseEnv subclass")
    called = [c for c in candidates if c.__name__ in _classes_called_by_main(path)]
    if len(called) == 1:
        return called[0]
    raise EnvSpecError(f"{spec}: {path} has several BaseEnv subclasses; name one as {path}:<class>: {_listing(candidates)}")


def _import_file(path: Path) -> ModuleType:
    name = path.stem
    loaded = sys.modules.get(name)
    if loaded is not None and Path(getattr(loaded, "__file__", "") or "").resolve() == path:
        return loaded
    if loaded is not None:
        raise EnvSpecError(f"{path}: a module named {name!r} is already imported from {getattr(loaded, '__file__', None)}; rename the file")
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _candidates(module: ModuleType) -> list[type[BaseEnv]]:
    """Concrete subclasses defined in the file; imported ones when it defines none (a file that only runs one)."""
    classes = [c for c in vars(module).values() if inspect.isclass(c) and issubclass(c, BaseEnv) and not inspect.isabstract(c)]
    own = [c for c in classes if c.__module__ == module.__name__]
    return sorted(own or classes, key=_line)


def _line(cls: type) -> int:
    try:
        return inspect.getsourcelines(cls)[1]
    except (OSError, TypeError):
        return 0


def _listing(classes: list[type[BaseEnv]]) -> str:
    return ", ".join(f"{c.__name__} (line {_line(c)})" if c.__module__ != "atroposlib.envs.base" else c.__name__ for c in classes)


def _classes_called_by_main(path: Path) -> set[str]:
    """Names ``X`` of the ``X.cli()`` calls under ``if __name__ == "__main__":``."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test) and "__name__" in ast.unparse(node.test):
            for call in ast.walk(node):
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "cli":
                    if isinstance(call.func.value, ast.Name):
                        names.add(call.func.value.id)
    return names


def missing_module(error: ModuleNotFoundError) -> str:
    """What to tell someone whose environment imports a module the worker's Python lacks: its name, and how to add
    it to that Python in a layer over it (a venv that sees every package of this one through a ``.pth`` file, so
    Clotho reinstalling its own venv leaves it be), named by ``CLOTHO_ATROPOS_PYTHON``."""
    name = (error.name or str(error)).split(".")[0]
    python = sys.executable
    frames = [f for f in traceback.extract_tb(error.__traceback__) if not f.filename.startswith("<")]
    at = f" at {os.path.basename(frames[-1].filename)}:{frames[-1].lineno}" if frames else ""
    said = f"the environment imports the Python module {name!r}{at}, which the worker's Python ({python}) does not have"
    if sys.prefix == sys.base_prefix:  # not a venv: the user's own Python
        return f"{said}; install it there ({shlex.quote(python)} -m pip install {name}; its pip package may be named otherwise)"
    layer = os.path.join(os.path.dirname(sys.prefix), "atropos-layer")
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    lines = [
        f"LAYER={shlex.quote(layer)}",
        f'{shlex.quote(python)} -m venv --without-pip "$LAYER"',
        f'echo {shlex.quote(sysconfig.get_paths()["purelib"])} > "$LAYER/lib/{version}/site-packages/clotho-atropos-base.pth"',
        f'"$LAYER/bin/python" -m pip install {name}',
        'export CLOTHO_ATROPOS_PYTHON="$LAYER/bin/python"',
    ]
    return (
        f"{said}. Add it in a venv layered on that one (it sees all of its packages, and stays when Clotho reinstalls "
        f"its own; the pip package may be named otherwise), then run Clotho with CLOTHO_ATROPOS_PYTHON naming it:\n"
        + "\n".join(f"  {line}" for line in lines)
    )
