"""``python -m clotho_atropos worker|describe ... <env.py[:Class]> <serve|process|evaluate> [Atropos's flags]``.

Everything after the environment file goes to Atropos's own CLI unchanged (``--help`` included).
``describe`` prints the built environment's description (``atroposDescribe``) as one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import threading
from typing import Optional

from pydantic import ValidationError

from .building import BuildError, build_env
from .loading import EnvSpecError, load_env_class, parse_spec


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="clotho-atropos", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    worker = commands.add_parser("worker", help="serve the environment's activities on a task queue")
    worker.add_argument("--task-queue", required=True)
    worker.add_argument("--address", help="Temporal host:port (default: TEMPORAL_ADDRESS, else 127.0.0.1:7233)")
    worker.add_argument("--namespace")
    worker.add_argument("--max-concurrent", type=int)
    worker.add_argument("--heartbeat-interval", type=float, default=2.0)
    worker.add_argument("--exit-with-stdin", action="store_true", help="stop when stdin closes (the command that started it died)")
    describe = commands.add_parser("describe", help="print the environment Atropos's CLI builds, as JSON")
    for sub in (worker, describe):
        sub.add_argument("env", help="path/to/env.py[:ClassName]")
        sub.add_argument("atropos", nargs=argparse.REMAINDER, help="serve|process|evaluate and Atropos's flags")
    args = parser.parse_args(argv)
    try:
        env_cls = load_env_class(args.env)
        built = build_env(env_cls, args.atropos, prog=str(parse_spec(args.env)[0]))
    except EnvSpecError as error:
        print(f"clotho-atropos: {error}", file=sys.stderr)
        return 2
    except BuildError as error:
        return error.exit_code
    except ValidationError as error:
        # Atropos's CLI lets pydantic's error out as a traceback; the message is what matters.
        print(f"clotho-atropos: {error}", file=sys.stderr)
        return 2
    if built is None:
        return 0  # help was printed
    if args.command == "describe":
        from .activities import AtroposActivities

        print(json.dumps(asyncio.run(AtroposActivities(built).describe())))
        return 0
    from .worker import run_worker

    async def serve() -> None:
        stop = asyncio.Event()
        if args.exit_with_stdin:
            loop = asyncio.get_running_loop()
            threading.Thread(target=_set_at_end_of_stdin, args=(loop, stop), daemon=True).start()
        await run_worker(
            built,
            task_queue=args.task_queue,
            address=args.address,
            namespace=args.namespace,
            max_concurrent=args.max_concurrent,
            heartbeat_interval=args.heartbeat_interval,
            stop=stop,
        )

    asyncio.run(serve())
    return 0


def _set_at_end_of_stdin(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> None:
    """Blocks until stdin closes, then sets ``stop``: the pipe closes when its parent dies, even by kill -9."""
    sys.stdin.buffer.read()
    loop.call_soon_threadsafe(stop.set)


if __name__ == "__main__":
    sys.exit(main())
