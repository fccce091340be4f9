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
from typing import TYPE_CHECKING, Optional

from pydantic import ValidationError

from .building import BuildError, build_env
from .loading import EnvSpecError, load_env_class, parse_spec
from .watch import OutputTail

if TYPE_CHECKING:
    from .worker import WorkerStop


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
    # Before the environment is imported, so what it prints from the start is among the lines its heartbeats carry.
    output = OutputTail().install() if args.command == "worker" else None
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

        print(json.dumps(AtroposActivities(built).description()))
        return 0
    from .worker import WorkerStop, run_worker

    stop = WorkerStop()
    if args.exit_with_stdin:
        threading.Thread(target=_stop_at_end_of_stdin, args=(stop,), name="clotho-atropos-stdin", daemon=True).start()
    asyncio.run(
        run_worker(
            built,
            task_queue=args.task_queue,
            address=args.address,
            namespace=args.namespace,
            max_concurrent=args.max_concurrent,
            heartbeat_interval=args.heartbeat_interval,
            stop=stop,
            output=output,
        )
    )
    return 0


def _stop_at_end_of_stdin(stop: "WorkerStop") -> None:
    """Blocks until stdin closes, then stops the worker: the pipe closes when its parent dies, even by kill -9."""
    sys.stdin.buffer.read()
    stop.set()


if __name__ == "__main__":
    sys.exit(main())
