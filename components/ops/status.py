"""Health of a stack's flows at a glance: connectors and tasks, lag, checkpoints, heartbeats.

    bin/status --stack dev [--json] [--watch [SECONDS]] [--flow primary->dr] [--lag-url GROUP=URL]
    bin/status --outputs outputs.json

Per flow: each connector and task with its worker and state (and the first trace line when
FAILED); per replicated topic the lag (source end offsets against the target's, translated
through MM2's offset syncs); the age of the newest checkpoint; the age and latency of the newest
heartbeat; per cluster pair (`mm2:failover`) its active side, its latest switchover and whether
the passive side's fence holds every declared principal (read live); per cluster a flow reads or
writes, when one of its brokers is down or behind, which (from the cluster's metadata) and, where
its brokers run as pods, the pod, node and zone and whether the node is Ready
(components/ops/brokers.py). What makes a flow or a pair unhealthy: components/ops/status_view.py.

Reads the stack outputs (`components/outputs/loader.py`), Connect's REST API and the clusters
(read-only consumers that join no group and commit nothing).

With --stack, a worker group whose auto-restart watcher runs as a local process of the stack also
shows that watcher's status file (what it restarted and when), in the table and under `watchers`
in --json.

A flow whose worker group runs a lag exporter (`connect.<group>.lagUrl`) also shows what the
exporter found: the flow's lag (records and seconds, from its /metrics) and every source record
deleted before MM2 copied it, by partition with offsets, count and reason, and every replicated
source topic deleted and created again (from its /expired): those make the flow unhealthy, unless
found at or before the flow's loss acknowledgement (`mm2:flows.<flow>.lossAcknowledged`, exported
as `flows.<flow>.lossAcknowledgedAt`): those are listed, marked acknowledged. An exporter not
answering within `LAG_EXPORTER_TIMEOUT_S` (2 s, asked while the workers are probed) is a note
under the flow and changes no exit code.

On Kubernetes the exported lagUrl is the exporter's in-cluster Service
(`http://<group>-lag-exporter.<namespace>.svc:9404`), which a machine outside the cluster cannot
reach directly: it is read through the API server of the group's context, as the kubeconfig's
user (`services/proxy`), as are each worker pod's metrics (`pods/proxy`: the copy rate). Where
that is not possible (no kubeconfig here, a user without the right) the note says so; then
forward its port and give the forwarded address with `--lag-url GROUP=URL` (repeatable; it
replaces the group's lagUrl for this run):

    kubectl port-forward -n <namespace> svc/mm2-lag-exporter 9404 &
    bin/status --stack prod --lag-url mm2=http://127.0.0.1:9404

Every worker of each worker group is asked first, all at once, with a short timeout
(`WORKER_PROBE_TIMEOUT_S`, 2 s): a group none of whose workers answers is named in the flows it
runs ("worker group mm2: no worker answered within 2 s") and its connectors are not read, so a
dead group is reported in seconds instead of after a client's whole retry budget.

Exit codes:
  0  every flow healthy
  1  an error: no deployment to show (no outputs), a cluster not answering, a worker group that
     answered the probe and then failed mid-read
  2  wrong arguments (argparse)
  3  unhealthy: a flow is unhealthy, including every flow of a worker group with no worker
     answering and every flow with source records deleted before MM2 copied them or a source
     topic created again that its loss acknowledgement does not cover; or a cluster pair's
     passive side lacks part of its fence; or a cluster has a broker down or behind (the reasons
     are printed)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.parse
from collections.abc import Collection, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from components.mm2_records import OffsetSync, RecordFormatError, decode_heartbeat, decode_offset_sync
from components.ops.brokers import ClusterHealth, PartitionReplicas, cluster_health, health_lines, pod_place
from components.ops.clients import connect_client, flow, kafka_config
from components.ops.errors import OpsError
from components.ops.stall import stall_problem
from components.ops.status_probes import dead_groups, exporter_readings, worker_metrics
from components.ops.status_view import (
    HEARTBEAT_MAX_AGE_S,
    ConnectorView,
    ExporterReading,
    FlowStatus,
    HeartbeatView,
    PairView,
    TaskView,
    group_down_problem,
    newest_syncs,
    pair_lines,
    problems_of,
    render_status_table,
    sentinel_problems,
    sentinel_view,
    to_json,
    topic_view,
    unreachable_views,
    watcher_lines,
)
from components.ops.throughput import flow_throughput
from components.outputs.contract import FlowExport, OutputsError, PairExport, StackExports
from components.outputs.loader import load_exports
from components.platform.local.layout import WATCHER_STATUS_FILE, run_root, watcher_path
from components.topology.traces import first_line

TIMEOUT_S = 5.0
ROOT = Path(__file__).resolve().parents[2]
HEARTBEAT_TAIL = 50  # records read from the end of a heartbeats topic (several flows may write it)


class ClusterReader:
    """One read-only consumer per cluster, reused for every read of one status pass."""

    def __init__(self, conf: dict[str, Any], alias: str) -> None:
        from confluent_kafka import Consumer

        self.alias = alias
        # A watermark request waits behind the connection's fetch long-poll (fetch.wait.max.ms,
        # 500 ms by default): keep the poll short and unassign after each read.
        self.consumer = Consumer(
            {
                **conf,
                "group.id": "mm2-status-reader",
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                "fetch.wait.max.ms": 10,
            }
        )
        md = self.consumer.list_topics(timeout=TIMEOUT_S)
        self.partitions = {
            name: sorted(meta.partitions) for name, meta in md.topics.items() if meta.error is None and meta.partitions
        }
        replicas = [
            PartitionReplicas(name, p.id, tuple(p.replicas), tuple(p.isrs))
            for name, meta in md.topics.items()
            if meta.error is None
            for p in meta.partitions.values()
        ]
        self.health = cluster_health(alias, md.brokers, replicas)

    def close(self) -> None:
        self.consumer.close()

    def ends(self, topic: str) -> dict[int, int] | None:
        """Log-end offset per partition, None when the topic does not exist."""
        from confluent_kafka import TopicPartition

        if topic not in self.partitions:
            return None
        return {
            p: self.consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=TIMEOUT_S)[1]
            for p in self.partitions[topic]
        }

    def read(self, topic: str, partition: int = 0, last: int | None = None) -> list[Any]:
        """The records of one partition up to its end (only the `last` ones when given)."""
        from confluent_kafka import TopicPartition

        if partition not in self.partitions.get(topic, ()):
            return []
        low, high = self.consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=TIMEOUT_S)
        if high <= low:
            return []
        start = low if last is None else max(low, high - last)
        self.consumer.assign([TopicPartition(topic, partition, start)])
        try:
            return self._until_end(topic, high)
        finally:
            self.consumer.unassign()

    def _until_end(self, topic: str, high: int) -> list[Any]:
        from confluent_kafka import KafkaError

        records: list[Any] = []
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:
            msg = self.consumer.poll(0.2)
            if msg is None:
                continue
            error = msg.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    return records
                continue
            records.append(msg)
            if (msg.offset() or 0) >= high - 1:
                return records
        raise OpsError(
            f"reading {topic} on {self.alias}: not at its end after {TIMEOUT_S:.0f}s. "
            f"Next step: check that cluster {self.alias} is healthy."
        )


def connector_views(outputs: StackExports, f: FlowExport) -> tuple[ConnectorView, ...]:
    views = []
    with connect_client(outputs, f.worker_group) as client:
        for role, name in f.connectors.items():
            desired = f.desired_states.get(role, "RUNNING")
            status = client.get_status(name)
            if status is None:
                views.append(ConnectorView(role, name, "MISSING", desired))
                continue
            c = status.get("connector") or {}
            state = str(c.get("state", "UNKNOWN"))
            tasks = tuple(
                TaskView(
                    int(t.get("id", -1)),
                    str(t.get("state", "UNKNOWN")),
                    str(t.get("worker_id", "")),
                    first_line(str(t.get("trace", ""))) if t.get("state") == "FAILED" else "",
                )
                for t in sorted(status.get("tasks") or [], key=lambda t: int(t.get("id", -1)))
            )
            trace = first_line(str(c.get("trace", ""))) if state == "FAILED" else ""
            views.append(ConnectorView(role, name, state, desired, str(c.get("worker_id", "")), trace, tasks))
    return tuple(views)


def offset_syncs(reader: ClusterReader, f: FlowExport) -> dict[tuple[str, int], OffsetSync]:
    syncs = []
    for msg in reader.read(f.offset_syncs_topic):
        if msg.key() is None or msg.value() is None:
            continue
        try:
            syncs.append(decode_offset_sync(msg.key(), msg.value()))
        except RecordFormatError as exc:
            raise OpsError(f"{f.offset_syncs_topic} on {reader.alias}, offset {msg.offset()}: {exc}") from exc
    return newest_syncs(syncs)


def newest_heartbeat(reader: ClusterReader, topic: str, source: str, target: str) -> int | None:
    """The timestamp (ms) of the newest heartbeat emitted by flow source->target in `topic`."""
    newest = None
    for msg in reader.read(topic, 0, last=HEARTBEAT_TAIL):
        if msg.key() is None or msg.value() is None:
            continue
        try:
            beat = decode_heartbeat(msg.key(), msg.value())
        except RecordFormatError:
            continue
        if beat.source_alias == source and beat.target_alias == target:
            newest = max(newest or 0, beat.timestamp_ms)
    return newest


def age_s(timestamp_ms: int) -> float:
    """Seconds from `timestamp_ms` to now (read right after the record, so never the time of an
    earlier step)."""
    return max(0.0, time.time() - timestamp_ms / 1000)


def heartbeat_view(readers: Mapping[str, ClusterReader], f: FlowExport) -> HeartbeatView:
    """The replicated `<source>.heartbeats` when the source holds heartbeats (another flow writes
    them: the path source->target is then proven end to end); else the flow's own heartbeats.

    Latency: how far the newest replicated heartbeat trails the newest one on the source, read
    back to back (so to within the heartbeat interval, 1 s by default)."""
    source, target = readers[f.source], readers[f.target]
    replicated = f.replicated_heartbeats_topic
    upstream = source.read(f.heartbeats_topic, 0, last=1)
    if upstream and replicated in target.partitions:
        tail = target.read(replicated, 0, last=1)
        if tail:
            landed = tail[-1].timestamp()[1]
            latency = max(0.0, (upstream[-1].timestamp()[1] - landed) / 1000)
            return HeartbeatView(replicated, age_s(landed), latency)
    own = newest_heartbeat(target, f.heartbeats_topic, f.source, f.target)
    return HeartbeatView(f.heartbeats_topic, None if own is None else age_s(own))


def parse_lag_urls(values: Sequence[str]) -> dict[str, str]:
    """The --lag-url GROUP=URL options as group -> URL; ValueError naming every bad one."""
    found: dict[str, str] = {}
    problems = []
    for value in values:
        group, sep, url = value.partition("=")
        try:
            parts = urllib.parse.urlsplit(url.strip())
            scheme, host = parts.scheme, parts.hostname
        except ValueError:  # a malformed address, e.g. an unclosed IPv6 bracket
            scheme, host = "", None
        if not sep or not group.strip() or scheme not in ("http", "https") or not host:
            problems.append(f"{value!r} is not GROUP=http://host:port")
        elif group.strip() in found:
            problems.append(f"worker group {group.strip()} is given twice")
        else:
            found[group.strip()] = url.strip()
    if problems:
        raise ValueError("; ".join(problems))
    return found


def with_lag_urls(outputs: StackExports, lag_urls: Mapping[str, str]) -> StackExports:
    """`outputs` with each named worker group's lagUrl replaced; ValueError for a group the
    stack does not export."""
    unknown = sorted(set(lag_urls) - set(outputs.connect))
    if unknown:
        known = ", ".join(sorted(outputs.connect)) or "none"
        raise ValueError(f"no worker group {', '.join(unknown)} in the stack's outputs (it has: {known})")
    connect = {name: replace(g, lag_url=lag_urls.get(name, g.lag_url)) for name, g in outputs.connect.items()}
    return replace(outputs, connect=connect)


def flow_status(
    outputs: StackExports,
    f: FlowExport,
    readers: Mapping[str, ClusterReader],
    heartbeat_max_age_s: float,
    group_down: Mapping[str, str] | None = None,
    exporter: ExporterReading | None = None,
    metrics: Sequence[str | None] | None = None,
) -> FlowStatus:
    """One flow; `group_down` (worker URL -> why) when its worker group did not answer the probe;
    `exporter`: what the group's lag exporter answered (None: the group has none); `metrics`: its
    workers' /metrics texts (None: they serve none)."""
    connectors = unreachable_views(f.connectors, f.desired_states) if group_down else connector_views(outputs, f)
    source, target = readers[f.source], readers[f.target]
    syncs = offset_syncs(readers[f.offset_syncs_cluster or f.source], f)
    topics = tuple(
        topic_view(topic, remote, source.ends(topic), target.ends(remote), syncs)
        for topic, remote in sorted(f.topics.items())
    )
    checkpoints = target.read(f.checkpoints_topic, 0, last=1)
    checkpoint_age = age_s(checkpoints[-1].timestamp()[1]) if checkpoints else None
    heartbeat = heartbeat_view(readers, f)
    notes = []
    if heartbeat.latency_s is None:
        notes.append(
            f"no heartbeats are written into {f.source} (a one-way flow): heartbeat latency is not measured; "
            f"age is of the flow's own heartbeats in {f.heartbeats_topic} on {f.target}"
        )
    if checkpoint_age is None:
        notes.append("no checkpoint yet (MM2 writes them once a matching consumer group commits on the source)")
    sentinel = None if exporter is None else sentinel_view(exporter, f.name, f.loss_acknowledged_at_ms)
    group = outputs.connect.get(f.worker_group)
    lag_s = None if sentinel is None or sentinel.error else sentinel.lag_seconds
    throughput = None if metrics is None else flow_throughput(f, metrics)
    stalled = None if group_down else stall_problem(f, group.cluster if group else "", lag_s, connectors, throughput)
    return FlowStatus(
        name=f.name,
        worker_group=f.worker_group,
        connectors=connectors,
        topics=topics,
        checkpoint_age_s=checkpoint_age,
        heartbeat=heartbeat,
        problems=(
            *([group_down_problem(f.worker_group, group_down)] if group_down else []),
            *problems_of(connectors, heartbeat, heartbeat_max_age_s),
            *sentinel_problems(sentinel),
            *([stalled] if stalled else []),
        ),
        notes=tuple(notes),
        sentinel=sentinel,
        throughput=throughput,
    )


