"""Drive the real Pulumi engine against a throwaway copy of the dev stack.

Each `TestStack` has its own name, its own file backend in a temp directory, and the dev stack's
config with every port replaced by a free one, passed with `--config-file` so nothing is written
into the repository. `destroy()` always runs (the fixture calls it on failure too) and then kills
any JVM still carrying the stack's marker, so a failed test leaves no process behind.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import yaml

from components.platform.local import process as proc
from components.platform.local.layout import process_marker, run_root
from toolchain.kubernetes.node_base import layout_from_env

ROOT = Path(__file__).resolve().parents[2]
PASSPHRASE = "mm2-test-only-passphrase"


def _ephemeral_floor() -> int:
    """The lowest port the kernel hands out as the local end of an outgoing connection."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


_PORTS = random.Random()  # its own generator: a test seeding `random` must not repeat our picks
_HANDED_OUT: set[int] = set()  # every port free_port_block returned in this process
# What bin/kube's node binds on 127.0.0.1 while it runs (its API server, its NodePort range):
# never handed to a test's JVM, which could otherwise take one before the node starts.
_NODE_LAYOUT = layout_from_env()
_NODE_PORTS = {_NODE_LAYOUT.api_port, *range(_NODE_LAYOUT.node_ports[0], _NODE_LAYOUT.node_ports[1] + 1)}


def stack_ports(cfg: Mapping[str, Any]) -> list[int]:
    """Every loopback port the local brokers, controllers, workers and lag exporters (those with a
    `lagPort`) of stack config `cfg` listen on."""
    ports: list[int] = []
    for c in cfg["mm2:clusters"].values():
        if c.get("platform", "local") == "local" and "port" in c:
            ports += [int(c["port"]) + i for i in range(2 * int(c.get("brokers", 1)))]
    for g in cfg["mm2:workerGroups"].values():
        if "restPort" in g:
            ports += [int(g["restPort"]) + i for i in range(int(g.get("workers", 1)))]
        if "lagPort" in g:
            ports.append(int(g["lagPort"]))
    return ports


# The dev stack's fixed ports (Pulumi.dev.yaml): the README's main job binds them while the suite
# runs it (tests/integration/main_job.py), so no other test's JVM may be handed one.
DEV_PORTS = frozenset(stack_ports(yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())["config"]))


