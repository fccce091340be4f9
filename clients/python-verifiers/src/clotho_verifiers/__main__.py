"""``python -m clotho_verifiers worker --task-queue Q --host-socket S [--home H] <env> [verifiers' flags]``.

``<env>`` is an installed environment's id, its folder, or its module's path (``loading.py``); everything after it
goes to verifiers' own parser, as ``vf-eval <env> …`` parses it (``--help`` included). A flag verifiers refuses is
printed with verifiers' message, and the worker exits 2 before it serves.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys

from .layers import LayerError, ensure_layer
from .loading import ConfigRefused, load, resolve_spec, share_path

CONFIG_REFUSED = 2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="clotho-verifiers", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    worker = commands.add_parser("worker", help="serve the environment's activities on a task queue")
    worker.add_argument("--task-queue", required=True)
    worker.add_argument("--host-socket", required=True, help="the command's session host (a Unix socket)")
    worker.add_argument("--address", help="Temporal host:port (default: TEMPORAL_ADDRESS, else 127.0.0.1:7233)")
    worker.add_argument("--namespace")
    worker.add_argument("--home", default=".clotho", help="where environments' dependency layers are installed")
    worker.add_argument("--heartbeat-interval", type=float, default=2.0)
    worker.add_argument("--exit-with-stdin", action="store_true", help="stop when stdin closes (the command that started it died)")
    worker.add_argument("env", help="an environment's id, folder, or module path")
    worker.add_argument("verifiers", nargs=argparse.REMAINDER, help="verifiers' flags, as vf-eval takes them")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    spec = resolve_spec(args.env)
    try:
        layer = ensure_layer(spec.dependencies, args.home, lambda line: print(f"clotho-verifiers: {line}", file=sys.stderr))
        if layer:
            # After the base venv's site-packages: the base's pins win (the layer's copies of them are the same versions).
            sys.path.append(layer)
            share_path([layer], first=False)
        config, env = load(spec, args.verifiers)
    except ConfigRefused as refused:
        help_asked = any(a in ("-h", "--help") for a in args.verifiers)
        print(str(refused), file=sys.stdout if help_asked else sys.stderr)
        return 0 if help_asked else CONFIG_REFUSED
    except LayerError as error:
        print(f"clotho-verifiers: {error}", file=sys.stderr)
        return 1
    from .worker import run_worker, stop_at_end_of_stdin

    async def serve() -> None:
        stop = asyncio.Event()
        if args.exit_with_stdin:
            stop_at_end_of_stdin(asyncio.get_running_loop(), stop)
        await run_worker(
            spec,
            config,
            env,
            args.verifiers,
            task_queue=args.task_queue,
            host_socket=args.host_socket,
            address=args.address,
            namespace=args.namespace,
            heartbeat_interval=args.heartbeat_interval,
            stop=stop,
        )

    asyncio.run(serve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
