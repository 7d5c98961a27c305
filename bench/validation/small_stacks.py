"""Small stacks, warm: the wall time of `bin/validate` on the dev stack and on examples/fan-out.yaml.

    flock -x /tmp/mm2-heavy.lock python bench/validation/small_stacks.py [--stacks dev,fan-out] [--repeats 2]

Per stack, in one run:
1. deploys it with the project's own engine path (tests/integration/harness.py: `pulumi up` of this
   program on a throwaway stack with its own file backend; the stack's config with every port
   replaced by a free one below the ephemeral range);
2. produces what a new user would try: the dev stack one record to `orders`; fan-out 1,000 records
   to each of its two topics (2,000 source records, validated by 3 flows: 6,000), and waits (bounded)
   until every target holds them, so the stage measures validation, not replication;
3. runs `bin/validate --outputs <file>` exactly as a user does (every default: `local[*]`, every
   check, latency sampling on) `--repeats` times, timing each from start to exit and stamping every
   line the stage prints with its second since start (where the time goes);
4. destroys the stack (also on failure or Ctrl-C) and writes bench/results/validation-small-<date>.{json,md}.
Goals (issue #14): dev stack under 15 s wall, fan-out under 30 s, warm (the repeat after the first).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.machine import hardware_text  # noqa: E402
from bench.validation.run import machine  # noqa: E402
from tests.integration import harness  # noqa: E402

GOALS_S = {"dev": 15.0, "fan-out": 30.0}
FAN_OUT_TOPICS = ("events-clicks", "events-views")
FAN_OUT_RECORDS = 1000  # per topic


def stack_config(name: str) -> dict[str, Any]:
    if name == "dev":
        return harness.dev_config_with_free_ports()
    return harness.example_config_with_free_ports(name)


def load(name: str, outputs: dict[str, Any]) -> tuple[int, list[tuple[str, str, int]]]:
    """Produce the stack's records; (source records, [(target alias, remote topic, records)]) to wait for."""
    tag = f"bench-{int(time.time())}-".encode()
    if name == "dev":
        harness.produce_batch(outputs, "primary", "orders", [tag + b"0"])
        return 1, [("dr", "primary.orders", 1)]
    for topic in FAN_OUT_TOPICS:
        harness.produce_batch(outputs, "k", topic, [tag + str(i).encode() for i in range(FAN_OUT_RECORDS)])
    remote = [(t, f"k.{topic}", FAN_OUT_RECORDS) for t in ("a", "b", "c") for topic in FAN_OUT_TOPICS]
    return FAN_OUT_RECORDS * len(FAN_OUT_TOPICS), remote


def wait_replicated(outputs: dict[str, Any], remote: list[tuple[str, str, int]]) -> float:
    t0 = time.monotonic()
    for alias, topic, want in remote:

        def arrived(alias: str = alias, topic: str = topic, want: int = want) -> bool:
            names = harness.topic_names(outputs, alias)
            return topic in names and _records(outputs, alias, topic) >= want

        harness.wait_until(arrived, 300, f"{want} record(s) in {alias}/{topic}", poll_s=2.0)
    return time.monotonic() - t0


def _records(outputs: dict[str, Any], alias: str, topic: str) -> int:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(harness.kafka_conf(outputs, alias, **{"group.id": "bench-peek", "enable.auto.commit": False}))
    try:
        parts = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        total = 0
        for p in parts:
            lo, hi = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)
            total += hi - lo
        return total
    finally:
        consumer.close()


def validate_once(stack: harness.TestStack, outputs_file: Path, report: Path) -> dict[str, Any]:
    """bin/validate as a user runs it; wall time and every stderr line stamped with seconds since start."""
    lines: list[tuple[float, str]] = []
    t0 = time.monotonic()
    p = subprocess.Popen(
        [str(ROOT / "bin" / "validate"), "--outputs", str(outputs_file), "--report", str(report)],
        cwd=ROOT,
        env=stack.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )

    def pump() -> None:
        assert p.stderr is not None
        for line in p.stderr:
            lines.append((round(time.monotonic() - t0, 2), line.rstrip()))

    # stderr has exactly one reader, this thread: communicate() would read it too, and the two
    # readers took bytes from each other (lines missing from the timeline, or run together).
    out: list[str] = []
    readers = [
        threading.Thread(target=pump, daemon=True),
        threading.Thread(target=lambda: out.append(p.stdout.read() if p.stdout else ""), daemon=True),
    ]
    for r in readers:
        r.start()
    try:
        p.wait(timeout=600)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(10)
    wall = time.monotonic() - t0
    for r in readers:
        r.join(10)
    stdout = "".join(out)
    rep = json.loads(report.read_text()) if report.exists() else {}
    return {
        "exit_code": p.returncode,
        "wall_s": round(wall, 2),
        "stage_s": rep.get("meta", {}).get("seconds"),
        "failed_checks": rep.get("failedChecks"),
        "partitions_by_path": rep.get("meta", {}).get("partitionsByPath"),
        "timeline": lines,
        "result_line": next((ln for ln in stdout.splitlines() if ln.startswith("RESULT")), None),
    }


