"""``python -m clotho_client.training --model … --save-path …``: see ``--help``."""

from __future__ import annotations

import logging
import sys

from .config import parse_config


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", stream=sys.stderr)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    config = parse_config(argv)
    from ..errors import LeaseLostError
    from .checkpoint import CheckpointError
    from .grpo_trainer import GrpoTrainer

    try:
        GrpoTrainer(config).run()
    except (LeaseLostError, CheckpointError) as error:
        logging.getLogger("clotho_client.training").error("%s", error)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