def _worker_share(low: int, high: int) -> tuple[int, int]:
    """The part of the ports [low, high) that this pytest-xdist worker uses.

    Two workers choosing at the same moment could otherwise both see a block free and both try
    to bind it, seconds later, when their JVMs start. Each worker gets a disjoint slice.
    """
    index = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
    count = max(int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")), index + 1)
    width = (high - low) // count
    return low + index * width, low + (index + 1) * width


def free_port_block(size: int) -> int:
    """First port of `size` consecutive free loopback ports, below the ephemeral range.

    A port the kernel may hand out to outgoing connections (bind to port 0 picks one of those)
    can become the local end of any client connection between the moment it is chosen and the
    moment the JVM binds it, or at a restart on the same port later; the bind then fails as
    "already in use". Ports below the ephemeral range are only ever taken by listeners.
    """
    low, high = _worker_share(10000, _ephemeral_floor())
    if high - size <= low:  # an unusually wide ephemeral range: fall back to what the kernel offers
        low, high = _worker_share(_ephemeral_floor(), 65000)
    high -= size  # the whole block inside this worker's share
    for _ in range(200):
        base = _PORTS.randrange(low, high)
        block = range(base, base + size)
        # A block handed out earlier may not be bound yet (one config's clusters and groups are
        # all picked before any JVM starts): never hand out a port twice.
        if not any(p in _HANDED_OUT or p in _NODE_PORTS or p in DEV_PORTS or proc.port_in_use(p) for p in block):
            _HANDED_OUT.update(block)
            return base
    raise RuntimeError(f"no block of {size} free ports found in {low}-{high + size}")


def dev_config_with_free_ports() -> dict[str, Any]:
    cfg = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    cfg.pop("encryptionsalt", None)  # the dev stack's salt; the test stack gets its own
    return with_free_ports(cfg)


def with_free_ports(cfg: dict[str, Any]) -> dict[str, Any]:
    """`cfg` with every local cluster's and worker group's ports replaced by free blocks (a group's
    `lagPort` too, when it sets one)."""
    config = cfg["config"]
    for cluster in config["mm2:clusters"].values():
        if cluster.get("platform") == "local":
            cluster["port"] = free_port_block(2 * int(cluster.get("brokers", 1)))
    for group in config["mm2:workerGroups"].values():
        group["restPort"] = free_port_block(int(group.get("workers", 1)))
        if "lagPort" in group:
            group["lagPort"] = free_port_block(1)
    return cfg


class TestStack:
    __test__ = False  # not a pytest test class

    def __init__(self, tmp: Path, config: dict[str, Any] | None = None) -> None:
        self.name = f"itest-{uuid.uuid4().hex[:8]}"
        self.root = ROOT  # the project directory the CLI runs in
        self.tmp = tmp
        self.backend = tmp / "state"
        self.backend.mkdir(parents=True, exist_ok=True)
        self.config_file = tmp / f"Pulumi.{self.name}.yaml"
        self.config = config or dev_config_with_free_ports()
        self.run_dir = Path(run_root(ROOT, self.name))
        self.left_by_destroy: dict[str, list[str]] = {}  # what the engine's destroy left (stop_what_is_left)
        self.env = {
            **os.environ,
            "PULUMI_BACKEND_URL": f"file://{self.backend}",
            "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
        }

    # --- engine ---------------------------------------------------------------------------
    def pulumi(
        self, *args: str, check: bool = True, timeout: float = 900, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run the CLI on this stack. `stdin` feeds a value (a secret for `config set`) that must
        not appear on a command line."""
        cmd = ["pulumi", *args, "--stack", self.name, "--non-interactive"]
        if args[0] in {"up", "preview", "refresh", "destroy", "config"}:
            cmd += ["--config-file", str(self.config_file)]
        out = subprocess.run(
            cmd, cwd=self.root, env=self.env, capture_output=True, text=True, timeout=timeout, input=stdin
        )
        if check and out.returncode != 0:
            raise AssertionError(
                f"`{' '.join(cmd)}` failed ({out.returncode}):\n{out.stdout[-6000:]}\n{out.stderr[-3000:]}"
            )
        return out

    def write_config(self) -> None:
        self.config_file.write_text(yaml.safe_dump(self.config, sort_keys=False))

    def init(self) -> None:
        subprocess.run(
            ["pulumi", "stack", "init", self.name, "--secrets-provider", "passphrase", "--non-interactive"],
            cwd=ROOT,
            env=self.env,
            check=True,
            capture_output=True,
            text=True,
        )
        # `stack init` has no --config-file: it writes the passphrase salt into the project dir.
        # Move it into our temp config file so the repository stays untouched.
        written = ROOT / f"Pulumi.{self.name}.yaml"
        salt = yaml.safe_load(written.read_text()) if written.exists() else {}
        written.unlink(missing_ok=True)
        if salt and "encryptionsalt" in salt:
            self.config = {**self.config, "encryptionsalt": salt["encryptionsalt"]}
        self.write_config()

    def up(self, *extra: str) -> subprocess.CompletedProcess[str]:
        return self.pulumi("up", "--yes", "--skip-preview", *extra)

    def preview_json(self, *extra: str) -> dict[str, Any]:
        out = self.pulumi("preview", "--json", *extra)
        return json.loads(out.stdout)

    def outputs(self) -> dict[str, Any]:
        """Stack outputs with secrets shown: clusters.<alias>.client and .users, connect.<group>.auth."""
        return json.loads(self.pulumi("stack", "output", "--json", "--show-secrets").stdout)

    def set_secret(self, key: str, value: str) -> None:
        """`pulumi config set --secret --path 'mm2:secrets["<key>"]'`, the value on stdin, then reload
        the config file the CLI rewrote (it now holds the ciphertext)."""
        self.pulumi("config", "set", "--secret", "--path", f'mm2:secrets["{key}"]', stdin=value)
        self.config = yaml.safe_load(self.config_file.read_text())

    def ports(self) -> list[int]:
        """Every loopback port the stack's local brokers, controllers and workers listen on."""
        return stack_ports(self.config["config"])

    def topology(self) -> Any:
        """The stack's config parsed as the program parses it."""
        from components.topology import parse_topology

        cfg = self.config["config"]
        return parse_topology({k.split(":", 1)[1]: v for k, v in cfg.items() if k.startswith("mm2:")})

    def markers(self) -> list[str]:
        return proc.running_markers(process_marker(self.name, ""))

    def lose(self, path: str) -> None:
        """SIGKILL the process at run path `path` (worker_path, broker_path) as a lost host loses
        it: its watcher, gone with the host, cannot start it again; refresh and up can."""
        run_dir = str(self.run_dir / path)
        marker = process_marker(self.name, path)
        with proc.held(run_dir):
            (self.run_dir / path / proc.COMMAND_FILE).unlink(missing_ok=True)
            for pid in proc.find_pids(marker):
                os.kill(pid, signal.SIGKILL)
            wait_until(lambda: not proc.find_pids(marker), 30, f"{path} to die", poll_s=0.1)

    def stop_what_is_left(self) -> None:
        """The safety net after a destroy: whatever the engine could not stop, stopped here, once
        no watcher can start a worker again. What it found is kept in `left_by_destroy` first."""
        files = sorted(str(p.relative_to(self.run_dir)) for p in self.run_dir.rglob("*") if not p.is_dir())
        self.left_by_destroy = {"processes": self.markers(), "files": files[:20]}
        for command in self.run_dir.rglob(proc.COMMAND_FILE):
            command.unlink(missing_ok=True)
        for marker in self.markers():
            proc.stop(marker, grace_s=5)

    def destroy(self) -> None:
        try:
            self.pulumi("destroy", "--yes", "--skip-preview", check=False)
        finally:
            self.stop_what_is_left()
            shutil.rmtree(self.run_dir, ignore_errors=True)
            subprocess.run(
                ["pulumi", "stack", "rm", self.name, "--yes", "--force", "--non-interactive"],
                cwd=self.root,
                env=self.env,
                capture_output=True,
                check=False,
            )


# Stacks deployed right now; a failed test's report shows their processes' last warnings (conftest).
LIVE_STACKS: list[TestStack] = []
EVIDENCE_LINES = 20  # per process: the last WARN/ERROR lines


def log_evidence(stack: TestStack) -> str:
    """The last WARN and ERROR lines of each of the stack's process logs (server.log), by process."""
    parts = [f"== stack {stack.name} =="]
    for log in sorted(stack.run_dir.rglob("server.log")):
        try:
            lines = log.read_text(errors="replace").splitlines()
        except OSError as exc:
            parts.append(f"-- {log.relative_to(stack.run_dir)}: unreadable ({exc})")
            continue
        flagged = [line[:400] for line in lines if " WARN " in line or " ERROR " in line]
        parts.append(f"-- {log.relative_to(stack.run_dir)} (last {EVIDENCE_LINES} of {len(flagged)} WARN/ERROR):")
        parts += flagged[-EVIDENCE_LINES:]
    for log in sorted([*stack.run_dir.rglob("lag-exporter.log"), *stack.run_dir.rglob("watcher.log")]):
        try:  # the project's own services: a line per finding, error and start, all of them news
            lines = log.read_text(errors="replace").splitlines()
        except OSError as exc:
            parts.append(f"-- {log.relative_to(stack.run_dir)}: unreadable ({exc})")
            continue
        parts.append(f"-- {log.relative_to(stack.run_dir)} (last {EVIDENCE_LINES} of {len(lines)} lines):")
        parts += [line[:400] for line in lines[-EVIDENCE_LINES:]]
    return "\n".join(parts)


@contextmanager
def deployed(tmp: Path, config: dict[str, Any] | None = None) -> Iterator[TestStack]:
    stack = TestStack(tmp, config)
    stack.init()
    LIVE_STACKS.append(stack)
    try:
        yield stack
    finally:
        LIVE_STACKS.remove(stack)
        stack.destroy()


def kafka_conf(outputs: dict[str, Any], alias: str, **extra: Any) -> dict[str, Any]:
    """confluent-kafka settings for `alias` from the stack outputs: bootstrap plus the admin's
    client settings (SASL/SCRAM on secured clusters); librdkafka's own logging silenced."""
    cluster = outputs["clusters"][alias]
    return {"bootstrap.servers": cluster["bootstrap"], **(cluster.get("client") or {}), "log_level": 0, **extra}


def connect_auth(outputs: dict[str, Any], group: str = "mm2") -> tuple[str, str] | None:
    """(username, password) for the worker group's REST API, or None without restAuth."""
    auth = outputs["connect"][group].get("auth")
    return (auth["username"], auth["password"]) if auth else None


def all_running(
    statuses: Mapping[str, Any], *, on: str | None = None, taskless: Collection[str] = ("checkpoint",)
) -> bool:
    """Connect statuses (`GET /connectors/{name}/status`; None for a connector not there) with every
    connector and every task RUNNING, each connector but those in `taskless` with a task (the
    checkpoint connector has none until there is a group to sync), all on worker `on` when given."""
    for key, st in statuses.items():
        if not st or st["connector"]["state"] != "RUNNING":
            return False
        tasks = st.get("tasks") or []
        if (key not in taskless and not tasks) or any(t["state"] != "RUNNING" for t in tasks):
            return False
        if on is not None and any(t["worker_id"] != on for t in [st["connector"], *tasks]):
            return False
    return True


def worker_index(stack: TestStack, worker_id: str, group: str = "mm2") -> int:
    """Which worker of the local group a Connect `worker_id` (`host:port`) is: its REST port's offset."""
    base = int(stack.config["config"]["mm2:workerGroups"][group]["restPort"])
    return int(worker_id.rsplit(":", 1)[1]) - base


def stack_passwords(outputs: dict[str, Any]) -> set[str]:
    """Every password the stack created or was given, from its secret outputs."""
    found: set[str] = set()
    for cluster in outputs["clusters"].values():
        found.update((cluster.get("users") or {}).values())
    for group in outputs["connect"].values():
        if group.get("auth"):
            found.add(group["auth"]["password"])
    return found


@contextmanager
def running(tmp: Path, config: dict[str, Any] | None = None) -> Iterator[TestStack]:
    """`deployed()` plus `pulumi up`; after the destroy, checks that the stack left no JVM, no
    listening port and no data directory behind."""
    with deployed(tmp, config) as stack:
        ports = stack.ports()
        stack.up()
        yield stack
    # What `pulumi destroy` itself left, before the safety net stopped and removed it.
    assert stack.left_by_destroy == {"processes": [], "files": []}, f"pulumi destroy left {stack.left_by_destroy}"
    assert [p for p in ports if proc.port_in_use(p)] == [], "ports still in use after destroy"


def wait_until(predicate: Any, timeout_s: float, what: str, poll_s: float = 1.0) -> Any:
    deadline = time.monotonic() + timeout_s
    last: Any = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(poll_s)
    raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what} (last: {last!r})")


def stays_false(predicate: Any, duration_s: float, what: str, poll_s: float = 1.0) -> None:
    """Assert that `predicate` is false on every poll for `duration_s`: the bounded way to show
    that something does not happen (checked throughout, not sampled once after a sleep)."""
    deadline = time.monotonic() + duration_s
    while True:
        last = predicate()
        assert not last, f"{what} (after {duration_s - (deadline - time.monotonic()):.0f}s: {last!r})"
        if time.monotonic() >= deadline:
            return
        time.sleep(poll_s)


def kafka_retrying(call: Any, what: str, timeout_s: float = 60, poll_s: float = 1.0) -> Any:
    """`call()`, retried (bounded) while Kafka answers with an error that will pass: right after
    a start the group coordinator may still be loading or moving (NOT_COORDINATOR,
    COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE), or a request times out."""
    from confluent_kafka import KafkaError, KafkaException

    transient = {
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError._TIMED_OUT,
    }
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return call()
        except KafkaException as exc:
            error = exc.args[0]
            if not (error.retriable() or error.code() in transient) or time.monotonic() > deadline:
                raise AssertionError(f"{what} failed: {error}") from exc
        time.sleep(poll_s)


def produce_one(outputs: dict[str, Any], alias: str, topic: str, key: bytes, value: bytes) -> None:
    """Produce one record idempotently to `topic` on `alias` with the stack's admin settings."""
    from confluent_kafka import Producer

    producer = Producer(kafka_conf(outputs, alias, **{"enable.idempotence": True}))
    producer.produce(topic, key=key, value=value)
    assert producer.flush(30) == 0, f"could not produce to {topic} on {alias}"


def arrives(outputs: dict[str, Any], alias: str, topic: str, key: bytes, timeout_s: float, group_prefix: str) -> bool:
    """True when a record with `key` can be read from `topic` on `alias` within `timeout_s`."""
    from confluent_kafka import Consumer

    group = f"{group_prefix}-{uuid.uuid4().hex[:8]}"
    consumer = Consumer(kafka_conf(outputs, alias, **{"group.id": group, "auto.offset.reset": "earliest"}))
    consumer.subscribe([topic])
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is not None and msg.error() is None and msg.key() == key:
                return True
    finally:
        consumer.close()
    return False


def example_config_with_free_ports(example: str, settings: dict[str, str] | None = None) -> dict[str, Any]:
    """examples/<example>.yaml as a new user copies it into a stack: every port replaced by a free
    block, and `settings` (shorter MM2 intervals, say) merged into `mm2:defaults.settings`."""
    cfg = with_free_ports(yaml.safe_load((ROOT / "examples" / f"{example}.yaml").read_text()))
    config = cfg["config"]
    if settings:
        config.setdefault("mm2:defaults", {}).setdefault("settings", {}).update(settings)
    return cfg


def write_outputs(outputs: Mapping[str, Any], path: Path) -> Path:
    """The stack outputs (secrets shown) for `--outputs`, readable by the owner only."""
    path.touch(mode=0o600)
    path.chmod(0o600)  # also when it existed
    path.write_text(json.dumps(outputs))
    return path


def run_status(
    outputs: Mapping[str, Any], tmp: Path, *args: str, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`bin/status --outputs <0600 file>` on `outputs`, as an operator runs it (bounded)."""
    path = write_outputs(outputs, tmp / "status-outputs.json")
    return subprocess.run(
        [str(ROOT / "bin" / "status"), "--outputs", str(path), *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def topic_names(outputs: dict[str, Any], alias: str) -> set[str]:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(kafka_conf(outputs, alias))
    return set(admin.list_topics(timeout=15).topics)


def produce_batch(
    outputs: dict[str, Any], alias: str, topic: str, keys: list[bytes], partitions: list[int] | None = None
) -> dict[bytes, int]:
    """Produce one record per key (value = key) idempotently, the i-th into `partitions[i]` when
    given (else the producer's choice); returns each key's partition."""
    from confluent_kafka import Producer

    placed: dict[bytes, int] = {}

    def delivered(err: Any, msg: Any) -> None:
        assert err is None, f"producing to {topic} on {alias}: {err}"
        placed[msg.key()] = msg.partition()

    producer = Producer(kafka_conf(outputs, alias, **{"enable.idempotence": True, "linger.ms": 5}))
    for i, key in enumerate(keys):
        where = {} if partitions is None else {"partition": partitions[i]}
        producer.produce(topic, key=key, value=key, on_delivery=delivered, **where)
        producer.poll(0)
    assert producer.flush(60) == 0, f"could not produce to {topic} on {alias}"
    assert len(placed) == len(keys)
    return placed


def read_keys(
    outputs: dict[str, Any],
    alias: str,
    topic: str,
    prefix: bytes,
    want: int | Collection[bytes],
    timeout_s: float,
    **extra: Any,
) -> list[bytes]:
    """Every record key starting with `prefix` in `topic` on `alias`, read from the beginning with
    a fresh group (the topic may not exist yet) until `want` is in: that many distinct keys, or
    every key of a collection (bounded by `timeout_s`); duplicates kept, in arrival order.
    `extra`: more consumer settings (e.g. `enable.auto.commit: False`)."""
    from confluent_kafka import Consumer

    group = f"it-read-{uuid.uuid4().hex[:8]}"
    consumer = Consumer(kafka_conf(outputs, alias, **{"group.id": group, "auto.offset.reset": "earliest", **extra}))
    consumer.subscribe([topic])
    got: list[bytes] = []
    distinct: set[bytes] = set()
    wanted = None if isinstance(want, int) else set(want)

    def done() -> bool:
        return wanted <= distinct if wanted is not None else len(distinct) >= cast(int, want)

    deadline = time.monotonic() + timeout_s
    try:
        while not done() and time.monotonic() < deadline:
            for msg in consumer.consume(10000, 1.0):
                if msg.error() is None and (key := msg.key() or b"").startswith(prefix):
                    got.append(key)
                    distinct.add(key)
    finally:
        consumer.close()
    return got


# --- absence up to an end marker ------------------------------------------------------------------
# A record that "never arrives" is only proven absent up to a point that the flow has provably
# passed: one marker per partition, written after the records under test, read back on the target.
# Kafka keeps each partition's order, MM2 copies source partition p into remote partition p, and
# the source connector's producer keeps a partition's order (idempotent, components/topology/
# connectors.py), so what precedes a marker on the source precedes its copy on the target.


def partitions_of(outputs: dict[str, Any], alias: str, topic: str, missing_ok: bool = False) -> list[int]:
    """The partitions of `topic` on `alias`; fails when the topic does not exist (none with `missing_ok`)."""
    from confluent_kafka.admin import AdminClient

    meta = AdminClient(kafka_conf(outputs, alias)).list_topics(topic, timeout=15).topics.get(topic)
    if missing_ok and (meta is None or meta.error is not None or not meta.partitions):
        return []
    assert meta is not None and meta.error is None and meta.partitions, f"no topic {topic} on {alias}"
    return sorted(meta.partitions)


def end_offsets(outputs: dict[str, Any], alias: str, topic: str, missing_ok: bool = False) -> dict[int, int]:
    """Each partition's end offset (high watermark) of `topic` on `alias`, now; fails when the
    topic does not exist (none with `missing_ok`)."""
    from confluent_kafka import Consumer, TopicPartition

    partitions = partitions_of(outputs, alias, topic, missing_ok)
    if not partitions:
        return {}
    reader = Consumer(kafka_conf(outputs, alias, **{"group.id": f"it-ends-{uuid.uuid4().hex[:8]}"}))
    try:
        return {
            p: reader.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)[1] for p in partitions
        }
    finally:
        reader.close()


def produce_end_markers(outputs: dict[str, Any], alias: str, topic: str, tag: str) -> dict[int, bytes]:
    """One marker record on each partition of `topic` on `alias` (key `end-<tag>-p<partition>`),
    written after whatever the caller produced there; each partition's marker key."""
    partitions = partitions_of(outputs, alias, topic)
    markers = {p: f"end-{tag}-p{p}".encode() for p in partitions}
    placed = produce_batch(outputs, alias, topic, [markers[p] for p in partitions], partitions)
    assert placed == {key: p for p, key in markers.items()}, placed
    return markers


def read_partitions(
    outputs: dict[str, Any], alias: str, topic: str, upto: Mapping[int, int | bytes], timeout_s: float = 180
) -> list[tuple[int, bytes | None]]:
    """(partition, key) of every record of `topic` on `alias`, partition p read from its start up to
    `upto[p]`: an end offset (`end_offsets`; the record there and after not read) or a marker key
    (`produce_end_markers`; read up to and including the first record with it, on p only).
    Bounded; fails naming each partition not read that far (a marker that never arrived on it)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    settings = {"group.id": f"it-upto-{uuid.uuid4().hex[:8]}", "enable.auto.commit": False}
    consumer = Consumer(kafka_conf(outputs, alias, **settings))
    read: list[tuple[int, bytes | None]] = []
    left = set(upto)
    try:
        # An offset bound at or below the partition's start (empty, or deleted by retention): nothing to read.
        starts = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[0] for p in upto}
        left -= {p for p, bound in upto.items() if isinstance(bound, int) and bound <= starts[p]}
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in left])
        deadline = time.monotonic() + timeout_s
        while left and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None or msg.error() is not None or msg.partition() not in left:
                continue
            p, bound = msg.partition(), upto[msg.partition()]
            if isinstance(bound, int) and msg.offset() >= bound:
                left.discard(p)
                continue
            read.append((p, msg.key()))
            if msg.key() == bound or (isinstance(bound, int) and msg.offset() + 1 >= bound):
                left.discard(p)
    finally:
        consumer.close()
    short = {p: upto[p] for p in sorted(left)}
    assert not left, f"{topic} on {alias}: not read up to {short} in {timeout_s:.0f}s"
    return read
