"""WAN benchmark: MM2 across an emulated link, with the seed's client settings and with the ones
this tool derives from the declared link, side by side in one run.

    python bench/wan/run.py [--rate 50Mbit] [--rtts 0,20,50,100,200] [--losses 0,0.1]
                            [--backlog-mb 96] [--window-s 30] [--out-dir bench/results] [--suffix NAME]

First this machine's MM2 copy ceiling over loopback (the dev stack's shape, no link), then the dev
stack with `dr` in dc2 behind the link dc1<->dc2 at `--rate` (set below the ceiling), its workers
beside dr, so the source consumer is the client that crosses the link. For each rtt and loss the
link is reshaped in place (`pulumi up`) and each variant copies a fresh backlog:

  seed     seed 003's mm2.properties sets no client setting: Kafka's defaults, pinned as the
           source cluster's client overrides (consumer.receive.buffer.bytes 65536,
           consumer.fetch.max.bytes 52428800, consumer.max.partition.fetch.bytes 1048576) and
           the source brokers' brokerConfig (socket.send.buffer.bytes 102400)
  derived  nothing set: the client and broker settings components/topology/links.py derives
           from the link

Throughput: the backlog (`--backlog-mb` of 1 KiB records in a new topic of 3 partitions) is written
to primary over the machine's direct path; the clock runs from the first record on dr to the last,
or stops after `--window-s` (a slow variant is measured on what it copied by then). Variants
alternate which goes first. Records are random bytes, so compression cannot shrink what crosses.
Latency: with the link at loss 0, once a warm-up record has arrived, a producer writes at half the
link rate for 15 s and a consumer on dr notes each record's arrival minus its create time (one clock).
Emulation CPU: what the link's forwarders used during each copy, in cores (CPU seconds / seconds).
Prints the figures with the machine and writes bench/results/wan-<date>[-<suffix>].{json,md,svg}.
Needs root (the emulated link); everything it starts is stopped on exit.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.deploy.run import machine  # noqa: E402
from bench.machine import hardware_text  # noqa: E402
from bench.proc_stats import cpu_seconds  # noqa: E402
from bench.wan.plot import write_svg  # noqa: E402
from components.platform.local.layout import NETWORK_PATH  # noqa: E402
from components.topology.links import RATE_UNITS, parse_quantity  # noqa: E402
from tests.integration.emulated import dev_across_a_link, require_emulation  # noqa: E402
from tests.integration.harness import TestStack, dev_config_with_free_ports, kafka_conf, running  # noqa: E402

FLOW = "primary->dr"
RECORD = 1024
# As the source cluster's client overrides (`clusters.primary.client`), which win over derived ones.
SEED = {
    "consumer.receive.buffer.bytes": "65536",
    "consumer.fetch.max.bytes": "52428800",
    "consumer.max.partition.fetch.bytes": "1048576",
}
# And on the source brokers, Kafka's default send buffer (the stack derives one from the link).
SEED_BROKER = {"socket.send.buffer.bytes": "102400"}
VARIANTS = ("seed", "derived")
MIN_RTT_MS = 0.1  # rtt 0 is run at this: a link's rtt must be positive


def say(text: str) -> None:
    print(f"[wan-bench {time.strftime('%H:%M:%S')}] {text}", flush=True)


def bench_config(cfg: dict[str, Any]) -> dict[str, Any]:
    """One worker, the flow on every `bench-*` topic, nothing else replicated; `bench-seed` is
    there from the start, so the source connector has tasks when `up` waits for them."""
    config = cfg["config"]
    config["mm2:clusters"]["primary"]["topics"] = {"bench-seed": {"partitions": 3}}
    config["mm2:workerGroups"]["mm2"]["workers"] = 1
    config["mm2:workerGroups"]["mm2"].pop("lagPort", None)
    flow = config["mm2:flows"][FLOW]
    flow["topics"] = ["bench-.*"]
    flow["groups"] = []
    return cfg


def fill(outputs: dict[str, Any], topic: str, megabytes: int) -> int:
    """`megabytes` of RECORD-byte records into a new topic on primary; their count."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(kafka_conf(outputs, "primary"))
    admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(30)
    producer = Producer(kafka_conf(outputs, "primary", **{"linger.ms": 20, "batch.size": 1 << 20}))
    count = megabytes * 1024 * 1024 // RECORD
    for i in range(count):
        value = os.urandom(RECORD)  # incompressible: the link carries what is counted
        while True:
            try:
                producer.produce(topic, key=str(i).encode(), value=value)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(120) == 0
    return count


