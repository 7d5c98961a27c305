"""The replication benchmark's report (bench/replication/run.py): medians, ratios against the
goals, and the Markdown table written to bench/results/."""

from __future__ import annotations

import statistics
from typing import Any

from bench.machine import hardware, hardware_text

SETUPS = ("a", "b", "c", "d")
SETUP_NAMES = {
    "a": "copy ceiling (Kafka clients, no MM2)",
    "b": "MM2, seed 001 settings",
    "c": "MM2, tuned defaults",
    "d": "MM2, tuned defaults, exactly-once",
}


def machine() -> dict[str, Any]:
    return hardware()


def median_of(runs: list[dict[str, Any]], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def median_cpu(runs: list[dict[str, Any]]) -> dict[str, float]:
    keys = sorted({k for r in runs for k in r["cpu_cores"]})
    return {k: round(statistics.median(r["cpu_cores"].get(k, 0.0) for r in runs), 2) for k in keys}


def render(report: dict[str, Any], command: str) -> str:
    info, sizes = report["machine"], report["sizes"]
    tp, lat, ratios = report["throughput_medians"], report["latency_medians"], report["ratios"]
    lines = [
        f"# Replication benchmark ({report['date']})",
        "",
        f"Machine: {hardware_text(info)}; load average at start "
        f"{', '.join(map(str, info['load_avg_at_start']))}; Kafka {info['kafka']}, {info['java']}. "
        f"Command: `{command}`.",
        "",
        f"Two single-broker KRaft clusters and the Connect workers on this machine (PLAINTEXT, loopback); "
        f"source topic of {report['partitions']} partitions; values of random letters (compressible like "
        f"text). Medians of {report['repeats']} interleaved runs per cell; throughput is the backlog copy "
        f"from first to last record on the target, start-up excluded. (d) counts the target's end offsets "
        f"like the others, so its transaction markers (one per task per committed poll) count as records; "
        f"its latency is the append time of records later committed, so it leaves out the commit itself.",
        "",
        "| setup | " + " | ".join(f"{s} B rec/s | {s} B MB/s" for s in sizes) + " |",
        "|---|" + "---:|---:|" * len(sizes),
    ]
    for setup in SETUPS:
        cells = " | ".join(
            f"{tp[setup][str(s)]['records_per_s']:,.0f} | {tp[setup][str(s)]['mb_per_s']:.1f}" for s in sizes
        )
        lines.append(f"| ({setup}) {SETUP_NAMES[setup]} | {cells} |")
    lines += [
        "",
        "| ratio | " + " | ".join(f"{s} B" for s in sizes) + " | goal |",
        "|---|" + "---:|" * len(sizes) + "---|",
    ]
    lines.append("| (c)/(a) | " + " | ".join(f"{ratios['c_over_a'][str(s)]:.2f}" for s in sizes) + " | >= 0.8 |")
    lines.append("| (c)/(b) | " + " | ".join(f"{ratios['c_over_b'][str(s)]:.2f}" for s in sizes) + " | >= 1.5 |")
    lines.append(
        "| (d)/(c) exactly-once cost | " + " | ".join(f"{ratios['d_over_c'][str(s)]:.2f}" for s in sizes) + " | - |"
    )
    lines += [
        "",
        f"End-to-end latency at half of (c)'s median throughput, {report['latency_seconds']} s of steady sends "
        "per run, first 2 s not counted; target append time (LogAppendTime) minus the producer's send time "
        f"written into the record; medians of {report['latency_repeats']} runs:",
        "",
        "| setup | " + " | ".join(f"{s} B rate | {s} B p50 ms | {s} B p99 ms" for s in report["latency_sizes"]) + " |",
        "|---|" + "---:|---:|---:|" * len(report["latency_sizes"]),
    ]
    for setup in SETUPS:
        cells = " | ".join(
            f"{m['target_rate']:,.0f}/s | {m['p50_ms']:.0f} | {m['p99_ms']:.0f}"
            for m in (lat[setup][str(s)] for s in report["latency_sizes"])
        )
        lines.append(f"| ({setup}) | {cells} |")
    goals = report["goals"]
    lines += [
        "",
        f"Goals: (c)/(a) >= 0.8: {goals['c_over_a']}; (c)/(b) >= 1.5: {goals['c_over_b']}; p99 < 1 s for (c): "
        f"{goals['p99_c']}.",
        "",
        "Where the CPU went during the timed copy (cores busy, medians; 2.0 = both cores):",
        "",
        "| setup, size | " + " | ".join(report["cpu_columns"]) + " |",
        "|---|" + "---:|" * len(report["cpu_columns"]),
    ]
    for setup in SETUPS:
        for s in sizes:
            cpu = tp[setup][str(s)]["cpu_cores"]
            lines.append(
                f"| ({setup}) {s} B | " + " | ".join(f"{cpu.get(c, 0.0):.2f}" for c in report["cpu_columns"]) + " |"
            )
    lines += ["", "Settings of (c), as generated (source connector, tuning keys only):", ""]
    lines += [f"- `{k}={v}`" for k, v in report["tuned_settings"].items()]
    return "\n".join(lines)


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "records_per_s": median_of(runs, "records_per_s"),
        "mb_per_s": median_of(runs, "mb_per_s"),
        "cpu_cores": median_cpu(runs),
    }


def cpu_order(name: str) -> tuple[int, str]:
    order = [
        "broker-src",
        "broker-dst",
        "worker-seed",
        "worker-tuned",
        "worker-eos",
        "copy-loop",
        "bench-python",
        "machine",
    ]
    return (order.index(name) if name in order else len(order), name)


def is_tuning(key: str) -> bool:
    return key == "tasks.max" or (
        (key.startswith("producer.override.") or key.startswith("source.consumer."))
        and "bootstrap" not in key
        and "security" not in key
    )
