"""``<env>`` and verifiers' own flags into a built environment, as ``vf-eval`` builds it.

``<env>`` is an installed environment's id (the module ``prime env install`` or ``pip install`` puts in the venv, or a
Hub id ``owner/name@version``), a folder holding an environment's ``pyproject.toml``, or the path of an environment's
module or package. Every form becomes ``--env.taskset.id <id>``, so the flags, their parsing and every message are
verifiers' (``narrow_config`` and ``pydantic_config.cli``, as ``vf-eval`` runs them). A folder's own dependencies go
into a layer above the base venv (``layers.py``); its code is imported from the folder itself.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class EnvSpec:
    """What ``<env>`` names: the taskset id verifiers imports, and where from."""

    taskset_id: str
    """The id given to ``--env.taskset.id``."""
    paths: list[str] = field(default_factory=list)
    """Folders put first on ``sys.path`` so the id imports from them."""
    dependencies: list[str] = field(default_factory=list)
    """A folder's ``[project].dependencies`` besides verifiers: its layer."""


class ConfigRefused(Exception):
    """verifiers refused the flags (its own message), or Clotho refuses one it cannot honour."""


def resolve_spec(spec: str) -> EnvSpec:
    """``<env>`` as an id, a project folder, a package folder or a module file (paths are tried first)."""
    path = Path(spec)
    if path.is_dir() and (path / "pyproject.toml").is_file():
        project = tomllib.loads((path / "pyproject.toml").read_text()).get("project", {})
        name = project.get("name") or path.name
        source = path / "src" if (path / "src").is_dir() else path
        deps = [d for d in project.get("dependencies", []) if _requirement_name(d) != "verifiers"]
        return EnvSpec(name, [str(source.resolve())], deps)
    if path.is_dir() and (path / "__init__.py").is_file():
        return EnvSpec(path.resolve().name, [str(path.resolve().parent)])
    if path.is_file() and path.suffix == ".py":
        return EnvSpec(path.stem, [str(path.resolve().parent)])
    return EnvSpec(spec)


def _requirement_name(requirement: str) -> str:
    """A requirement's distribution name, normalized (``Verifiers[ta]>=0.4`` -> ``verifiers``)."""
    head = requirement.strip()
    for stop in "[<>=!~;@ ":
        head = head.split(stop, 1)[0]
    return head.lower().replace("_", "-")


def eval_argv(spec: EnvSpec, argv: list[str]) -> list[str]:
    """verifiers' argv for the environment: its id as ``--env.taskset.id`` (as ``vf-eval <id>`` makes it), then the flags."""
    return ["--env.taskset.id", spec.taskset_id, *argv]


def parse_config(argv: list[str]) -> Any:
    """An ``EvalConfig`` from verifiers' flags, parsed by verifiers: ``ConfigRefused`` with its message when it refuses them."""
    from pydantic_config import cli
    from pydantic_config.cli import ConfigFileError, _print_config_error_and_exit

    from verifiers.v1.cli.resolve import narrow_config, plugin_errors
    from verifiers.v1.configs.cli.eval import EvalConfig

    printed = io.StringIO()
    try:
        # Its help and its error box, as vf-eval prints them (plain: no colours), are what the user sees.
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
            with plugin_errors():
                try:
                    config = cli(narrow_config(EvalConfig, argv), args=argv, plain=True, prog="clotho process|serve|evaluate --verifiers <env>")
                except ConfigFileError as error:
                    # Given its args, the parser raises where vf-eval's (reading sys.argv) prints and exits.
                    _print_config_error_and_exit(error, plain=True, wide=False)
    except SystemExit as exit_:
        message = printed.getvalue().strip()
        detail = exit_.code if isinstance(exit_.code, str) else ""
        raise ConfigRefused("\n".join(part for part in (message, detail) if part) or "verifiers refused the flags") from None
    refuse_unsupported(config, argv)
    return config


def refuse_unsupported(config: Any, argv: list[str]) -> None:
    """Flags Clotho cannot honour, refused by name: its session renders every prompt, and it never uploads a run."""
    problems = []
    if config.client.type == "train":
        problems.append(
            "--client.type train: Clotho's session renders the policy's prompts itself (exact tokens with "
            "--openai.tokenizer_name); leave the client type eval"
        )
    if "--push" in argv:
        problems.append("--push: Clotho keeps the run in its store and Temporal; it uploads nothing to the platform")
    if config.run.attach:
        problems.append("--run.attach: Clotho keeps the run in its store and Temporal; it attaches to no platform run")
    if problems:
        raise ConfigRefused("\n".join(problems))


def share_path(paths: list[str], first: bool) -> None:
    """Puts ``paths`` on ``PYTHONPATH`` (first or last), so the processes verifiers starts import what this one does."""
    current = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p not in paths]
    os.environ["PYTHONPATH"] = os.pathsep.join([*paths, *current] if first else [*current, *paths])


def load(spec: EnvSpec, argv: list[str]) -> tuple[Any, Any]:
    """The parsed config and the environment verifiers builds from it (``load_environment``, as ``vf-eval`` calls it)."""
    for path in reversed(spec.paths):
        if path not in sys.path:
            sys.path.insert(0, path)
    # verifiers imports the environment in processes of its own too (a task's tool servers run `python -m <module>`).
    share_path(spec.paths, first=True)
    config = parse_config(eval_argv(spec, argv))
    from verifiers.v1.cli.resolve import plugin_errors
    from verifiers.v1.utils.loaders import load_environment

    try:
        with plugin_errors():
            env = load_environment(config.env)
    except SystemExit as exit_:
        raise ConfigRefused(str(exit_.code)) from None
    return config, env