@contextmanager
def cluster_readers(outputs: StackExports, aliases: Sequence[str]) -> Iterator[dict[str, ClusterReader]]:
    with ExitStack() as stack:
        readers = {}
        for alias in aliases:
            try:
                readers[alias] = ClusterReader(kafka_config(outputs, alias, log_level=0), alias)
            except Exception as exc:  # KafkaException: the metadata request timed out
                raise OpsError(
                    f"cluster {alias} ({outputs.clusters[alias].bootstrap}) did not answer: {exc}. "
                    "Next step: check that its brokers run (`bin/pulumi up` restarts them)."
                ) from None
            stack.callback(readers[alias].close)
        yield readers


def collect(
    outputs: StackExports,
    flow_names: Sequence[str] = (),
    heartbeat_max_age_s: float = HEARTBEAT_MAX_AGE_S,
    given_lag_urls: Collection[str] = (),
) -> tuple[list[FlowStatus], list[ClusterHealth]]:
    """The status of the named flows (every exported flow when none) and of their clusters'
    brokers; `given_lag_urls`: the worker groups whose lagUrl came from --lag-url."""
    flows = [flow(outputs, name) for name in (flow_names or sorted(outputs.flows))]
    if not flows:
        raise OpsError("the stack exports no flows. Next step: declare one under mm2:flows and `bin/pulumi up`.")
    groups = sorted({f.worker_group for f in flows})
    with ThreadPoolExecutor(max_workers=2) as pool:  # the exporters and metrics are asked while workers are probed
        asked = pool.submit(exporter_readings, outputs, groups, given_lag_urls)
        served = pool.submit(worker_metrics, outputs, groups)
        down = dead_groups(outputs, groups)
        exporters, metrics = asked.result(), served.result()
    aliases = sorted({a for f in flows for a in (f.source, f.target, f.offset_syncs_cluster or f.source)})
    with cluster_readers(outputs, aliases) as readers:
        statuses = [
            flow_status(
                outputs,
                f,
                readers,
                heartbeat_max_age_s,
                down.get(f.worker_group),
                exporters.get(f.worker_group),
                metrics.get(f.worker_group),
            )
            for f in flows
        ]
        return statuses, [placed(readers[a].health, outputs.clusters[a].pods) for a in aliases]


