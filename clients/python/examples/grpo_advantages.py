"""Pull leased batches from a Clotho (or Atropos) trajectory API, print their GRPO advantages, ack them.

A stand-in for the data side of a GRPO trainer: where it prints, a trainer would take an optimizer step.
Run `clotho api` and an environment, then:

    python examples/grpo_advantages.py --api-url http://127.0.0.1:8000 --batch-size 8 --max-batches 5

Ctrl-C stops it; a batch interrupted mid-step is not acked and will be served again when its lease ends.
"""

from __future__ import annotations

import argparse
import signal
import statistics
import threading

from clotho_client import Batch, TrajectoryClient, batch_advantages


def report(batch: Batch) -> None:
    per_group = batch_advantages(batch.groups)
    flat = [a for group in per_group for a in group]
    scores = [float(s) for group in batch.groups for s in group["scores"]]
    print(
        f"batch {batch.batch_id}: {len(batch.groups)} groups, {len(flat)} sequences, "
        f"mean score {statistics.fmean(scores):+.4f}, mean advantage {statistics.fmean(flat):+.4f}, "
        f"mean |advantage| {statistics.fmean(abs(a) for a in flat):.4f}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--api-url", default="http://127.0.0.1:8000")
    parser.add_argument("--token", default=None, help="bearer token (default $CLOTHO_API_TOKEN)")
    parser.add_argument("--batch-size", type=int, default=8, help="sequences per batch, sent with /register")
    parser.add_argument("--max-token-len", type=int, default=2048)
    parser.add_argument("--num-steps", type=int, default=100)
    parser.add_argument("--lease-seconds", type=float, default=120.0)
    parser.add_argument("--max-batches", type=int, default=None, help="stop after this many batches")
    parser.add_argument("--no-register", action="store_true", help="another process registered the trainer already")
    args = parser.parse_args()

    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    with TrajectoryClient(args.api_url, token=args.token) as client:
        client.wait_for_server()
        if not args.no_register:
            client.register(batch_size=args.batch_size, max_token_len=args.max_token_len, num_steps=args.num_steps)
        done = client.run_pull_loop(report, args.lease_seconds, max_batches=args.max_batches, stop=stop)
    print(f"{done} batches acked")


if __name__ == "__main__":
    main()
