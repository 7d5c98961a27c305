"""The lag exporter of one worker group: per source partition of its flows, how far MM2 is behind
(records and seconds) and what the source deleted before MM2 copied it (the data-loss sentinel).

    python -m components.ops.lag_exporter --plan <run>/lag-exporter-mm2/plan.json   (the stack runs it)

Every `pollSeconds` it reads, per flow (read-only: consumers that join no group and commit
nothing):
- MM2's committed source offsets, from the worker group's offsets topic (read incrementally);
- each replicated source partition's log start and last stable offset, and its topic's ID;
- the timestamp of the oldest record MM2 has not copied (one record per lagging partition).
What it makes of them is components/watch/lag.py. It serves, on the plan's `listen` address:
- `GET /metrics`: Prometheus text (metric names and labels: docs/monitoring.md);
- `GET /expired`: JSON, every expiry found (flow, topic, partition, offsets, count, reason);
- `GET /healthz`: 200 once a first reading is done.
The sentinel's memory and every expiry are kept in the plan's `stateFile` (replaced atomically),
so a restart neither forgets an expiry nor counts one twice. The status file (its URL, the last
reading's per-flow figures) is replaced after every reading.

Imports only the standard library, confluent-kafka and the pure lag modules: the Kubernetes pod
runs it from the watcher image with those mounted.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from components.mm2_records import decode_source_offset
from components.watch.lag import (
    FlowLag,
    Reading,
    SentinelState,
    expiries_document,
    exposition,
    next_offset,
    observe_flow,
    state_document,
    state_from_document,
)
from components.watch.lag_plan import SECRETS_ENV, LagFlow, LagPlan, plan_from_document

_TIMEOUT_S = 10.0
_OLDEST_BUDGET_S = 2.0


def _internal(topic: str) -> bool:
    return topic.startswith("__") or topic.endswith(".internal") or topic.startswith("mm2-") or topic == "heartbeats"


def replicated_topics(flow: LagFlow, topics: Mapping[str, int], committed_topics: set[str]) -> list[str]:
    """The source topics the flow copies: those MM2 committed offsets for, and those its patterns
    select that are neither internal nor the target's own remote topics (MM2 skips cycles)."""
    include = [re.compile(p) for p in flow.topics]
    exclude = [re.compile(p) for p in flow.topics_exclude]
    picked = set(committed_topics) & set(topics)
    for name in topics:
        if _internal(name) or name.startswith(f"{flow.target}."):
            continue
        if any(p.fullmatch(name) for p in include) and not any(p.fullmatch(name) for p in exclude):
            picked.add(name)
    return sorted(picked)


