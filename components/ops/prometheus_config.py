"""Prometheus files for a stack, from its config (no deployment or Pulumi needed):

    bin/prometheus-config --stack dev --out monitoring/
    bin/prometheus-config --config-file Pulumi.prod.yaml --out monitoring/

writes `mm2-scrape.yml` (scrape jobs for every local cluster and worker group with a
`metricsPort`, labelled mm2_cluster / mm2_worker_group) and `mm2-rules.yml` (the alert rules every
platform gets). Point an existing Prometheus at them: paste the jobs under `scrape_configs:` and
list the rules file under `rule_files:`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

from components.monitoring.prometheus import rule_groups, scrape_configs
from components.ops.mm2props import stack_config_from_yaml
from components.topology import TopologyError, parse_topology

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
    args = parser.parse_args(argv)
    path = Path(args.config_file) if args.config_file else ROOT / f"Pulumi.{args.stack}.yaml"
    try:
        topology = parse_topology(stack_config_from_yaml(path.read_text(encoding="utf-8")))
    except OSError as exc:
        print(
            f"prometheus-config: cannot read {path}: {exc.strerror}. Next step: name an existing stack.",
            file=sys.stderr,
        )
        return 1
    except TopologyError as exc:
        print(f"prometheus-config: {path}: {exc}", file=sys.stderr)
        return 1
    jobs = scrape_configs(topology, args.interval)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / SCRAPE_FILE).write_text(yaml.safe_dump({"scrape_configs": jobs}, sort_keys=False))
    (out / RULES_FILE).write_text(yaml.safe_dump({"groups": rule_groups(topology)}, sort_keys=False))
    targets = sum(len(c["targets"]) for j in jobs for c in j["static_configs"])
    note = "" if jobs else " (no metricsPort in the stack: no targets; set mm2:clusters.<alias>.metricsPort etc.)"
    print(f"wrote {out / SCRAPE_FILE} ({len(jobs)} jobs, {targets} targets) and {out / RULES_FILE}{note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
