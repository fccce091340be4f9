"""``python -m clotho_client.training --model … --save-path …``: see ``--help``."""

from __future__ import annotations

import logging
import sys

from .config import parse_config


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", stream=sys.stderr)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    config = parse_config(argv)
    from .grpo_trainer import GrpoTrainer

    GrpoTrainer(config).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
