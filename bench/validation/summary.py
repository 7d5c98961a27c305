"""The validation benchmark's summary (medians per size, the two-tier figures) and its Markdown."""

from __future__ import annotations

import argparse
import json
import statistics
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bench.machine import hardware_text

FAULT_PARTITION = 3  # the remote partition whose first record the fault run deletes


def median(runs: list[dict[str, Any]], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def summarize(sizes: list[int], results: dict[int, dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """Medians per size. Throughput only counts runs that passed with every record matched; a size
    where every Spark run failed has no Spark throughput (its wall time until failure is kept)."""
    out = {}
    for n in sizes:
        r = results[n]
        sp, bl = r["spark"], r["baseline"]
        sp_ok = [x for x in sp if x["passed"] and x["matched"] == n]
        bl_ok = [x for x in bl if x["passed"] and x["matched"] == n]
        sp_rate = median(sp_ok, "records_per_s") if sp_ok else None
        bl_rate = median(bl_ok, "records_per_s") if bl_ok else None
        out[n] = {
            "runs": len(sp),
            "spark_runs_passed": len(sp_ok),
            "baseline_runs_passed": len(bl_ok),
            "load_s": r["load_s"],
            "spark_wall_s": median(sp_ok, "wall_s") if sp_ok else None,
            "spark_failed_after_s": [x["wall_s"] for x in sp if x not in sp_ok],
            "spark_records_per_s": sp_rate,
            "spark_flow_s": statistics.median(x["flow_s"] or 0 for x in sp_ok) if sp_ok else None,
            "baseline_wall_s": median(bl_ok, "wall_s") if bl_ok else None,
            "baseline_records_per_s": bl_rate,
            "spark_vs_baseline": round(sp_rate / bl_rate, 2) if sp_rate and bl_rate else None,
            "spark_driver_python_peak_rss_mib": max(x["driver_python_peak_rss_mib"] or 0 for x in sp),
            "spark_driver_jvm_peak_rss_mib": max(x["driver_jvm_peak_rss_mib"] or 0 for x in sp),
            "spark_driver_jvm_heap_peak_used_mib": round(max(x["driver_jvm_heap"]["peak_used_mib"] for x in sp)),
            "spark_driver_jvm_xmx": sp[0]["driver_jvm_xmx"],
            "baseline_peak_rss_mib": max(x["peak_rss_mib"] or 0 for x in bl),
            "all_passed": len(sp_ok) == len(sp) and len(bl_ok) == len(bl),
            "cpu_s": {kind: _cpu_medians(runs) for kind, runs in (("spark", sp), ("baseline", bl))},
            **_tiers(n, r, sp_ok),
        }
    return out


def _tiers(n: int, r: dict[str, Any], sp_ok: list[dict[str, Any]]) -> dict[str, Any]:
    """Fast path vs the bare scan (the engine's floor), and the one-fault run vs the clean ones."""
    bare = [x for x in r.get("bare", []) if x["passed"]]
    fault = r.get("fault", [])
    sp_wall = median(sp_ok, "wall_s") if sp_ok else None
    bare_wall = median(bare, "wall_s") if bare else None
    out: dict[str, Any] = {
        "bare_wall_s": bare_wall,
        "bare_scan_s": statistics.median(x["scan_s"] for x in bare) if bare else None,
        "spark_fast_s": statistics.median(x["fast_s"] or 0 for x in sp_ok) if sp_ok else None,
        "spark_vs_bare": round(sp_wall / bare_wall, 2) if sp_wall and bare_wall else None,
        "bare_driver_python_peak_rss_mib": max((x["driver_python_peak_rss_mib"] or 0 for x in bare), default=None),
        "bare_driver_jvm_peak_rss_mib": max((x["driver_jvm_peak_rss_mib"] or 0 for x in bare), default=None),
    }
    if fault:
        f = fault[0]
        out["fault"] = {
            "wall_s": f["wall_s"],
            "vs_clean": round(f["wall_s"] / sp_wall, 2) if sp_wall else None,
            "exit_code": f["exit_code"],
            "failed_checks": f["failed_checks"],
            "partitions_by_path": f["partitions_by_path"],
            "exact_s": f["match_s"],
            "align_s": f.get("align_s"),
            "catch_up": f.get("catch_up"),
        }
    return out


def tiers_markdown(summary: dict[int, dict[str, Any]]) -> list[str]:
    lines = [
        "",
        "Two-tier validation against the engine's floor (a bare Spark scan of both topics, same session "
        "settings, every column materialised, nothing compared) and with one injected fault (the first "
        f"record of remote partition {FAULT_PARTITION} deleted with AdminClient.delete_records):",
        "",
        "| records | validator wall (s) | of which fast path job (s) | bare scan wall (s) | bare scan job (s) "
        "| validator / bare | bare scan driver peak RSS: Python / JVM (MiB) | one fault: wall (s) "
        "| of which catch-up wait (s), ended | of which exact tier (s): alignment + matching | fault / clean "
        "| fault verdict "
        "| partitions fast / exact |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---|---|",
    ]
    for n in sorted(summary):
        s = summary[n]
        f = s.get("fault") or {}
        wait = f.get("catch_up") or {}
        paths = f.get("partitions_by_path") or {}
        lines.append(
            f"| {n:,} | {_num(s['spark_wall_s'], '.1f')} | {_num(s.get('spark_fast_s'), '.1f')} "
            f"| {_num(s.get('bare_wall_s'), '.1f')} | {_num(s.get('bare_scan_s'), '.1f')} "
            f"| {_num(s.get('spark_vs_bare'), '.2f')}x "
            f"| {_num(s.get('bare_driver_python_peak_rss_mib'), '.0f')} "
            f"/ {_num(s.get('bare_driver_jvm_peak_rss_mib'), '.0f')} "
            f"| {_num(f.get('wall_s'), '.1f')} "
            f"| {_num(wait.get('waitedSeconds'), '.1f')}, {wait.get('ended', 'n/a')} "
            f"| {_num(f.get('exact_s'), '.1f')}: {_num(f.get('align_s'), '.1f', 'none')} + "
            f"{_num((f.get('exact_s') or 0) - (f.get('align_s') or 0), '.1f')} "
            f"| {_num(f.get('vs_clean'), '.2f')}x | {', '.join(f.get('failed_checks') or []) or 'n/a'} "
            f"| {paths.get('fast', 0)} / {paths.get('exact', 0)} |"
        )
    return lines


def _num(x: float | None, fmt: str, none: str = "n/a") -> str:
    return none if x is None else format(x, fmt)


def _cpu_medians(runs: list[dict[str, Any]]) -> dict[str, float]:
    """Median CPU seconds during a validator's runs: per process role, untracked, machine busy."""
    roles = sorted({r for x in runs for r in x["cpu"]["by_role"]})
    out = {r: statistics.median(x["cpu"]["by_role"].get(r, {}).get("cpu_s", 0.0) for x in runs) for r in roles}
    for key in ("untracked_cpu_s", "machine_busy_cpu_s", "machine_capacity_cpu_s", "wall_s"):
        out[key] = statistics.median(x["cpu"][key] for x in runs)
    return {k: round(v, 1) for k, v in out.items()}


def markdown(info: dict[str, Any], args: argparse.Namespace, summary: dict[int, dict[str, Any]], command: str) -> str:
    sizes = sorted(summary)
    lines = [
        f"# Validation benchmark ({datetime.now(timezone.utc):%Y-%m-%d})",
        "",
        f"Machine: {hardware_text(info)}, load average "
        f"{info['load_avg_at_start']} at start and {info['load_avg_at_end']} at end; {info['java']}, "
        f"Kafka {info['kafka']} (two single-node KRaft clusters on loopback, on the same machine), "
        f"Spark/pyspark {info['pyspark']} (`local[*]`), confluent-kafka {info['confluent_kafka']} "
        f"(librdkafka {info['librdkafka']}), Python {info['python']}.",
        "",
        f"Command: `{command}`. {args.partitions} partitions; records of a ~16 B key, a 100-400 B value "
        "(uniform, mean 250 B, word-like text), 2-3 headers and a CreateTime timestamp; source and "
        "remote topic written directly with identical records (no MirrorMaker: the benchmark measures "
        "validation, not replication), lz4. Throughput = source records validated per second of "
        "wall time, each validator reading both topics (2N records) as a child process, start-up included. "
        "An untimed bare scan reads both topics once after the load, before the timed runs. "
        + ", ".join(f"{summary[n]['runs']} run(s) at {n:,}" for n in sizes)
        + "; medians.",
        "",
        "| records | load both topics (s) | Spark wall (s) | Spark rec/s | baseline wall (s) | baseline rec/s "
        "| Spark / baseline | Spark driver peak RSS: Python / JVM (MiB) | JVM heap used, peak (MiB) "
        "| baseline peak RSS (MiB) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for n in sizes:
        s = summary[n]
        failed = ", ".join(f"{w:.0f}" for w in s["spark_failed_after_s"])
        spark_wall = _num(s["spark_wall_s"], ".1f") + (f" (FAILED after {failed} s)" if failed else "")
        lines.append(
            f"| {n:,} | {s['load_s']:.0f} | {spark_wall} | {_num(s['spark_records_per_s'], ',.0f')} "
            f"| {_num(s['baseline_wall_s'], '.1f')} | {_num(s['baseline_records_per_s'], ',.0f')} "
            f"| {_num(s['spark_vs_baseline'], '.2f')}{'x' if s['spark_vs_baseline'] else ''} "
            f"| {s['spark_driver_python_peak_rss_mib']:.0f} / {s['spark_driver_jvm_peak_rss_mib']:.0f} "
            f"| {s['spark_driver_jvm_heap_peak_used_mib']} | {s['baseline_peak_rss_mib']:.0f} |"
        )
    lines += _cpu_table(summary, sizes)
    lines += [
        "",
        "Spark in-stage rate (source records / the fast-path job's seconds: session up, both topics read and "
        "fingerprinted, JVM start-up excluded): "
        + (
            ", ".join(
                f"{n:,}: {n / summary[n]['spark_fast_s']:,.0f} rec/s" for n in sizes if summary[n].get("spark_fast_s")
            )
            or "none (no Spark run passed)"
        )
        + ".",
    ]
    lines += tiers_markdown(summary)
    big = summary[sizes[-1]]
    small = summary[sizes[0]]
    lines += [
        "",
        f"Goal Spark >= 0.6x baseline at {sizes[-1]:,}: "
        f"{'met' if (big['spark_vs_baseline'] or 0) >= 0.6 else 'NOT met'} "
        f"({_num(big['spark_vs_baseline'], '.2f', 'no Spark run passed')}"
        f"{'x' if big['spark_vs_baseline'] else ''}). Driver memory from {sizes[0]:,} to {sizes[-1]:,} records: "
        f"Python {small['spark_driver_python_peak_rss_mib']:.0f} -> {big['spark_driver_python_peak_rss_mib']:.0f} MiB, "
        f"JVM RSS {small['spark_driver_jvm_peak_rss_mib']:.0f} -> {big['spark_driver_jvm_peak_rss_mib']:.0f} MiB, "
        f"JVM heap used {small['spark_driver_jvm_heap_peak_used_mib']} -> "
        f"{big['spark_driver_jvm_heap_peak_used_mib']} MiB. "
        f"All validations passed with every record matched: {all(s['all_passed'] for s in summary.values())}. "
        f"Driver JVM max heap -Xmx {big['spark_driver_jvm_xmx']} (the validator sets no spark.driver.memory; "
        "with local[*] the executors share this JVM, so its RSS and heap include all executor work).",
    ]
    return "\n".join(lines)


def _cpu_table(summary: dict[int, dict[str, Any]], sizes: list[int]) -> list[str]:
    """The table of where the CPU went while each validator ran, per size."""
    lines = [
        "",
        "Where the CPU went (CPU seconds while each validator ran, medians; 'untracked' is every other "
        "process on the machine, e.g. other users' jobs; capacity = cores x wall time):",
        "",
        "| records | validator | wall (s) | validator CPU | CPU per record (µs) | of which Spark driver JVM / Python "
        "| brokers | jstat | untracked | machine busy / capacity |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for n in sizes:
        for kind in ("spark", "baseline"):
            c = summary[n]["cpu_s"][kind]
            own = sum(v for k, v in c.items() if k.startswith(kind))
            passed = summary[n][f"{kind}_runs_passed"]
            label = kind if passed else f"{kind} (failed, until failure)"
            split = (
                f"{c.get('spark_driver_jvm', 0):.0f} / {c.get('spark_driver_python', 0):.1f}"
                if kind == "spark"
                else "-"
            )
            lines.append(
                f"| {n:,} | {label} | {c['wall_s']:.1f} | {own:.1f} | {own / n * 1e6:.1f} | {split} "
                f"| {c.get('broker', 0):.1f} "
                f"| {c.get('jstat', 0):.1f} | {c['untracked_cpu_s']:.1f} "
                f"| {c['machine_busy_cpu_s']:.0f} / {c['machine_capacity_cpu_s']:.0f} |"
            )
    return lines


def render(path: Path) -> int:
    """Recompute the summary of a results JSON and rewrite it with its .md (same name, .md)."""
    report = json.loads(path.read_text())
    results = {int(k): v for k, v in report["runs"].items()}
    report["summary"] = summarize(sorted(results), results)
    args = argparse.Namespace(partitions=report["partitions"])
    text = markdown(report["machine"], args, report["summary"], report["command"])
    path.write_text(json.dumps(report, indent=2) + "\n")
    path.with_suffix(".md").write_text(text + "\n")
    print(text)
    return 0
