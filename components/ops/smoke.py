"""Smoke check after `pulumi up`: one record produced to a source topic arrives on its remote topic.

    python -m components.ops.smoke --outputs outputs.json [--flow primary->dr] [--topic orders]

Reads the stack outputs (`pulumi stack output --json --show-secrets`: secured clusters carry their
client settings, SASL credentials included, under `clusters.<alias>.client`), produces one
uniquely keyed record on the flow's source cluster and waits, bounded, for it on the target's
remote topic. Exit code 0 when it arrived, 1 otherwise with what was seen.
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid

from components.ops.clients import cluster, flow, kafka_config
from components.outputs.contract import OutputsError, StackExports
from components.outputs.loader import read_exports_file


def check(outputs: StackExports, flow_name: str | None, topic: str | None, timeout_s: float) -> str:
    from confluent_kafka import Consumer, Producer, TopicPartition

    name = flow_name or sorted(outputs.flows)[0]
    f = flow(outputs, name)
    topic = topic or sorted(f.topics)[0]
    remote = f.topics[topic]
    source = cluster(outputs, f.source).bootstrap
    key = f"smoke-{uuid.uuid4()}".encode()

    producer = Producer(kafka_config(outputs, f.source, **{"log_level": 0, "enable.idempotence": True}))
    producer.produce(topic, key=key, value=b"smoke check", headers=[("mm2-smoke", b"1")])
    if producer.flush(30) != 0:
        raise SystemExit(f"could not produce to {topic} on {f.source} ({source}) within 30s")

    consumer = Consumer(
        kafka_config(
            outputs, f.target, **{"log_level": 0, "group.id": f"mm2-smoke-{uuid.uuid4()}", "enable.auto.commit": False}
        )
    )
    try:
        md = consumer.list_topics(timeout=10)
        deadline = time.monotonic() + timeout_s
        while remote not in md.topics and time.monotonic() < deadline:
            time.sleep(1)
            md = consumer.list_topics(timeout=10)
        if remote not in md.topics:
            raise SystemExit(f"{name}: remote topic {remote} never appeared on {f.target} within {timeout_s:.0f}s")
        # Only the tail of each partition can hold the new record: start near the end.
        parts = []
        for p in md.topics[remote].partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(remote, p), timeout=10)
            parts.append(TopicPartition(remote, p, max(low, high - 1000)))
        consumer.assign(parts)
        while time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is not None and msg.error() is None and msg.key() == key:
                return (
                    f"{name}: record {key.decode()} produced to {topic} arrived in {remote} partition {msg.partition()}"
                )
        raise SystemExit(f"{name}: record {key.decode()} did not arrive in {remote} within {timeout_s:.0f}s")
    finally:
        consumer.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--outputs", required=True, help="JSON file from `pulumi stack output --json --show-secrets`")
    parser.add_argument("--flow")
    parser.add_argument("--topic")
    parser.add_argument("--timeout", type=float, default=90.0)
    args = parser.parse_args(argv)
    try:
        outputs = read_exports_file(args.outputs)
    except OutputsError as exc:
        raise SystemExit(f"smoke: {exc}") from None
    print(check(outputs, args.flow, args.topic, args.timeout))
    return 0


if __name__ == "__main__":
    sys.exit(main())
