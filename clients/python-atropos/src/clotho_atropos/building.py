"""Builds an environment from Atropos-style argv exactly as ``python env.py <mode> ...`` would.

Atropos's CLI (``BaseEnv.cli()``: pydantic-cli subcommands made by ``get_cli_{serve,process,evaluate}_config_cls``)
merges ``config_init()`` defaults, the YAML of ``--config`` and the ``--env.*``/``--openai.*``/``--slurm``/
``--testing`` flags, which it re-reads from ``sys.argv``, then constructs the class and hands the object to a
manager coroutine (``env_manager``, ``process_manager`` or ``_run_evaluate``). Rather than re-implementing
that, ``build_env`` runs ``cls.cli()`` itself with ``sys.argv`` set to the given argv and the three manager
methods replaced, for the duration of the call, by one that keeps the object and returns. Same flags, same
names, types, defaults, precedence, error messages and ``--help``; the object is the one Atropos would run.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import os
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

import atroposlib.envs.base as atropos_base
from atroposlib.envs.base import BaseEnv
from atroposlib.envs.server_handling.server_baseline import APIServerConfig, ServerBaseline
from atroposlib.utils.cli import extract_namespace, merge_dicts

from .proxy import keep_proxy_state_current

#: The subcommands of Atropos's CLI and the coroutine each one runs the environment with.
MANAGERS = {"serve": "env_manager", "process": "process_manager", "evaluate": "_run_evaluate"}

# sys.argv and the class attributes are process-wide: one build at a time.
_lock = threading.Lock()


class BuildError(RuntimeError):
    """Atropos's CLI refused the arguments (its message is in ``output``) or never built the environment."""

    def __init__(self, message: str, exit_code: int, output: str) -> None:
        super().__init__(message)
        self.exit_code = exit_code
        self.output = output


@dataclass
class BuiltEnv:
    """An environment object as Atropos's CLI made it, and the subcommand it was made for."""

    env: BaseEnv
    mode: str
    argv: list[str]


