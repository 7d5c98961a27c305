"""The lag exporter benchmark's figures (run.py): the on/off ratios against the goal, with the spread
of the repeats, and the JSON and Markdown written to bench/results/lag_exporter-<date>.*."""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

from bench.machine import hardware_text
from components.platform.local.lag_exporter import POLL_S as READING_S

ROOT = Path(__file__).resolve().parents[2]
GOAL = 0.98  # throughput with the exporter / without it: under 2% cost


def values(rows: list[dict[str, Any]], key: str, side: str) -> list[float]:
    return [float(r[key]) for r in rows if r["exporter"] == side]


def spread(xs: list[float]) -> float:
    """(max - min) / mean of one side's repeats: how far two runs of the same thing disagree."""
    return (max(xs) - min(xs)) / statistics.mean(xs) if len(xs) > 1 and statistics.mean(xs) else 0.0


def ratio(rows: list[dict[str, Any]], key: str) -> dict[str, Any]:
    """mean(on) / mean(off) of `key`, bracketed by the worst and best pairing of single repeats."""
    on, off = values(rows, key, "on"), values(rows, key, "off")
    if not on or not off or min(off) <= 0:
        return {"ratio": None}
    figure = statistics.mean(on) / statistics.mean(off)
    low, high = min(on) / max(off), max(on) / min(off)
    if min(len(on), len(off)) < 2:
        verdict = f"{'met' if figure >= GOAL else 'NOT met'}, but one repeat a side: the noise is unknown"
    elif low >= GOAL:
        verdict = "met, beyond the spread of the repeats"
    elif figure >= GOAL:
        verdict = "met on the means, within noise: the spread of the repeats is wider than the 2% the goal allows"
    elif high >= GOAL:
        verdict = "not met on the means, within noise: the spread of the repeats reaches past the goal"
    else:
        verdict = "NOT met, beyond the spread of the repeats"
    return {
        "ratio": round(figure, 4),
        "range": [round(low, 4), round(high, 4)],
        "spread_on": round(spread(on), 4),
        "spread_off": round(spread(off), 4),
        "mean_on": round(statistics.mean(on), 1),
        "mean_off": round(statistics.mean(off), 1),
        "verdict": verdict,
    }


def summary(results: dict[str, Any]) -> dict[str, Any]:
    steady, drains = results["steady"], results["drains"]
    on_cpu, drain_cpu = values(steady, "exporter_cpu_pct", "on"), values(drains, "exporter_cpu_pct", "on")
    workers_on, drain_workers = values(steady, "workers_cpu_pct", "on"), values(drains, "workers_cpu_pct", "on")
    return {
        "goal": GOAL,
        "drain_rate": ratio(drains, "rate"),
        "drain_rate_after_first_record": ratio(drains, "rate_after_first"),
        "steady_delivered": ratio(steady, "delivered_per_s"),
        "exporter_cpu_pct_on": round(statistics.mean(on_cpu), 2),
        "exporter_cpu_pct_on_max": max(on_cpu),
        "exporter_cpu_pct_off_max": max(values(steady, "exporter_cpu_pct", "off")),
        "exporter_cpu_share_of_workers": round(statistics.mean(on_cpu) / max(statistics.mean(workers_on), 1e-9), 4),
        "exporter_cpu_pct_during_drains_on": round(statistics.mean(drain_cpu), 2),
        "exporter_cpu_share_of_workers_during_drains": round(
            statistics.mean(drain_cpu) / max(statistics.mean(drain_workers), 1e-9), 4
        ),
        "exporter_rss_mib_max": max(r["exporter_rss_mib_max"] for r in [*steady, *drains]),
    }


# A table's columns: (heading, how a row shows in it); the first two are left-aligned.
Columns = list[tuple[str, Any]]
USAGE: Columns = [
    ("exporter CPU (% of a core)", lambda r: f"{r['exporter_cpu_pct']:.2f}"),
    ("exporter RSS peak (MiB)", lambda r: r["exporter_rss_mib_max"]),
    ("exporter readings", lambda r: r["exporter_readings"]),
    ("workers CPU (%)", lambda r: r["workers_cpu_pct"]),
    ("machine busy (%)", lambda r: r["machine_busy_pct"]),
    ("load (1 min)", lambda r: r["load1"]),
]
STEADY: Columns = [
    ("phase", lambda r: r["phase"]),
    ("exporter", lambda r: r["exporter"]),
    ("delivered on dr (records/s)", lambda r: f"{r['delivered_per_s']:.0f}"),
    ("sent (records/s)", lambda r: f"{r['sent_per_s']:.0f}"),
    ("latency p50 / p99 (ms)", lambda r: f"{r['latency'].get('p50_ms')} / {r['latency'].get('p99_ms')}"),
    *USAGE,
]
DRAIN: Columns = [
    ("drain", lambda r: r["drain"]),
    ("exporter", lambda r: r["exporter"]),
    ("backlog", lambda r: r["backlog"]),
    ("produced in (s)", lambda r: r["produce_s"]),
    ("drained in (s)", lambda r: r["drain_s"]),
    ("first record after (s)", lambda r: r["first_arrival_s"]),
    ("rate (records/s)", lambda r: f"{r['rate']:.0f}"),
    ("rate after the first record", lambda r: f"{r['rate_after_first']:.0f}"),
    *USAGE,
]


def table(columns: Columns, rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| " + " | ".join(heading for heading, _ in columns) + " |",
        "|" + "|".join("---" if i == 1 else "---:" for i in range(len(columns))) + "|",
    ]
    return lines + ["| " + " | ".join(str(show(r)) for _, show in columns) + " |" for r in rows]