def target_count(outputs: dict[str, Any], topic: str) -> int:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(kafka_conf(outputs, "dr", **{"group.id": "wan-bench-ends"}))
    try:
        meta = consumer.list_topics(topic, timeout=10).topics.get(topic)
        if meta is None or meta.error is not None:
            return 0
        ends = (consumer.get_watermark_offsets(TopicPartition(topic, p), 10, cached=False) for p in meta.partitions)
        return sum(high for _low, high in ends)
    finally:
        consumer.close()


def forwarder_cpu_s(network_dir: Path | None) -> float:
    """CPU seconds the emulated link's forwarders (vde_switch, vde_plug2tap, wirefilter: the pid
    files in the stack's network directory) have used so far; 0 without a link."""
    if network_dir is None:
        return 0.0
    used = 0.0
    for pidfile in network_dir.glob("*.pid"):
        try:
            used += cpu_seconds(int(pidfile.read_text()))  # 0 for a forwarder a reshape just replaced
        except (OSError, ValueError):
            continue  # its pid file is being rewritten (a reshape): the next reading has it
    return used


def drain(outputs: dict[str, Any], megabytes: int, window_s: float, network: Path | None = None) -> dict[str, float]:
    """Copy a fresh backlog; its throughput (bytes/s) from the first record on dr to the last, and
    the share of one core the link's forwarders used meanwhile."""
    topic = f"bench-{uuid.uuid4().hex[:8]}"
    total = fill(outputs, topic, megabytes)
    remote, deadline = f"primary.{topic}", time.monotonic() + 120
    while (seen := target_count(outputs, remote)) == 0:
        assert time.monotonic() < deadline, f"nothing of {topic} reached dr within 120 s"
        time.sleep(0.1)
    start, first, cpu = time.monotonic(), seen, forwarder_cpu_s(network)
    while seen < total and time.monotonic() - start < window_s:
        time.sleep(0.2)
        seen = target_count(outputs, remote)
    elapsed = time.monotonic() - start
    emulation = (forwarder_cpu_s(network) - cpu) / max(elapsed, 1e-3)
    drop_topics(outputs, topic, remote)
    copied = (seen - first) * RECORD
    return {
        "bytes_per_s": copied / max(elapsed, 1e-3),
        "drained": seen >= total,
        "seconds": elapsed,
        "emulation_cores": emulation,
    }


def drop_topics(outputs: dict[str, Any], topic: str, remote: str) -> None:
    from confluent_kafka.admin import AdminClient

    for alias, name in (("primary", topic), ("dr", remote)):
        client = AdminClient(kafka_conf(outputs, alias))  # kept until the future resolves
        for future in client.delete_topics([name]).values():
            future.result(30)


