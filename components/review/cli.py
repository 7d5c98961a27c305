"""bin/review-comment: render the pull-request comment from a preview's JSON and event log.

    PULUMI_DEBUG_COMMANDS=true pulumi preview --json --policy-pack policies --event-log events.jsonl > preview.json
    bin/review-comment --preview preview.json --events events.jsonl > comment.md

The CLI offers --event-log only with PULUMI_DEBUG_COMMANDS=true (Pulumi's Automation API sets
it for every stack command); policy violations reach no other machine-readable output.
Exit status: 0 rendered; 2 the input is missing or not what the CLI writes.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from components.review.comment import policy_violations, render_comment


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bin/review-comment",
        description="Turn `pulumi preview --json` (and its --event-log, for policy violations) into a "
        "Markdown pull-request comment: changes by flow, blast radius, policy violations.",
    )
    parser.add_argument("--preview", required=True, help="file with `pulumi preview --json` output, or - for stdin")
    parser.add_argument("--events", help="the preview's `--event-log` file (policy violations live only there)")
    parser.add_argument("--title", default="", help="heading, e.g. 'Replication preview: prod'")
    parser.add_argument("--out", help="write the comment here instead of stdout")
    return parser.parse_args(argv)


def load_preview(where: str) -> dict[str, Any]:
    text = sys.stdin.read() if where == "-" else Path(where).read_text()
    if not text.strip():
        raise ValueError(
            f"{where} is empty: the preview failed before it printed JSON (see its stderr); "
            "fix that error, then run the preview again"
        )
    preview = json.loads(text)
    if not isinstance(preview, dict) or ("steps" not in preview and "diagnostics" not in preview):
        raise ValueError(f"{where} is not `pulumi preview --json` output (no steps or diagnostics)")
    return preview


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        preview = load_preview(args.preview)
        events = Path(args.events).read_text().splitlines() if args.events else []
    except (OSError, ValueError) as exc:
        print(f"review-comment: cannot read the preview: {exc}", file=sys.stderr)
        return 2
    comment = render_comment(preview, policy_violations(events), title=args.title)
    if args.out:
        Path(args.out).write_text(comment)
    else:
        sys.stdout.write(comment)
    return 0


if __name__ == "__main__":
    sys.exit(main())