def placed(health: ClusterHealth, pods: Mapping[str, str]) -> ClusterHealth:
    """`health` with each down broker's pod and node, where the brokers run as pods."""
    if not pods:
        return health
    gaps = tuple(replace(g, place=pod_place(pods, g.broker)) if g.down else g for g in health.gaps)
    return replace(health, gaps=gaps)


def pair_views(outputs: StackExports, flow_names: Sequence[str] = ()) -> list[PairView]:
    """The stack's cluster pairs (those with one of `flow_names` when given), each fence read live."""
    shown = set(flow_names)
    views = []
    for name, pair in sorted(outputs.pairs.items()):
        if shown and not shown & {f"{pair.active}->{pair.passive}", f"{pair.passive}->{pair.active}"}:
            continue
        base = PairView(name, pair.active, pair.passive, pair.principals, None, last=pair.last)
        if pair.unplanned:
            views.append(replace(base, not_read=f"{pair.passive} was lost in an unplanned failover: it is not asked"))
        elif not pair.principals:
            views.append(replace(base, not_read="the stack's outputs predate its export: `bin/pulumi up` exports it"))
        else:
            views.append(_with_fence(outputs, pair, base))
    return views


def _with_fence(outputs: StackExports, pair: PairExport, view: PairView) -> PairView:
    from components.ops.switchover import fence_gaps

    try:
        return replace(view, fence_missing=tuple(fence_gaps(outputs, pair)))
    except Exception as exc:  # KafkaException: the passive side stopped answering after the flows were read
        return replace(view, not_read=f"{pair.passive} did not answer: {first_line(str(exc))}")


