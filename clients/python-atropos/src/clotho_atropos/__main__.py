"""``python -m clotho_atropos worker|describe ... <env.py[:Class]> <serve|process|evaluate> [Atropos's flags]``.

Everything after the environment file goes to Atropos's own CLI unchanged (``--help`` included).
``describe`` prints the built environment's description (``atroposDescribe``) as one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import threading
import time
from typing import TYPE_CHECKING, Optional

from pydantic import ValidationError

from .building import BuildError, build_env
from .codec import read_item_key, set_item_key
from .loading import EnvSpecError, load_env_class, missing_module, parse_spec
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
    worker.add_argument("--item-key-file", help="the run's key for signing pickled items (made by the run's first command)")
    describe = commands.add_parser("describe", help="print the environment Atropos's CLI builds, as JSON")
    for sub in (worker, describe):
        sub.add_argument("env", help="path/to/env.py[:ClassName]")
        sub.add_argument("atropos", nargs=argparse.REMAINDER, help="serve|process|evaluate and Atropos's flags")
    args = parser.parse_args(argv)
    if getattr(args, "item_key_file", None):
        try:
            set_item_key(read_item_key(args.item_key_file))
        except (OSError, ValueError) as error:
            print(f"clotho-atropos: --item-key-file: {error}", file=sys.stderr)
            return 2
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
    except ModuleNotFoundError as error:
        print(f"clotho-atropos: {missing_module(error)}", file=sys.stderr)
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
    serving = run_worker(
        built,
        task_queue=args.task_queue,
        address=args.address,
        namespace=args.namespace,
        max_concurrent=args.max_concurrent,
        heartbeat_interval=args.heartbeat_interval,
        stop=stop,
        output=output,
    )
    try:
        asyncio.run(serving)
    except ModuleNotFoundError as error:  # imported by setup()
        print(f"clotho-atropos: {missing_module(error)}", file=sys.stderr)
        return 2
    return 0


#: After stdin closed, how long the worker has to stop (its graceful shutdown takes up to 10 s) before it is exited.
EXIT_GRACE_S = 20.0


def _stop_at_end_of_stdin(stop: "WorkerStop") -> None:
    """Blocks until stdin closes (the pipe closes when its parent dies, even by kill -9), then stops the worker, and
    exits the process if it is still there ``EXIT_GRACE_S`` later (an environment holding its loop keeps it up).

    Reads the raw descriptor, never ``sys.stdin``: a thread blocked in ``sys.stdin.buffer.read()`` holds the buffer's
    lock, which a child forked meanwhile (a process pool's) inherits held and deadlocks on when multiprocessing closes
    its stdin, and which interpreter shutdown cannot take.
    """
    while True:
        try:
            if not os.read(0, 65536):
                break
        except OSError:
            break
    stop.set()
    time.sleep(EXIT_GRACE_S)
    with contextlib.suppress(OSError):  # the parent that read it is gone
        print(f"clotho-atropos: stdin closed {EXIT_GRACE_S:.0f} s ago and the worker has not stopped: exiting", file=sys.stderr, flush=True)
    os._exit(1)


if __name__ == "__main__":
    sys.exit(main())