def latency_p99(outputs: dict[str, Any], rate_bps: float, seconds: float = 15.0) -> float:
    """Write at `rate_bps` for `seconds`; the p99 of arrival on dr minus create time, in ms."""
    from confluent_kafka import Consumer, Producer

    topic = f"bench-lat-{uuid.uuid4().hex[:6]}"
    fill(outputs, topic, 0)
    arrivals: list[float] = []
    stop = threading.Event()

    def read() -> None:
        settings = {"group.id": topic, "auto.offset.reset": "earliest", "fetch.wait.max.ms": 10}
        consumer = Consumer(kafka_conf(outputs, "dr", **settings))
        consumer.subscribe([f"primary.{topic}"])
        while not stop.is_set():
            for message in consumer.consume(500, 0.2):
                if not message.error():
                    arrivals.append(time.time() * 1000 - message.timestamp()[1])
        consumer.close()

    reader = threading.Thread(target=read)
    reader.start()
    producer = Producer(kafka_conf(outputs, "primary", **{"linger.ms": 5}))
    # Until the path is warm (MM2 has the topic, the reader its partitions): then the timed run.
    deadline = time.monotonic() + 120
    while not arrivals:
        assert time.monotonic() < deadline, f"nothing of {topic} arrived on dr within 120 s"
        producer.produce(topic, value=os.urandom(RECORD))
        producer.flush(10)
        time.sleep(0.5)
    time.sleep(1.0)  # what is in flight of the warm-up lands
    arrivals.clear()
    per_s, started, sent = rate_bps / 8 / RECORD, time.monotonic(), 0
    while time.monotonic() - started < seconds:
        producer.produce(topic, value=os.urandom(RECORD))
        sent += 1
        producer.poll(0)
        ahead = sent / per_s - (time.monotonic() - started)
        if ahead > 0:
            time.sleep(ahead)
    producer.flush(30)
    deadline = time.monotonic() + 60
    while len(arrivals) < sent and time.monotonic() < deadline:
        time.sleep(0.2)
    stop.set()
    reader.join(30)
    drop_topics(outputs, topic, f"primary.{topic}")
    ordered = sorted(arrivals)
    return ordered[int(0.99 * (len(ordered) - 1))] if ordered else float("nan")


def set_link(stack: TestStack, rtt: float, loss: float, variant: str) -> None:
    config = stack.config["config"]
    link = config["mm2:links"]["dc1<->dc2"]
    link["rtt"], link["loss"] = f"{max(rtt, MIN_RTT_MS):g}ms", f"{loss:g}%"
    primary = config["mm2:clusters"]["primary"]
    primary["client"] = dict(SEED) if variant == "seed" else {}
    primary["brokerConfig"] = dict(SEED_BROKER) if variant == "seed" else {}
    stack.write_config()
    stack.up()


def ceiling(megabytes: int, window_s: float) -> float:
    with tempfile.TemporaryDirectory() as tmp, running(Path(tmp), bench_config(dev_config_with_free_ports())) as stack:
        return statistics.median(drain(stack.outputs(), megabytes, window_s)["bytes_per_s"] for _ in range(2))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", default="50Mbit")
    parser.add_argument("--rtts", default="0,20,50,100,200")
    parser.add_argument("--losses", default="0,0.1")
    parser.add_argument("--backlog-mb", type=int, default=96)
    parser.add_argument("--window-s", type=float, default=30.0)
    parser.add_argument("--out-dir", default=str(ROOT / "bench" / "results"))
    parser.add_argument("--suffix", default="", help="appended to the results' name: wan-<day>-<suffix>")
    parser.add_argument("--render", metavar="JSON", help="only write the table and plot of a saved run")
    args = parser.parse_args(argv)
    if args.render:
        render(json.loads(Path(args.render).read_text()), Path(args.render).with_suffix(""))
        return 0
    require_emulation()
    rate = parse_quantity(args.rate, RATE_UNITS)
    assert rate, f"--rate {args.rate}: a rate such as 50Mbit"
    rtts = [float(r) for r in args.rtts.split(",")]
    losses = [float(x) for x in args.losses.split(",")]
    say(f"copy ceiling over loopback, {args.backlog_mb} MB backlog ...")
    top = ceiling(args.backlog_mb, args.window_s)
    say(f"ceiling {top * 8 / 1e6:.0f} Mbit/s; the link at {rate / 1e6:g} Mbit/s ({rate / 8 / top:.2f} of it)")
    rows: list[dict[str, Any]] = []
    cfg = bench_config(dev_across_a_link(rtt=f"{MIN_RTT_MS:g}ms", bandwidth=args.rate, loss="0%"))
    with tempfile.TemporaryDirectory() as tmp, running(Path(tmp), cfg) as stack:
        outputs = stack.outputs()
        for i, (rtt, loss) in enumerate((r, x) for r in rtts for x in losses):
            for variant in VARIANTS if i % 2 == 0 else VARIANTS[::-1]:
                set_link(stack, rtt, loss, variant)
                figures = drain(outputs, args.backlog_mb, args.window_s, stack.run_dir / NETWORK_PATH)
                row = {"rtt_ms": rtt, "loss_pct": loss, "variant": variant, **figures}
                row["of_link"] = figures["bytes_per_s"] * 8 / rate
                if loss == 0:
                    row["p99_ms"] = latency_p99(outputs, rate / 2)
                rows.append(row)
                ended = "" if figures["drained"] else " (window ended)"
                p99 = f", p99 {row['p99_ms']:.0f} ms" if "p99_ms" in row else ""
                say(f"rtt {rtt:g} ms loss {loss:g}% {variant}: {row['of_link']:.2f} of the link{ended}{p99}")
    write(args, top, rate, rows)
    return 0


