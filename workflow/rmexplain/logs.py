"""Logging for rule scripts: one log file per job, opened before anything else happens."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any


def script_logger(snakemake: Any, name: str = "rmexplain") -> logging.Logger:
    """Send this job's logging and stderr to ``snakemake.log[0]`` (and keep warnings on the console).

    Rule scripts call this first, so even an import error of a backend lands in the job's log.
    """
    log_path = Path(snakemake.log[0])
    log_path.parent.mkdir(parents=True, exist_ok=True)
    stream = open(log_path, "w", buffering=1)  # noqa: SIM115 - lives as long as the job
    sys.stderr = stream
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        handlers=[logging.StreamHandler(stream)],
        force=True,
    )
    logging.captureWarnings(True)
    return logging.getLogger(name)
