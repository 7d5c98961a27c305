"""The dev stack across a WAN, for a rehearsal on a laptop: `bin/deploy-dev --link 50ms,200Mbit`.

Writes the config of the stack `dev-wan` (Pulumi.dev-wan.yaml, ignored by git): the dev stack's,
with `dr` in a second datacenter and the link between the two declared, so the local platform
emulates it (each datacenter in a network namespace, components/topology/emulation.py) and the
preview derives the flow's client settings from it. The dev stack's processes listen on
loopback and these on their datacenters' addresses, so both stacks can run at once; only the
lag exporter's fixed loopback port is dropped (it takes a free one). Its workers serve metrics
(`metricsPort`, on their datacenter's address), so `bin/status --stack dev-wan` shows how fast
the flow copies against the link.

    python -m components.ops.rehearsal --link 50ms,200Mbit[,0.1%]
"""

from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path
from typing import Any

import yaml

from components.topology.links import LOSS_UNITS, RATE_UNITS, RTT_UNITS, parse_quantity

ROOT = Path(__file__).resolve().parents[2]
STACK = "dev-wan"
SOURCE_DC, TARGET_DC = "dc1", "dc2"
METRICS_PORT = 19410  # the first worker group's workers' metrics, on dc2's address (as README's example)
LINK_FIX = "Fix: give --link RTT,BANDWIDTH[,LOSS], e.g. --link 50ms,200Mbit or --link 100ms,50Mbit,0.1%."


class RehearsalError(ValueError):
    """A --link value that is not a link: what is wrong and the fix."""


def parse_link(text: str) -> dict[str, str]:
    """`50ms,200Mbit[,0.1%]` as the `mm2:links` entry it declares."""
    parts = [part.strip() for part in text.split(",")]
    if len(parts) not in (2, 3):
        raise RehearsalError(f"--link {text!r}: two or three values, comma-separated. {LINK_FIX}")
    names = ("rtt", "bandwidth", "loss")
    units = (RTT_UNITS, RATE_UNITS, LOSS_UNITS)
    for name, value, unit in zip(names, parts, units, strict=False):
        amount = parse_quantity(value, unit)
        if amount is None or amount <= 0 or (name == "loss" and amount >= 100):
            raise RehearsalError(f"--link {text!r}: {name} {value!r} is not one of {', '.join(unit)}. {LINK_FIX}")
    return dict(zip(names, parts, strict=False))


def rehearsal_config(dev: dict[str, Any], link: dict[str, str], salt: str | None) -> dict[str, Any]:
    """Pulumi.dev.yaml's content turned into dev-wan's; `salt` is dev-wan's own, once it has one."""
    config = copy.deepcopy(dev)
    config.pop("encryptionsalt", None)  # dev's: dev-wan's secrets get their own
    if salt:
        config["encryptionsalt"] = salt
    mm2 = config["config"]
    mm2["mm2:clusters"]["primary"]["datacenter"] = SOURCE_DC
    mm2["mm2:clusters"]["dr"]["datacenter"] = TARGET_DC
    mm2["mm2:links"] = {f"{SOURCE_DC}<->{TARGET_DC}": link}
    for i, group in enumerate(mm2["mm2:workerGroups"].values()):
        group.pop("lagPort", None)
        group.setdefault("metricsPort", METRICS_PORT + 10 * i)
    return config


def write(link_text: str, root: Path = ROOT) -> Path:
    link = parse_link(link_text)
    target = root / f"Pulumi.{STACK}.yaml"
    existing = yaml.safe_load(target.read_text()) if target.exists() else None
    salt = (existing or {}).get("encryptionsalt")
    dev = yaml.safe_load((root / "Pulumi.dev.yaml").read_text())
    header = f"# Written by bin/deploy-dev --link {link_text}: the dev stack across an emulated WAN (git-ignored).\n"
    target.write_text(header + yaml.safe_dump(rehearsal_config(dev, link, salt), sort_keys=False))
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--link", required=True, help="RTT,BANDWIDTH[,LOSS]: 50ms,200Mbit or 100ms,50Mbit,0.1%%")
    args = parser.parse_args(argv)
    try:
        path = write(args.link)
    except RehearsalError as exc:
        print(f"deploy-dev: {exc}", file=sys.stderr)
        return 2
    print(f"stack {STACK}: {path.name}, dr in {TARGET_DC} behind {SOURCE_DC}<->{TARGET_DC} {args.link}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