def write(args: argparse.Namespace, top: float, rate: float, rows: list[dict[str, Any]]) -> None:
    day = datetime.now(timezone.utc).strftime("%Y%m%d")
    doc = {"machine": machine(), "day": day, "ceiling_bps": top * 8, "link_bps": rate, "record_bytes": RECORD,
           "backlog_mb": args.backlog_mb, "window_s": args.window_s, "rows": rows}  # fmt: skip
    out = Path(args.out_dir)
    name = f"wan-{day}" + (f"-{args.suffix}" if args.suffix else "")
    (out / f"{name}.json").write_text(json.dumps(doc, indent=2) + "\n")
    render(doc, out / name)


def render(doc: dict[str, Any], stem: Path) -> None:
    """`stem`.md (the table) and `stem`.svg (the plot) from a run's JSON document."""
    m, rows, window = doc["machine"], doc["rows"], doc["window_s"]
    load = ", ".join(f"{x:.1f}" for x in m["load_avg_at_start"])
    lines = [
        f"# WAN benchmark ({doc['day']})",
        "",
        f"Machine: {hardware_text(m)}; Kafka {m['kafka']}, {m['java']}; load "
        f"average {load} at start. MM2 copy ceiling over loopback {doc['ceiling_bps'] / 1e6:.0f} Mbit/s; the link "
        f"{doc['link_bps'] / 1e6:g} Mbit/s; backlog {doc['backlog_mb']} MB of {doc['record_bytes']}-byte random "
        f"records, window {window:g} s; rtt 0 runs at {MIN_RTT_MS:g} ms.",
        "",
        "| rtt ms | loss % | seed / link | derived / link | derived / seed | drain s (seed, derived) "
        "| p99 ms at half rate (seed, derived) | emulation CPU, cores (seed, derived) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for rtt in sorted({r["rtt_ms"] for r in rows}):
        for loss in sorted({r["loss_pct"] for r in rows}):
            pick = {r["variant"]: r for r in rows if r["rtt_ms"] == rtt and r["loss_pct"] == loss}
            lines.append(_row(rtt, loss, pick["seed"], pick["derived"], window))
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    write_svg(rows, stem.with_suffix(".svg"))
    print("\n".join(lines))


def _row(rtt: float, loss: float, s: dict[str, Any], d: dict[str, Any], window: float) -> str:
    def drained(r: dict[str, Any]) -> str:
        return f"{r['seconds']:.0f}" if r["drained"] else f">{window:g}"

    p99 = f"{s.get('p99_ms', float('nan')):.0f}, {d.get('p99_ms', float('nan')):.0f}" if loss == 0 else "-"
    ratio = d["bytes_per_s"] / max(s["bytes_per_s"], 1.0)
    cpu = f"{s['emulation_cores']:.2f}, {d['emulation_cores']:.2f}" if "emulation_cores" in s else "-"
    return (f"| {rtt:g} | {loss:g} | {s['of_link']:.2f} | {d['of_link']:.2f} | {ratio:.1f} | "
            f"{drained(s)}, {drained(d)} | {p99} | {cpu} |")  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