def one_stack(name: str, repeats: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix=f"mm2-bench-small-{name}-") as tmp:
        t0 = time.monotonic()
        with harness.running(Path(tmp), stack_config(name)) as stack:
            deploy_s = time.monotonic() - t0
            outputs = stack.outputs()
            records, remote = load(name, outputs)
            replicated_s = wait_replicated(outputs, remote)
            outputs_file = Path(tmp) / "outputs.json"
            outputs_file.touch(mode=0o600)  # every secret of the stack: owner only
            outputs_file.write_text(json.dumps(outputs))
            runs = []
            for i in range(repeats):
                r = validate_once(stack, outputs_file, Path(tmp) / f"report-{i}.json")
                runs.append(r)
                print(f"  {name} run {i + 1}/{repeats}: exit {r['exit_code']}, {r['wall_s']:.1f}s wall", flush=True)
            outputs_file.unlink()
    return {
        "deploy_s": round(deploy_s, 1),
        "source_records": records,
        "flows": len(outputs.get("flows", {})),
        "replicated_s": round(replicated_s, 1),
        "runs": runs,
    }


def markdown(info: dict[str, Any], results: dict[str, Any], command: str) -> str:
    lines = [
        f"# Validation on small stacks, warm ({datetime.now(timezone.utc):%Y-%m-%d})",
        "",
        f"Machine: {hardware_text(info)}, load average "
        f"{info['load_avg_at_start']} at start; {info['java']}, Kafka {info['kafka']}, pyspark {info['pyspark']}, "
        f"Python {info['python']}.",
        "",
        f"Command: `{command}`. Each stack deployed with `pulumi up` (throwaway stack, free ports), its "
        "records produced and replicated before the stage starts; then `bin/validate --outputs <file> "
        "--report <file>` with every default, timed from start to exit (JVM start, jar check, session, "
        "every check). Warm = the run after the first.",
        "",
        "| stack | flows | source records | deploy (s) | validate walls (s) | warm wall (s) | goal (s) | met "
        "| exit codes |",
        "|---|---:|---:|---:|---|---:|---:|---|---|",
    ]
    for name, r in results.items():
        walls = [x["wall_s"] for x in r["runs"]]
        warm = statistics.median(walls[1:]) if len(walls) > 1 else walls[0]
        codes = ", ".join(str(x["exit_code"]) for x in r["runs"])
        lines.append(
            f"| {name} | {r['flows']} | {r['source_records']:,} | {r['deploy_s']:.0f} "
            f"| {', '.join(f'{w:.1f}' for w in walls)} | {warm:.1f} | {GOALS_S.get(name, 0):.0f} "
            f"| {'yes' if warm < GOALS_S.get(name, 0) else 'NO'} | {codes} |"
        )
    for name, r in results.items():
        last = r["runs"][-1]
        lines += ["", f"Where the time goes, {name} (last run; seconds since start, the stage's own lines):", "", "```"]
        lines += [f"{t:6.1f}  {text}" for t, text in last["timeline"] if text.startswith("[validate")]
        lines += [f"{last['wall_s']:6.1f}  exit {last['exit_code']}: {last['result_line']}", "```"]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stacks", default="dev,fan-out", help="comma-separated: dev and/or example names")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out-dir", default=str(ROOT / "bench" / "results"))
    args = parser.parse_args()
    command = "flock -x /tmp/mm2-heavy.lock python bench/validation/small_stacks.py " + " ".join(sys.argv[1:])
    info = machine()
    results = {}
    for name in args.stacks.split(","):
        print(f"{name}: deploying ...", flush=True)
        results[name] = one_stack(name, args.repeats)
    info["load_avg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    text = markdown(info, results, command)
    print("\n" + text)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stamp = f"{datetime.now(timezone.utc):%Y%m%d}"
    report = {"command": command, "machine": info, "stacks": results}
    (out / f"validation-small-{stamp}.json").write_text(json.dumps(report, indent=2) + "\n")
    (out / f"validation-small-{stamp}.md").write_text(text + "\n")
    return 0 if all(x["exit_code"] == 0 for r in results.values() for x in r["runs"]) else 1


if __name__ == "__main__":
    sys.exit(main())