class Kafka:
    """The exporter's reads of the clusters (confluent-kafka)."""

    def __init__(self, plan: LagPlan, secrets: Mapping[str, Mapping[str, str]]) -> None:
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
        from confluent_kafka.admin import AdminClient

        self.plan = plan
        self._tp = TopicPartition

        def conf(alias: str, **extra: Any) -> dict[str, Any]:
            return {**plan.clusters[alias], **(secrets.get(alias) or {}), "log_level": 0, **extra}

        group = f"mm2-lag-exporter-{plan.group}"  # never joined nor committed: assign() only
        consumer = {"group.id": group, "enable.auto.commit": False, "isolation.level": "read_committed"}
        self.consumers = {alias: Consumer(conf(alias, **consumer)) for alias in plan.clusters}
        self.admins = {alias: AdminClient(conf(alias)) for alias in plan.clusters}
        # MM2's progress: the offsets topic from the beginning, then what is new at every reading.
        self.offsets_reader = Consumer(conf(plan.storage_cluster, **consumer))
        meta = self.offsets_reader.list_topics(plan.offsets_topic, timeout=_TIMEOUT_S).topics[plan.offsets_topic]
        parts = sorted(meta.partitions or {})
        self.offsets_reader.assign([TopicPartition(plan.offsets_topic, p, OFFSET_BEGINNING) for p in parts])
        self._offsets_partitions = [TopicPartition(plan.offsets_topic, p) for p in parts]
        self.committed: dict[tuple[str, str], dict[tuple[str, int], int]] = {}

    def _offsets_read(self, fetched_nothing: bool) -> bool:
        """Whether the offsets reader is at the end: every partition fetched at least once (its
        watermarks known from the last fetch, no broker round trip) and either empty or read to
        its high watermark; or, once it has a position on every partition holding records, a
        fetch that brought nothing (an open transaction holds the readable end below the high
        watermark: waiting for the watermark would wait for the transaction)."""
        at = {tp.partition: tp.offset for tp in self.offsets_reader.position(self._offsets_partitions)}
        marks = {
            tp.partition: self.offsets_reader.get_watermark_offsets(tp, cached=True) or (-1, -1)
            for tp in self._offsets_partitions
        }
        if any(high < 0 for _low, high in marks.values()):
            return False  # a partition not fetched yet: the reader is still connecting
        if all(low >= high or at.get(p, -1) >= high for p, (low, high) in marks.items()):
            return True
        return fetched_nothing and all(low >= high or at.get(p, -1) >= 0 for p, (low, high) in marks.items())

    def read_committed(self) -> None:
        """Read the offsets topic up to its end as of now (`_offsets_read`). An empty fetch alone
        proves nothing: a reader still connecting on a busy machine fetches nothing for a while,
        and a cut read then would be empty."""
        deadline = time.monotonic() + _TIMEOUT_S
        msgs: list[Any] = [None]
        while not self._offsets_read(not msgs) and time.monotonic() < deadline:
            msgs = self.offsets_reader.consume(num_messages=10000, timeout=0.5)
            for m in msgs:
                if m.error() is not None:
                    continue
                for f in self.plan.flows:
                    got = decode_source_offset(m.key(), m.value(), f.connector, f.source)
                    if got is None:
                        continue
                    seen = self.committed.setdefault((f.connector, f.source), {})
                    if got[1] is None:
                        seen.pop(got[0], None)
                    else:
                        seen[got[0]] = got[1]

    def _topic_ids(self, alias: str, topics: list[str]) -> dict[str, str]:
        admin = self.admins[alias]
        if not topics or not hasattr(admin, "describe_topics"):  # confluent-kafka < 2.3: no topic IDs
            return {}
        from confluent_kafka import TopicCollection

        ids = {}
        for name, future in admin.describe_topics(TopicCollection(topics), request_timeout=_TIMEOUT_S).items():
            try:
                ids[name] = str(future.result().topic_id)
            except Exception:  # deleted between the listing and now: read at the next poll
                continue
        return ids

    def read_flow(self, flow: LagFlow, oldest: bool = True) -> list[Reading]:
        """The flow's partitions now; with `oldest`, each lagging one's oldest record's timestamp."""
        consumer = self.consumers[flow.source]
        listing = consumer.list_topics(timeout=_TIMEOUT_S).topics
        counts = {name: len(t.partitions or {}) for name, t in listing.items() if t.error is None}
        committed = self.committed.get((flow.connector, flow.source), {})
        topics = replicated_topics(flow, counts, {t for (t, _p) in committed})
        ids = self._topic_ids(flow.source, topics)
        readings = []
        for topic in topics:
            for p in range(counts[topic]):
                low, high = consumer.get_watermark_offsets(self._tp(topic, p), timeout=_TIMEOUT_S, cached=False)
                readings.append(Reading(topic, p, low, high, committed.get((topic, p)), ids.get(topic)))
        return self._with_oldest(flow.source, readings) if oldest else readings

    def _with_oldest(self, alias: str, readings: list[Reading]) -> list[Reading]:
        """Each lagging partition's reading with the timestamp of its oldest record not copied."""
        wanted = {}
        for r in readings:
            nxt = next_offset(r, None)
            if r.end > nxt:
                wanted[(r.topic, r.partition)] = nxt
        if not wanted:
            return readings
        consumer = self.consumers[alias]
        consumer.assign([self._tp(t, p, o) for (t, p), o in wanted.items()])
        found: dict[tuple[str, int], int] = {}
        deadline = time.monotonic() + _OLDEST_BUDGET_S
        while len(found) < len(wanted) and time.monotonic() < deadline:
            for m in consumer.consume(num_messages=500, timeout=0.2):
                key = (m.topic(), m.partition())
                if m.error() is None and key in wanted and key not in found:
                    found[key] = m.timestamp()[1]
                    consumer.pause([self._tp(*key)])
        # A paused partition stays paused in librdkafka across unassign and assign: resume first.
        consumer.resume([self._tp(t, p) for (t, p) in found])
        consumer.unassign()
        return [replace(r, oldest_ms=found.get((r.topic, r.partition))) for r in readings]

    def close(self) -> None:
        for c in [*self.consumers.values(), self.offsets_reader]:
            c.close()