def watcher_statuses(stack: str, groups: Sequence[str], root: Path) -> dict[str, dict[str, Any] | None]:
    """The status file of each of `groups` whose watcher runs as a local process of `stack`
    (None while it has written none, or one that cannot be read); groups without one are left out."""
    found: dict[str, dict[str, Any] | None] = {}
    for group in groups:
        directory = Path(run_root(root, stack)) / watcher_path(group)
        if not directory.is_dir():
            continue
        try:
            found[group] = json.loads((directory / WATCHER_STATUS_FILE).read_text())
        except (OSError, ValueError):
            found[group] = None  # not written yet, or replaced as we read: shown as "no status file yet"
    return found


def _once(args: argparse.Namespace, outputs: StackExports) -> int:
    flows, clusters = collect(outputs, args.flow, args.heartbeat_max_age, args.lag_urls)
    pairs = pair_views(outputs, args.flow)
    watchers = watcher_statuses(args.stack, sorted({f.worker_group for f in flows}), ROOT) if args.stack else {}
    if args.json:
        doc = {**to_json(flows, pairs, clusters), **({"watchers": watchers} if watchers else {})}
        print(json.dumps(doc, indent=2), flush=True)
    else:
        now = time.time()
        extra = [line for group, doc in watchers.items() for line in watcher_lines(group, doc, now)]
        shown = [render_status_table(flows), *health_lines(clusters), *pair_lines(pairs), *extra]
        print("\n".join(shown), flush=True)
    healthy = all(f.healthy for f in flows) and all(p.healthy for p in pairs) and all(c.healthy for c in clusters)
    return 0 if healthy else 3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bin/status", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--stack", help="stack name (outputs via bin/pulumi stack output)")
    parser.add_argument("--outputs", help="JSON file from `pulumi stack output --json --show-secrets`")
    parser.add_argument("--flow", action="append", default=[], help="only this flow, e.g. primary->dr (repeatable)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument(
        "--watch", nargs="?", type=float, const=5.0, default=None, metavar="SECONDS", help="refresh every N s (5)"
    )
    parser.add_argument(
        "--heartbeat-max-age", type=float, default=HEARTBEAT_MAX_AGE_S, help="seconds before a heartbeat is stale"
    )
    parser.add_argument(
        "--lag-url",
        action="append",
        default=[],
        metavar="GROUP=URL",
        help="read worker group GROUP's lag exporter at URL instead of the stack's connect.GROUP.lagUrl, for this "
        "run (repeatable); on Kubernetes from outside the cluster, the address of a `kubectl port-forward -n "
        "<namespace> svc/GROUP-lag-exporter 9404`: GROUP=http://127.0.0.1:9404",
    )
    args = parser.parse_args(argv)
    if args.watch is not None and args.watch <= 0:
        parser.error("--watch takes a positive number of seconds")
    try:
        args.lag_urls = parse_lag_urls(args.lag_url)
    except ValueError as exc:
        parser.error(f"--lag-url: {exc}")
    try:
        outputs = load_exports(args.stack, args.outputs)
    except OutputsError as exc:
        print(f"status: no deployment to show: {exc}", file=sys.stderr)
        return 1
    try:
        outputs = with_lag_urls(outputs, args.lag_urls)
    except ValueError as exc:
        parser.error(f"--lag-url: {exc}")
    code = 1
    try:
        while True:
            if args.watch is not None and not args.json:
                print("\033[H\033[2J" + time.strftime("%H:%M:%S"), flush=True)
            code = _once(args, outputs)
            if args.watch is None:
                return code
            time.sleep(args.watch)  # the refresh interval the operator asked for
    except KeyboardInterrupt:
        return code
    except OpsError as exc:
        print(f"status: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:
        from components.connect.errors import ConnectError

        if not isinstance(exc, ConnectError):
            raise
        print(f"status: Connect did not answer: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
