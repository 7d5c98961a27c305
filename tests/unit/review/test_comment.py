"""The pull-request comment, rendered from previews captured on real stacks.

The fixtures are `pulumi preview --json` digests and their event logs' policy events, saved by
tests/integration/test_review.py (MM2_REVIEW_FIXTURES=<dir>) with machine paths replaced:
- new-stack: a first preview of the lean stack (everything created; flow a->b marked
  disasterRecovery with sync.group.offsets.enabled false), two advisory violations;
- setting-change: sync.group.offsets.enabled set on the deployed stack's flow a->b;
- new-flow: flow b->a added to the deployed stack;
- policy-violation: flow a->b marked disasterRecovery with sync.group.offsets.enabled false.
The blast-radius lines in them are the providers' text at capture time (before a connector with
no task was worded "would start its tasks"); the renderer passes that text through unchanged.
Refresh them with MM2_REVIEW_FIXTURES=tests/unit/review/fixtures on the integration test.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from components.review.cli import main
from components.review.comment import MARKER, changes, policy_violations, render_comment

FIXTURES = Path(__file__).parent / "fixtures"


def load(name: str) -> tuple[dict[str, Any], list[str]]:
    preview = json.loads((FIXTURES / f"{name}.json").read_text())
    return preview, (FIXTURES / f"{name}.events.jsonl").read_text().splitlines()


def rendered(name: str) -> tuple[str, str, str]:
    preview, events = load(name)
    md = render_comment(preview, policy_violations(events), title="Replication preview: review")
    assert md.startswith(MARKER + "\n## Replication preview: review\n"), md[:200]
    _, rest = md.split("\n### Changes by flow\n", 1)
    changes_part, rest = rest.split("\n### Blast radius\n", 1)
    blast, violations = rest.split("\n### Policy violations\n", 1)
    return changes_part, blast, violations


def test_a_first_preview_groups_every_new_resource_under_its_flow_group_or_cluster() -> None:
    found = changes(load("new-stack")[0])
    scopes = {c.name: c.scope for c in found}
    assert scopes["mm2-a-to-b-source"] == "flow a->b"
    assert scopes["connect-mm2-worker-0"] == "worker group mm2"
    assert scopes["kafka-b-topic-invoices"] == "cluster b"
    assert scopes["credentials"] == "stack"
    assert {c.op for c in found} == {"create"}
    changes_part, blast, _ = rendered("new-stack")
    # Flows first, then worker groups, clusters, the stack.
    order = [changes_part.index(h) for h in ("#### flow a->b", "#### worker group mm2", "#### cluster a", "#### stack")]
    assert order == sorted(order)
    assert "new flow a->b: its source, checkpoint and heartbeat connectors are created" in blast


def test_violations_carry_the_policy_the_resource_and_the_fix_apart() -> None:
    violations = policy_violations(load("new-stack")[1])
    by_policy = {v.policy: v for v in violations}
    dr = by_policy["disaster-recovery-syncs-group-offsets"]
    assert (dr.level, dr.resource) == ("advisory", "mm2-a-to-b-checkpoint")
    assert dr.message.startswith("Flow a->b is marked disasterRecovery")
    assert "Fix:" not in dr.message and dr.fix.startswith('set sync.group.offsets.enabled: "true"')
    # The policy's description (the event's first line) is not repeated as the violation.
    assert "sync consumer-group offsets to the target" not in dr.message


def test_the_event_log_yields_each_violation_once_and_skips_other_events() -> None:
    _, events = load("new-stack")
    noise = ['{"sequence": 1, "diagnosticEvent": {"message": "x"}}', "", "{not json"]
    assert policy_violations(noise + events + events) == policy_violations(events)


def test_a_mandatory_violation_says_up_is_blocked() -> None:
    preview, events = load("new-stack")
    blocked = [line.replace('"enforcementLevel":"advisory"', '"enforcementLevel":"mandatory"') for line in events]
    md = render_comment(preview, policy_violations(blocked))
    assert "2 mandatory: `pulumi up` is blocked until fixed" in md


def test_nothing_to_say_is_said_plainly() -> None:
    md = render_comment({"steps": [], "diagnostics": []}, [])
    assert "No changes." in md and "Nothing running is affected." in md and "None." in md


def test_the_command_renders_a_file_and_rejects_an_empty_preview(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "comment.md"
    args = ["--preview", str(FIXTURES / "new-stack.json"), "--events", str(FIXTURES / "new-stack.events.jsonl")]
    assert main([*args, "--out", str(out)]) == 0
    assert "`source-connector-min-tasks` | advisory | `mm2-a-to-b-source`" in out.read_text()
    empty = tmp_path / "empty.json"
    empty.write_text("")
    assert main(["--preview", str(empty)]) == 2
    assert "the preview failed before it printed JSON" in capsys.readouterr().err


def test_a_setting_change_lists_only_what_changed_with_its_blast_radius() -> None:
    changes_part, blast, violations = rendered("setting-change")
    assert '| ~ update | `mm2-a-to-b-checkpoint` | Connector | `config["sync.group.offsets.enabled"] = "true"` |' in (
        changes_part
    )
    assert "| ~ update | `flow-a-to-b` | ReplicationFlow | `syncGroupOffsets: false → true` |" in changes_part
    assert "mm2-a-to-b-source" not in changes_part and "worker group" not in changes_part
    lines = [line for line in blast.splitlines() if line.startswith("- ")]
    # Warnings first.
    assert lines[0].startswith("- ⚠️ connector mm2-a-to-b-checkpoint: offsets are re-translated")
    assert "config keys sync.group.offsets.enabled change; Connect restarts the connector" in lines[1]
    assert "`source-connector-min-tasks`" in violations


def test_a_new_flow_is_its_own_group_of_creates() -> None:
    changes_part, blast, violations = rendered("new-flow")
    assert "#### flow a->b" not in changes_part
    for role in ("source", "checkpoint", "heartbeat"):
        assert f"| + create | `mm2-b-to-a-{role}` | Connector | (new) |" in changes_part
    assert "- new flow b->a: its source, checkpoint and heartbeat connectors are created" in blast
    assert "`mm2-b-to-a-source`" in violations  # the new flow's single-task source is flagged too


def test_a_policy_violation_row_has_the_violation_and_its_fix() -> None:
    _, _, violations = rendered("policy-violation")
    (row,) = [line for line in violations.splitlines() if "disaster-recovery-syncs-group-offsets" in line]
    cells = [cell.strip() for cell in row.strip("|").split(" | ")]
    assert cells[1:3] == ["advisory", "`mm2-a-to-b-checkpoint`"]
    assert "sync.group.offsets.enabled is not true" in cells[3]
    assert cells[4].startswith('set sync.group.offsets.enabled: "true"')


def test_a_switchover_plan_comes_first_under_its_cluster_pair_with_its_lines_kept() -> None:
    urn = "urn:pulumi:prod::mm2-replication::pulumi-python:dynamic/failover:Switchover::failover-primary-dr"
    plan = (
        "switchover primary<->dr: dr becomes active (was primary)\n"
        "  1. fence: deny WRITE to User:app on primary topics orders\n"
        "  2. wait up to 120s until primary->dr has copied everything (now 0 record(s) behind); RPO must be 0"
    )
    preview = {
        "steps": [
            {
                "op": "update",
                "urn": urn,
                "oldState": {"inputs": {"pair": {"name": "primary<->dr", "active": "primary"}}},
                "newState": {"inputs": {"pair": {"name": "primary<->dr", "active": "dr"}}},
                "detailedDiff": {"pair.active": {"kind": "update"}},
            }
        ],
        "diagnostics": [{"urn": urn, "severity": "warning", "message": plan}],
        "changeSummary": {"update": 1},
    }
    md = render_comment(preview, [])
    blast = md.split("### Blast radius\n", 1)[1]
    assert blast.lstrip().startswith("#### cluster pair primary<->dr")
    assert (
        "- ⚠️ switchover primary<->dr: dr becomes active (was primary)<br>1. fence: deny WRITE to User:app on "
        "primary topics orders<br>2. wait up to 120s" in blast
    )