class Exporter:
    """Readings every poll; the latest served over HTTP; the sentinel's state kept on disk."""

    def __init__(self, plan: LagPlan, kafka: Any) -> None:
        self.plan, self.kafka = plan, kafka
        self.state = _load_state(plan.state_file)
        self.flows = {f.name: FlowLag(f.name, f.source, f.target, f.rpo_seconds) for f in plan.flows}
        self.lock = threading.Lock()
        self.ready = False
        self.url = ""

    def read_once(self, now_ms: int | None = None) -> None:
        self.kafka.read_committed()
        for f in self.plan.flows:
            now = int(time.time() * 1000) if now_ms is None else now_ms
            try:
                readings = self.kafka.read_flow(f)
            except Exception as exc:  # a cluster not answering: counted and logged, the next poll retries
                self.flows[f.name] = replace(self.flows[f.name], read_errors=self.flows[f.name].read_errors + 1)
                print(f"lag-exporter: flow {f.name}: reading failed: {exc}", flush=True)
                continue
            with self.lock:
                self.state, lags, found = observe_flow(self.state, f.name, readings, now)
                self.flows[f.name] = replace(self.flows[f.name], partitions=tuple(lags), read_at_s=now / 1000)
            for e in found:
                print(f"lag-exporter: flow {f.name}: {e.describe()}", flush=True)
        _write_json(self.plan.state_file, state_document(self.state))
        self.ready = True
        _write_json(self.plan.status_file, self.status())

    def metrics(self) -> str:
        with self.lock:
            return exposition(list(self.flows.values()), self.state)

    def expired(self) -> dict[str, Any]:
        with self.lock:
            return expiries_document(self.state)

    def status(self) -> dict[str, Any]:
        with self.lock:
            flows = {
                name: {
                    "lagRecords": max((p.records for p in f.partitions), default=0),
                    "lagSeconds": max((p.seconds for p in f.partitions), default=0.0),
                    "partitions": len(f.partitions),
                    "readErrors": f.read_errors,
                }
                for name, f in self.flows.items()
            }
            expired = sum(e.count for e in self.state.expiries)
        return {"group": self.plan.group, "pid": os.getpid(), "url": self.url, "flows": flows, "expired": expired}


def _load_state(path: str | None) -> SentinelState:
    if not path or not Path(path).exists():
        return SentinelState({})
    try:
        # A re-creation an older exporter kept no time of was found by now at the latest.
        return state_from_document(json.loads(Path(path).read_text()), loaded_at_ms=int(time.time() * 1000))
    except (OSError, ValueError) as exc:
        raise SystemExit(f"lag-exporter: cannot read its state {path}: {exc}. Next step: move it aside.") from exc


def _write_json(path: str | None, doc: Mapping[str, Any]) -> None:
    if not path:
        return
    tmp = Path(f"{path}.tmp")
    tmp.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)  # readers see the old or the new file, never half of one


def serve(exporter: Exporter, listen: str) -> ThreadingHTTPServer:
    host, _, port = listen.rpartition(":")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                body, kind = exporter.metrics().encode(), "text/plain; version=0.0.4"
            elif path == "/expired":
                body, kind = json.dumps(exporter.expired()).encode(), "application/json"
            elif path == "/healthz":
                ok = exporter.ready
                body, kind = (b"ok\n" if ok else b"no reading yet\n"), "text/plain"
                if not ok:
                    self.send_response(503)
                    self.end_headers()
                    self.wfile.write(body)
                    return
            else:
                self.send_error(404, "GET /metrics, /expired or /healthz")
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args: Any) -> None:  # scrapes are not news
            return

    try:
        server = ThreadingHTTPServer((host or "127.0.0.1", int(port or 0)), Handler)
    except OSError as exc:  # a fixed port (locally the group's lagPort) another program holds
        raise SystemExit(
            f"lag-exporter: cannot listen on {listen}: {exc.strerror or exc}. Next step: stop whatever listens "
            f"there (`ss -ltnp | grep :{port}`), or give the exporter another port (locally "
            f"`mm2:workerGroups.{exporter.plan.group}.lagPort`)."
        ) from exc
    threading.Thread(target=server.serve_forever, daemon=True).start()
    bound_host = host if host not in ("", "0.0.0.0") else "127.0.0.1"
    exporter.url = f"http://{bound_host}:{server.server_address[1]}"
    return server


def read_secrets(plan: LagPlan) -> dict[str, dict[str, str]]:
    """The clients' secret settings: the plan's secretsFile (local), else the environment (a pod)."""
    if plan.secrets_file:
        return dict(json.loads(Path(plan.secrets_file).read_text()))
    return dict(json.loads(os.environ.get(SECRETS_ENV) or "{}"))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lag-exporter", description=__doc__.split("\n\n")[0])
    parser.add_argument("--plan", required=True, help="the plan file the stack wrote")
    args, _marker = parser.parse_known_args(argv)  # the stack's process marker rides along
    try:
        plan = plan_from_document(json.loads(Path(args.plan).read_text()))
    except (OSError, ValueError, KeyError) as exc:
        print(f"lag-exporter: cannot read the plan {args.plan}: {exc}. Next step: `bin/pulumi up`.", file=sys.stderr)
        return 1
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    kafka = Kafka(plan, read_secrets(plan))
    exporter = Exporter(plan, kafka)
    server = serve(exporter, plan.listen)
    print(f"lag-exporter: group {plan.group}: serving {exporter.url}/metrics, every {plan.poll_s:g}s", flush=True)
    try:
        while not stop.is_set():
            exporter.read_once()
            stop.wait(plan.poll_s)
    finally:
        server.shutdown()
        kafka.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
