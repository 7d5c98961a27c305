"""The brokers' roll on the Kubernetes lane (tests/integration/test_kube_stack.py): refused while
a broker is down, then run under a stream with a broker setting changed and the certificate
renewed (components/platform/kubernetes/broker_roll.py)."""

from __future__ import annotations

import re
import secrets
import ssl
import threading
import time
from pathlib import Path
from typing import Any

from components.kafka.admin import logs_in
from components.monitoring.jmx_exporter import UNDER_MIN_ISR
from tests.integration.app_user import add_scram_user
from tests.integration.harness import TestStack, wait_until
from tests.integration.kube import EXTERNAL, NAMESPACE, REST, diagnostics, kubectl, renew_broker_tls
from tests.integration.kube_checks import broker_metric, pods
from tests.integration.streaming import streamed_during

# A broker setting of us: refused while a broker is down, then rolled once us is whole again.
BROKER_CHANGE = {"background.threads": "9"}
US_BROKERS = 3


def worker_uids(node: str) -> set[str]:
    """The Connect workers' pods (not the watchers', which a worker setting does not touch)."""
    names = re.compile(r"^to-(us|eu)-connect-[0-9a-f]+-[0-9a-z]+$")
    return {p["metadata"]["uid"] for p in pods(node) if names.match(p["metadata"]["name"])}


def us_broker_uids(node: str) -> dict[str, str]:
    return {
        p["metadata"]["name"]: p["metadata"]["uid"] for p in pods(node) if p["metadata"]["name"].startswith("us-kafka-")
    }


def object_uid(node: str, kind: str, name: str) -> str:
    shown = kubectl(node, "-n", NAMESPACE, "get", kind, name, "-o", "jsonpath={.metadata.uid}")
    assert shown.returncode == 0 and shown.stdout, shown.stderr
    return shown.stdout


def roll_refused_with_a_broker_down(node: str, stack: TestStack, broker: int) -> None:
    """With broker `broker` down, a broker setting of us changed: up fails naming the broker,
    and no other broker of us was restarted. The change stays for the roll after the node is back."""
    stack.config["config"]["mm2:clusters"]["us"]["brokerConfig"] = dict(BROKER_CHANGE)
    stack.write_config()
    before = us_broker_uids(node)
    config_uid = object_uid(node, "configmap", "us-kafka-config")
    up = stack.pulumi("up", "--yes", "--skip-preview", check=False)
    said = up.stdout + up.stderr
    assert up.returncode != 0, said[-3000:]
    # The brokers' ConfigMap was changed in place, never deleted and made again (a broker starting
    # meanwhile could not have mounted it).
    assert object_uid(node, "configmap", "us-kafka-config") == config_uid
    assert "the roll of us's brokers did not start (no broker was restarted)" in said, said[-3000:]
    # Named as not ready, or (before the node controller marks its pod) by its partitions short of it.
    why = re.search(rf"broker {broker} \(pod us-kafka-{broker} on node [^)]*\) is not ready|under-replicated", said)
    assert why is not None, said[-3000:]
    print(f"[kube stack] roll refused with broker {broker} down: {why.group(0)}")
    assert us_broker_uids(node) == before


def served_certificates() -> list[bytes]:
    """The certificate each us broker presents on its external listener (its node port). Polled,
    bounded: after a node comes back, the path to its broker's node port takes a while to return."""
    base = EXTERNAL["us"]

    def served() -> list[bytes] | None:
        try:
            return [ssl.get_server_certificate(("127.0.0.1", base + 1 + i)).encode() for i in range(US_BROKERS)]
        except OSError:  # ssl.SSLError too: a connection the node port path closed
            return None

    found: list[bytes] = wait_until(served, 120, "every us broker serving its certificate", poll_s=2)
    return found


