"""README's configuration reference against the parser's field lists: a key the parser accepts
that the reference leaves out fails here, naming it and the path the table should document."""

from __future__ import annotations

import re
from pathlib import Path

from components.topology.parse import TOP_LEVEL_KEYS
from components.topology.parse.cluster_security import SECURITY_FIELDS
from components.topology.parse.clusters import CLUSTER_FIELDS, TOPIC_FIELDS
from components.topology.parse.defaults import DEFAULTS_FIELDS
from components.topology.parse.flows import FLOW_FIELDS
from components.topology.parse.links import LINK_FIELDS
from components.topology.parse.mm2_settings import POLICY_FIELDS
from components.topology.parse.pairs import FIELDS as PAIR_FIELDS
from components.topology.parse.worker_groups import GROUP_FIELDS

README = Path(__file__).resolve().parents[3] / "README.md"

# Where each field list lives in the stack config, as the reference writes the path.
SECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("defaults.", DEFAULTS_FIELDS),
    ("clusters.<c>.", CLUSTER_FIELDS),
    ("clusters.<c>.topics.<t>.", TOPIC_FIELDS),
    ("flows.<f>.", FLOW_FIELDS),
    ("flows.<f>.replicationPolicy.", POLICY_FIELDS),
    ("workerGroups.<g>.", GROUP_FIELDS),
    ("failover.<a><-><b>.", PAIR_FIELDS),
    ("links.<a><-><b>.", LINK_FIELDS),
)


def reference_text() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("## Configuration reference")
    return text[start : text.index("\n## ", start + 1)]


def documented(reference: str) -> set[str]:
    """Every key path the reference's table names: each backticked path of a row's first cell,
    a bare field after a full path standing for that path's section (`configTopic`, ...)."""
    paths: set[str] = set()
    for line in reference.splitlines():
        if not line.startswith("| `"):
            continue
        section = ""
        for name in re.findall(r"`([^`]+)`", line.split(" | ")[0]):
            if "." in name:
                section = name.rsplit(".", 1)[0] + "."
                paths.add(name)
            else:
                paths.add(section + name)
    return paths


def missing(reference: str) -> list[str]:
    paths = documented(reference)
    wanted = [prefix + field for prefix, fields in SECTIONS for field in fields]
    wanted += list(TOP_LEVEL_KEYS)
    security = re.search(r"\| `clusters\.<c>\.security` \|([^\n]*)", reference)
    wanted_security = [f for f in SECURITY_FIELDS if not security or f"`{f}`" not in security.group(1)]
    # A section is documented through its keys (`clusters.<c>.topics` by `...topics.<t>.partitions`).
    covered = [p for p in wanted if p in paths or any(d.startswith(p + ".") for d in paths)]
    return [p for p in wanted if p not in covered] + [f"clusters.<c>.security.{f}" for f in wanted_security]


def test_the_reference_documents_every_key_the_parser_accepts() -> None:
    assert missing(reference_text()) == []


def test_a_key_the_reference_leaves_out_is_named() -> None:
    """The check can fail: drop the brokerConfig row and it names that key."""
    reference = "\n".join(line for line in reference_text().splitlines() if "`clusters.<c>.brokerConfig`" not in line)
    assert missing(reference) == ["clusters.<c>.brokerConfig"]


def test_the_sample_topics_partitions_bound_matches_the_parser() -> None:
    from components.topology.parse.clusters import MAX_TOPIC_PARTITIONS

    assert f"at most {MAX_TOPIC_PARTITIONS}" in reference_text()
