"""The ``rmexplain`` command.

``rmexplain explain``: explain one comparison (a prompt and two responses, as arguments or a JSON file)
with the configured method and RMs, writing a figure and a page per RM and a summary, with the attribute
effects of the comparison's edits in both directions.
``rmexplain plan``: before any job runs, the LLM requests, tokens and cost, GPU jobs and hub downloads.
``rmexplain schemas``: print the Parquet column contracts as Markdown.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

from rmexplain.data.readers import json_problem
from rmexplain.markup import to_markdown
from rmexplain.plan import make_plan, plan_markdown
from rmexplain.schemas import contracts_markdown

REPO_CONFIG = "config/config.yaml"
JSON_KINDS = {
    list: "list",
    str: "string",
    int: "number",
    float: "number",
    bool: "boolean",
    type(None): "null",
}


class InputError(ValueError):
    """The comparison to explain cannot be read; the message names the file and what is wrong."""


def read_input_file(path: str) -> dict[str, Any]:
    """The JSON object of ``--input``: a missing or unreadable file, invalid JSON or another JSON value
    raises ``InputError`` naming the file."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as err:
        raise InputError(f"--input {path}: cannot read it ({err.strerror or err})") from None
    except UnicodeDecodeError as err:
        raise InputError(f"--input {path}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    except json.JSONDecodeError as err:
        where = f"line {err.lineno}, column {err.colno}"
        raise InputError(f"--input {path}: not valid JSON: {json_problem(err)} ({where})") from None
    if not isinstance(data, dict):
        kind = JSON_KINDS.get(type(data), type(data).__name__)
        raise InputError(f"--input {path}: a JSON {kind}, not an object with keys prompt, chosen, rejected")
    return data


def read_request(args: argparse.Namespace) -> Any:
    """The comparison from ``--input`` (JSON with prompt, chosen, rejected) or from the three options."""
    from rmexplain.explain_one import Request

    if args.input:
        data = read_input_file(args.input)
        missing = [k for k in ("prompt", "chosen", "rejected") if not isinstance(data.get(k), str)]
        if missing:
            raise InputError(f"--input {args.input}: missing or non-string key(s) {missing}")
        return Request(data["prompt"], data["chosen"], data["rejected"])
    if not (args.prompt and args.chosen and args.rejected):
        raise SystemExit("give --input FILE.json, or all of --prompt, --chosen and --rejected")
    return Request(args.prompt, args.chosen, args.rejected)


def cmd_explain(args: argparse.Namespace) -> int:
    """Run ``explain``."""
    from rmexplain.config import load
    from rmexplain.explain_one import explain_one

    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    request = read_request(args)  # before the config and the RMs load: a wrong file fails at once
    config = load(args.config)
    rms = args.rm.split(",") if args.rm else None
    summary = explain_one(
        config,
        request,
        args.out,
        rms=rms,
        method=args.method,
        root=args.root,
        global_pfr=args.global_pfr,
        log=logging.getLogger("rmexplain.explain"),
    )
    print(to_markdown(summary))
    effects = Path(args.out) / "effects.md"
    if effects.is_file():
        print(effects.read_text(encoding="utf-8"))
    print(f"Wrote {Path(args.out) / 'summary.html'} (and a figure and page per RM).")
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    """Run ``plan``."""
    from rmexplain.config import load

    print(plan_markdown(make_plan(load(args.config), args.root)), end="")
    return 0


def cmd_schemas(args: argparse.Namespace) -> int:
    """Run ``schemas``."""

    print(contracts_markdown())
    return 0


def parser() -> argparse.ArgumentParser:
    """The argument parser of ``rmexplain``."""
    main = argparse.ArgumentParser(prog="rmexplain", description=__doc__.split("\n\n")[0])
    sub = main.add_subparsers(dest="command", required=True)
    explain = sub.add_parser("explain", help="explain one comparison with the configured method and RMs")
    explain.add_argument("--input", help="JSON file with keys prompt, chosen, rejected")
    explain.add_argument("--prompt", help="the user prompt")
    explain.add_argument("--chosen", help="the response a person prefers (if known)")
    explain.add_argument("--rejected", help="the other response")
    explain.add_argument("--config", default=REPO_CONFIG, help=f"workflow config (default {REPO_CONFIG})")
    explain.add_argument("--rm", help="comma-separated RM names (default: every RM in the config)")
    explain.add_argument(
        "--method", help="perturbation method (default: the config's first attribute method)"
    )
    explain.add_argument(
        "--out", default="results/explain", help="output directory (default results/explain)"
    )
    explain.add_argument("--root", default=".", help="workflow directory holding results/models (demo RMs)")
    explain.add_argument(
        "--global-pfr", help="a results/analysis/.../pfr.parquet to compare the local ranking to"
    )
    explain.add_argument("-v", "--verbose", action="store_true", help="log each step")
    explain.set_defaults(func=cmd_explain)
    plan = sub.add_parser(
        "plan",
        help="before spending: the LLM requests, tokens and cost, GPU jobs and hub downloads of a config",
    )
    plan.add_argument("--config", default=REPO_CONFIG, help=f"workflow config (default {REPO_CONFIG})")
    plan.add_argument("--root", default=".", help="the workflow's working directory (default .)")
    plan.set_defaults(func=cmd_plan)
    schemas = sub.add_parser("schemas", help="print the Parquet column contracts as Markdown")
    schemas.set_defaults(func=cmd_schemas)
    return main


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``rmexplain`` console script."""
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, RuntimeError) as err:  # configuration and input errors: one line, no traceback
        print(f"rmexplain: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