def broker_roll_loses_nothing(node: str, stack: TestStack, outputs: dict[str, Any], tls: tuple[Path, str, str]) -> None:
    """The broker setting refused above, with us whole again, us's certificate renewed in its
    Secret as cert-manager does, every SCRAM password of MM2 and the workers rotated, and a worker
    setting changed, while records stream us->eu with acks=all: one up restarts us's three brokers
    one at a time, the active controller last, each after the last is back in sync, and each then
    presents the new certificate; the new passwords reach the brokers through the Admin API, then
    the workers roll onto them, their Deployments updated in place. us's admin password is rotated
    too: its SCRAM credential first, then the brokers roll onto it. No record is lost or refused,
    no broker ever reports a partition below min.insync.replicas, and the old passwords are refused."""
    root, password, _ = tls
    old_certificates = served_certificates()
    renew_broker_tls(node, root, password, "us")
    old_mm2, old_admin = rotate_passwords(stack), outputs["clusters"]["us"]["client"]["sasl.password"]
    stack.config["config"]["mm2-platform:kubernetes"]["connect"]["heap"] = "400m"
    stack.write_config()
    workers, deployment = worker_uids(node), object_uid(node, "deployment", "to-eu-connect")
    before = us_broker_uids(node)
    worst, stop = [0.0], threading.Event()

    def sample() -> None:  # every broker's own count of partitions below min.insync.replicas
        while not stop.is_set():
            for name in before:
                worst[0] = max(worst[0], broker_metric(node, name, UNDER_MIN_ISR) or 0.0)
            stop.wait(1.0)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        started = time.monotonic()
        rolled, streamed = streamed_during(
            application_user(outputs),
            ("us", "orders"),
            ("eu", "us.orders"),
            lambda: stack.pulumi("up", "--yes", "--skip-preview", check=False),
        )
        took = time.monotonic() - started
    finally:
        stop.set()
        sampler.join(30)
    said = rolled.stdout + rolled.stderr
    assert rolled.returncode == 0, diagnostics(said)
    # The engine shows each line as it comes and again among the diagnostics: once each here.
    found = (re.search(r"us: (restarting|broker \d back).*", line) for line in said.splitlines())
    steps = list(dict.fromkeys(m.group(0) for m in found if m))
    print("[kube stack] broker roll:\n  " + "\n  ".join(steps))
    order = re.search(r"us: restarting broker\(s\) (\d), (\d), (\d) one at a time", said)
    assert order is not None, said[-4000:]
    assert [int(o) for o in order.groups()[:2]] == sorted((int(o) for o in order.groups()[:2]), reverse=True)
    assert len([s for s in steps if " back: RUNNING after " in s]) == 3, steps
    assert set(us_broker_uids(node).values()).isdisjoint(before.values()), "not every broker was restarted"
    # The last old worker may still be terminating when up returns (its Deployment is rolled out
    # once the new pods are Ready): polled, bounded by its grace period.
    wait_until(lambda: workers.isdisjoint(worker_uids(node)), 120, "every old worker gone after the roll")
    assert object_uid(node, "deployment", "to-eu-connect") == deployment, "the Deployment was replaced"
    renewed = served_certificates()
    assert all(new != old for new, old in zip(renewed, old_certificates, strict=True)), (
        "a broker kept its old certificate"
    )
    assert len(set(renewed)) == 1, "the brokers present different certificates"
    print(
        f"[kube stack] rolling us's 3 brokers took {took:.0f}s under {streamed.sent} records: longest gap "
        f"{streamed.longest_gap_s:.1f}s, refused {dict(streamed.failed)}, most partitions below min ISR {worst[0]:.0f}"
    )
    assert not streamed.missing, f"{streamed.missing} of {streamed.sent} records never arrived on eu"
    assert not streamed.failed, f"records the producer could not write: {dict(streamed.failed)}"
    assert worst[0] == 0, f"a broker reported {worst[0]:.0f} partition(s) below min.insync.replicas"
    old_passwords_refused(stack, old_mm2, old_admin)


def rotate_passwords(stack: TestStack) -> str:
    """New passwords for MM2's user on both clusters (given, as an operator rotates them), and for
    both groups' workers and us's admin (generated anew through mm2:rotate); MM2's old one on us."""
    old = stack.pulumi("config", "get", "--path", 'mm2:secrets["us.mm2.password"]').stdout.strip()
    for alias in EXTERNAL:
        stack.set_secret(f"{alias}.mm2.password", secrets.token_urlsafe(18))
    rotate = {f"{group}.worker.password": "rotated" for group in REST}
    stack.config["config"]["mm2:rotate"] = {**rotate, "us.admin.password": "rotated"}
    return old


APP = "lane-app"  # the stream's producer and consumer: an application's own user, as in production


def application_user(outputs: dict[str, Any]) -> dict[str, Any]:
    """`outputs` whose clients log in as APP, a SCRAM user made here on us (write orders) and eu
    (read us.orders in the stream's groups) with its grants: admin's password is rotated under the
    stream, so it cannot be what the stream logs in with, as no application would."""
    password = secrets.token_urlsafe(18)
    grants = {
        "us": [("TOPIC", "orders", "LITERAL", op) for op in ("WRITE", "DESCRIBE")],
        "eu": [
            *[("TOPIC", "us.orders", "LITERAL", op) for op in ("READ", "DESCRIBE")],
            ("GROUP", "stream-", "PREFIXED", "READ"),
        ],
    }
    clusters = {}
    for alias, granted in grants.items():
        add_scram_user(outputs, alias, APP, password, granted)
        client = {**outputs["clusters"][alias]["client"], "sasl.mechanism": "SCRAM-SHA-512"}
        clusters[alias] = {
            **outputs["clusters"][alias],
            "client": {**client, "sasl.username": APP, "sasl.password": password},
        }
    return {**outputs, "clusters": {**outputs["clusters"], **clusters}}


def old_passwords_refused(stack: TestStack, old_mm2: str, old_admin: str) -> None:
    """The stack's new admin login works on us; MM2's old password and admin's old one (either
    mechanism) do not."""
    us = stack.outputs()["clusters"]["us"]
    props = {"bootstrap": us["bootstrap"], "client": us["client"]}
    assert logs_in(props) is True, "the stack's new admin login is not accepted on us"
    for user, mechanism, password in (
        ("mm2", us["client"]["sasl.mechanism"], old_mm2),
        ("admin", us["client"]["sasl.mechanism"], old_admin),
        ("admin", "PLAIN", old_admin),
    ):
        login = {**us["client"], "sasl.username": user, "sasl.mechanism": mechanism, "sasl.password": password}
        said = logs_in({**props, "client": login})
        assert said is False, f"{user}'s old password over {mechanism} on us: logs in {said}"
    print("[kube stack] on us the new admin password logs in; MM2's and admin's old ones are refused")
