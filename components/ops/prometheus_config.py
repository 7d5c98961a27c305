"""Prometheus files for a stack, from its config (no deployment or Pulumi needed), and from its
outputs for the lag exporters:

    bin/prometheus-config --stack dev --out monitoring/
    bin/prometheus-config --stack dev --deployed --out monitoring/          # + lag exporters
    bin/prometheus-config --config-file Pulumi.prod.yaml --outputs outputs.json --out monitoring/

writes `mm2-scrape.yml` (scrape jobs for every local cluster and worker group with a
`metricsPort`, labelled mm2_cluster / mm2_worker_group, and, when the stack's outputs are read,
for each worker group's lag exporter, labelled mm2_lag_exporter) and `mm2-rules.yml` (the alert
rules every platform gets). Point an existing Prometheus at them: paste the jobs under
`scrape_configs:` and list the rules file under `rule_files:`.

A lag exporter listens on a port chosen when it starts, known only from the stack output
`connect.<group>.lagUrl`: `--deployed` reads the outputs of `--stack` (`bin/pulumi stack output`),
`--outputs FILE` a saved copy (`bin/pulumi stack output --stack dev --json --show-secrets > FILE`).
Without either no lag job is written, and the second line printed says so. Run it again after a
`pulumi up` that restarted an exporter (its port changes).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

from components.monitoring.prometheus import lag_targets, rule_groups, scrape_configs
from components.ops.mm2props import stack_config_from_yaml
from components.outputs.contract import OutputsError
from components.outputs.loader import load_exports
from components.platform.local.layout import run_root
from components.topology import TopologyError, parse_topology
from components.topology.emulation import with_network

ROOT = Path(__file__).resolve().parents[2]
SCRAPE_FILE = "mm2-scrape.yml"
RULES_FILE = "mm2-rules.yml"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bin/prometheus-config", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--stack", help="reads Pulumi.<stack>.yaml in the project")
    source.add_argument("--config-file", help="a Pulumi.<stack>.yaml file")
    parser.add_argument("--out", required=True, help="directory to write mm2-scrape.yml and mm2-rules.yml into")
    parser.add_argument("--interval", default="15s", help="scrape interval of the jobs (15s)")
    outputs = parser.add_mutually_exclusive_group()
    outputs.add_argument("--outputs", metavar="FILE", help="the stack's outputs (JSON): adds its lag exporters' jobs")
    outputs.add_argument(
        "--deployed",
        action="store_true",
        help="with --stack: read its outputs (bin/pulumi) for the lag exporters' jobs",
    )
    args = parser.parse_args(argv)
    if args.deployed and not args.stack:
        parser.error("--deployed reads the outputs of --stack: name the stack, or give --outputs FILE")
    path = Path(args.config_file) if args.config_file else ROOT / f"Pulumi.{args.stack}.yaml"
    try:
        topology = parse_topology(stack_config_from_yaml(path.read_text(encoding="utf-8")))
        # Where the stack's processes listen: in their datacenter's namespace when its links are emulated.
        stack = path.name.removeprefix("Pulumi.").removesuffix(".yaml")
        topology = with_network(topology, stack, run_root(ROOT, stack))
    except OSError as exc:
        print(
            f"prometheus-config: cannot read {path}: {exc.strerror}. Next step: name an existing stack.",
            file=sys.stderr,
        )
        return 1
    except TopologyError as exc:
        print(f"prometheus-config: {path}: {exc}", file=sys.stderr)
        return 1
    lag_urls = None
    if args.outputs or args.deployed:
        try:
            exports = load_exports(args.stack if args.deployed else None, args.outputs)
        except OutputsError as exc:
            print(f"prometheus-config: {exc}", file=sys.stderr)
            return 1
        lag_urls = {name: group.lag_url for name, group in exports.connect.items()}
    lag = lag_targets(topology, lag_urls)
    jobs = scrape_configs(topology, args.interval, lag.targets)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / SCRAPE_FILE).write_text(yaml.safe_dump({"scrape_configs": jobs}, sort_keys=False))
    (out / RULES_FILE).write_text(yaml.safe_dump({"groups": rule_groups(topology)}, sort_keys=False))
    targets = sum(len(c["targets"]) for j in jobs for c in j["static_configs"])
    no_metrics = len(jobs) == len(lag.targets)
    note = (
        " (no metricsPort in the stack: no JMX targets; set mm2:clusters.<alias>.metricsPort etc.)"
        if no_metrics
        else ""
    )
    print(f"wrote {out / SCRAPE_FILE} ({len(jobs)} jobs, {targets} targets) and {out / RULES_FILE}{note}")
    print(lag.describe())
    return 0


if __name__ == "__main__":
    sys.exit(main())