def drain_note(drains: list[dict[str, Any]]) -> str:
    counted = [r for r in drains if r["exporter"] in ("on", "off")]
    seconds = statistics.mean(r["drain_s"] for r in counted)
    on = [r for r in counted if r["exporter"] == "on"]
    short = (
        " Shorter than one reading period: a drain overlaps a reading only by chance, so the drain ratio below "
        "says little about the exporter and much about the noise (a larger `--backlog` makes drains span readings)."
    )
    return (
        f"The first drain (a warm-up, exporter on) counts in neither side. A drain took {seconds:.2f} s on average, "
        f"{seconds / READING_S:.1f} of the exporter's reading periods ({READING_S:g} s): it made "
        f"{sum(r['exporter_readings'] for r in on)} readings during the {len(on)} drains it was on for."
        + (short if seconds < READING_S else "")
    )


def ratio_line(name: str, figure: dict[str, Any]) -> str:
    if figure.get("ratio") is None:
        return f"- {name}: no figure (a side without repeats)."
    return (
        f"- {name}: **{figure['ratio']:.4f}** (mean {figure['mean_on']:.0f} on / {figure['mean_off']:.0f} off; "
        f"single repeats paired worst to best {figure['range'][0]:.4f} to {figure['range'][1]:.4f}; spread of the "
        f"repeats {100 * figure['spread_on']:.1f}% on, {100 * figure['spread_off']:.1f}% off): {figure['verdict']}."
    )


def markdown(results: dict[str, Any]) -> str:
    info, s, day = results["machine"], results["summary"], results["date"]
    loads = [", ".join(f"{x:.1f}" for x in load) for load in (info["load_avg_at_start"], results["load_avg_at_end"])]
    lines = [
        f"# Lag exporter benchmark ({day[:4]}-{day[4:6]}-{day[6:]})",
        "",
        f"Machine: {hardware_text(info)}; Kafka {info['kafka']}, "
        f"{info['java']}; load average {loads[0]} at start, {loads[1]} at end. Command: `{results['command']}`.",
        "",
        "A copy of the dev stack (two single-broker clusters, SASL/SCRAM, a 2-worker group, primary->dr with 3 "
        "source tasks) and its lag exporter (one process for the group, a reading every 5 s, nothing scraping it). "
        '"off" is the exporter stopped with SIGSTOP (no CPU, nothing restarts it), "on" continued with SIGCONT; '
        "the phases alternate in one run so drift hits both sides.",
        "",
        f"## Steady stream: {results['rate']:g} records/s asked ({results['measured_rate']} measured) into `orders`",
        "",
        f"{results['phase']:g} s per phase; latency is arrival on dr minus send time on primary, of the records "
        "sent during the phase. CPU is utime+stime over the phase (exporter: % of one core; workers: both, % of "
        "one core); machine busy is all cores.",
        "",
        *table(STEADY, results["steady"]),
        "",
        f"## Backlog drain: the flow's source connector paused, {results['backlog']} records produced, resumed",
        "",
        "Drained in: from the resume request until dr's end offsets hold every record (polled every 20 ms); "
        "the rate after the first record leaves out Connect's resume latency.",
        "",
        *table(DRAIN, results["drains"]),
        "",
        drain_note(results["drains"]),
        "",
        "## Cost against the goal (throughput with the exporter >= 0.98 x without it)",
        "",
        ratio_line("Drain rate on / off (the throughput cost figure)", s["drain_rate"]),
        ratio_line("Drain rate after the first record, on / off", s["drain_rate_after_first_record"]),
        ratio_line("Steady delivered records/s on / off (bound by the asked rate)", s["steady_delivered"]),
        f"- The exporter: {s['exporter_cpu_pct_on']:.2f}% of one core on average while on under the steady stream "
        f"(at most {s['exporter_cpu_pct_on_max']:.2f}%; {s['exporter_cpu_pct_off_max']:.2f}% while stopped), "
        f"{s['exporter_cpu_pct_during_drains_on']:.2f}% during the drains; RSS peak {s['exporter_rss_mib_max']} MiB. "
        f"Its CPU is {100 * s['exporter_cpu_share_of_workers']:.1f}% of what the two Connect workers used meanwhile "
        f"under the stream, {100 * s['exporter_cpu_share_of_workers_during_drains']:.2f}% during the drains: on a "
        "machine whose cores are all busy, about what it can take from replication (an estimate from CPU "
        "accounting, not a throughput measurement).",
        f"- Processes left behind after destroy: {results['processes_left_behind'] or 'none'}.",
    ]
    return "\n".join(lines) + "\n"


def write(results: dict[str, Any]) -> Path:
    """The figures as bench/results/lag_exporter-<date>[-<label>].json and .md; the .json's path."""
    results["summary"] = summary(results)
    name = "-".join(filter(None, ["lag_exporter", results["date"], results.get("label")]))
    out = ROOT / "bench" / "results"
    (out / f"{name}.json").write_text(json.dumps(results, indent=2) + "\n")
    text = markdown(results)
    (out / f"{name}.md").write_text(text)
    print(text)
    return out / f"{name}.json"


if __name__ == "__main__":
    # `python -m bench.lag_exporter.report <results.json>`: the summary and the .md again from the
    # figures a run recorded (after a change to this module; nothing is measured).
    recorded = json.loads(Path(sys.argv[1]).read_text())
    recorded.setdefault("date", Path(sys.argv[1]).stem.split("-")[1])
    write(recorded)