def build_env(
    env_cls: type[BaseEnv],
    argv: list[str],
    prog: str = "env.py",
    keep_jsonl: bool = False,
    honour_openai_flags: bool = True,
) -> Optional[BuiltEnv]:
    """Parses ``argv`` (``["serve", "--env.group_size", "4", ...]``) with the class's own CLI and returns the object.

    Returns None when the arguments asked for help (printed to stdout, as Atropos prints it). Raises
    ``BuildError`` when the CLI exits otherwise (usage errors, exit code 2). Exceptions raised while the
    config is merged or the class is constructed (a missing tokenizer, a bad YAML) propagate as they are.

    Must not be called from a running event loop (the CLI would try to run the manager on it): call it
    before starting one, or in a thread (``asyncio.to_thread``).

    In ``process`` mode the constructor opens ``--env.data_path_to_save_groups`` for writing; unless
    ``keep_jsonl``, that writer is closed and the file removed when still empty, since Clotho writes the
    JSONL itself (``env.config.data_path_to_save_groups`` keeps the path Atropos chose).

    With ``ATROPOS_PROXY_URL`` set, the environment's ``get_state()`` answers the proxy session's nodes after each
    ``chat_completion`` (``proxy.keep_proxy_state_current``), as from a ``ManagedServer``.

    ``honour_openai_flags`` departs from Atropos in one place. When ``config_init`` returns one
    ``APIServerConfig`` rather than a list (``gsm8k_server.py`` does), or a ``ServerBaseline``, Atropos's
    ``ServerManager`` is handed a non-list and replaces it with four servers on ``localhost:9004-9007``,
    ignoring ``--openai.base_url`` (and, for a baseline under ``process``/``evaluate``, every ``--openai.*``).
    With the option (the default) the merged config is handed over as a one-element list, so the servers
    are the ones the flags name; without it the environment gets exactly what Atropos would give it.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise RuntimeError("build_env runs Atropos's CLI, which cannot run on an event loop: call it before one, or in asyncio.to_thread")
    if not argv or argv[0] not in MANAGERS and argv[0] not in ("-h", "--help"):
        raise BuildError(f"expected one of {', '.join(MANAGERS)} first, got {argv[:1]}", 2, "")
    built: list[BaseEnv] = []

    async def keep(self: BaseEnv) -> None:
        built.append(self)

    stderr = io.StringIO()
    # Atropos's error handler logs the usage error's message rather than printing it; Python shows it on stderr when
    # logging is unconfigured, so it goes there (and into the buffer) through the tee as well.
    log_capture = logging.StreamHandler(_CurrentStderr())
    log_capture.setLevel(logging.ERROR)
    with _lock:
        saved_argv, saved_resolve = sys.argv, atropos_base.resolve_openai_configs
        patched = {name: env_cls.__dict__.get(name) for name in MANAGERS.values()}
        try:
            sys.argv = [prog, *argv]
            for name in MANAGERS.values():
                setattr(env_cls, name, keep)
            if honour_openai_flags:
                atropos_base.resolve_openai_configs = _as_list(saved_resolve)
            # The CLI prints the merged configs with rich (stdout), which may be a protocol channel; help stays there.
            asks_help = any(arg in ("-h", "--help") for arg in argv)
            atropos_base.logger.addHandler(log_capture)
            with contextlib.redirect_stdout(sys.stdout if asks_help else sys.stderr), _tee_stderr(stderr):
                env_cls.cli()
            exit_code = 0
        except SystemExit as exit_:
            exit_code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
        finally:
            sys.argv = saved_argv
            atropos_base.logger.removeHandler(log_capture)
            atropos_base.resolve_openai_configs = saved_resolve
            for name, original in patched.items():
                if original is None:
                    delattr(env_cls, name)
                else:
                    setattr(env_cls, name, original)
    if exit_code != 0:
        raise BuildError(f"{prog} {' '.join(argv)}: Atropos's CLI exited with code {exit_code}\n{stderr.getvalue()[-2000:]}", exit_code, stderr.getvalue())
    if not built:
        return None
    env = built[0]
    keep_proxy_state_current()
    if not keep_jsonl:
        _drop_jsonl_writer(env)
    return BuiltEnv(env=env, mode=argv[0], argv=list(argv))


def _as_list(resolve: Callable[..., Any]) -> Callable[..., Any]:
    """Wraps Atropos's ``resolve_openai_configs`` so that a single server config arrives as a list of one."""

    def resolved(default_server_configs: Any, openai_config_dict: dict, yaml_config: dict, cli_passed_flags: dict, logger: Any) -> Any:
        configs = resolve(default_server_configs, openai_config_dict, yaml_config, cli_passed_flags, logger)
        if isinstance(configs, APIServerConfig):
            return [_with_key(configs)]
        yaml_openai = yaml_config.get("openai") or {}
        if isinstance(yaml_openai, list) and len(yaml_openai) == 1:
            yaml_openai = yaml_openai[0]
        flags = extract_namespace(cli_passed_flags, "openai.")
        if isinstance(configs, ServerBaseline) and (flags or yaml_openai):
            # Atropos's serve converts a baseline the same way (its values, then YAML, then flags).
            return [_with_key(APIServerConfig(**merge_dicts(configs.model_dump(), yaml_openai if isinstance(yaml_openai, dict) else {}, flags)))]
        return configs

    return resolved


def _with_key(config: APIServerConfig) -> APIServerConfig:
    # The openai client refuses an empty key; the servers Atropos would have used instead get "x".
    return config if config.api_key else config.model_copy(update={"api_key": "x"})


def _drop_jsonl_writer(env: BaseEnv) -> None:
    writer = getattr(env, "jsonl_writer", None)
    if writer is None:
        return
    writer.close()
    env.jsonl_writer = None
    path = env.config.data_path_to_save_groups
    if path and os.path.exists(path) and os.path.getsize(path) == 0:
        Path(path).unlink()


class _CurrentStderr(io.TextIOBase):
    """Whatever ``sys.stderr`` is when written to (the tee below, while the CLI runs)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


class _tee_stderr:
    """Copies what is written to stderr into a buffer too (argparse's usage errors), still showing it."""

    def __init__(self, buffer: io.StringIO) -> None:
        self._buffer = buffer

    def __enter__(self) -> None:
        self._saved = sys.stderr
        saved, buffer = self._saved, self._buffer

        class Tee(io.TextIOBase):
            def write(self, text: str) -> int:
                buffer.write(text)
                return saved.write(text)

            def flush(self) -> None:
                saved.flush()

        sys.stderr = Tee()

    def __exit__(self, *_exc: object) -> None:
        sys.stderr = self._saved
