"""The failback runbook, pure: the ordered steps that move producers and consumers back to the failed cluster."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def failback_steps(
    *,
    flow_name: str,
    failed: str,
    to: str,
    topics: Mapping[str, str],
    worker_group: str,
    worker_group_cluster: str,
    separator: str = ".",
) -> list[str]:
    """Ordered steps to move producers and consumers back to `failed` once it is healthy again.

    The reverse flow must use DefaultReplicationPolicy: with both flows enabled the pair is a
    cycle, and only renaming remote topics stops records from looping (the policy pack's
    `no-name-preserving-replication-on-cycles` rule refuses anything else).
    """
    reverse = f"{to}->{failed}"
    local_topics = sorted(topics)
    back_remote = [f"{to}{separator}{t}" for t in local_topics]
    group_hint = (
        f"a worker group attached to {failed} (e.g. mm2:workerGroups.mm2-{failed}: {{cluster: {failed}, workers: 2, "
        f"restPort: <free port>}}), so MM2 writes into {failed} from Connect next to it"
        if worker_group_cluster != failed
        else f"worker group {worker_group} (it is attached to {failed})"
    )
    return [
        f"Keep producers and consumers on {to}. Bring {failed} back: `bin/pulumi refresh --stack <stack> --yes` "
        f"then `bin/pulumi up --stack <stack> --yes` (restarts its brokers in place, data kept).",
        f"Let flow {flow_name} catch up: records produced to {failed} before the failure that were not replicated "
        f"(the 'possibly missing' figure) now arrive in {', '.join(topics[t] for t in local_topics)} on {to}. "
        f"Check `bin/connectors --stack <stack> status --flow {flow_name}` and that the lag is 0 "
        f"(`bin/failover --failed {failed} --to {to} --dry-run`). Consumers on {to} read these late records.",
        f'Add the reverse flow to the stack config: mm2:flows."{reverse}" with topics {local_topics} (what '
        f'producers now write on {to}), groups [".*"], replicationPolicy {{class: default}} (never identity: '
        f"{flow_name} + {reverse} is a cycle), disasterRecovery: true, settings "
        f'{{sync.group.offsets.enabled: "true"}}, workerGroup: {group_hint}.',
        f"`bin/pulumi preview --stack <stack> --policy-pack policies`, then `bin/pulumi up --stack <stack> --yes`: "
        f"creates {', '.join(back_remote)} on {failed} and {to}.checkpoints.internal there.",
        f"Wait until {reverse} has caught up (`bin/connectors status --flow {reverse}`, lag 0 with "
        f"`bin/failover --failed {to} --to {failed} --flow {reverse} --dry-run`).",
        f"Maintenance window: stop the producers on {to}; wait until the lag of {reverse} is 0.",
        f"Stop the consumers on {to}; run `bin/failover --stack <stack> --failed {to} --to {failed} "
        f"--flow {reverse}` to commit their translated offsets on {failed}. MM2 translates offsets only "
        f"upstream to downstream within a flow: {reverse}'s checkpoints map their positions in "
        f"{', '.join(local_topics)} on {to} to {', '.join(back_remote)} on {failed}, and nothing maps their "
        f"positions in {', '.join(topics[t] for t in local_topics)} on {to} back to {', '.join(local_topics)} on "
        f"{failed} ({reverse} never replicates those remote topics, so it has no offset syncs to translate "
        f"them with). On {', '.join(local_topics)} the groups resume from what they committed on {failed} before "
        f"the failure, so they read again what they read on {to} since the failover: nothing is skipped.",
        f"Start the consumers on {failed} subscribed to {', '.join(local_topics)} and {', '.join(back_remote)} "
        f"(records written on {to} during the outage), then the producers on {failed} writing "
        f"{', '.join(local_topics)}.",
        f"Decide the steady state: keep {reverse} (active/active-ready; {flow_name} keeps protecting {failed}), "
        f"or, once consumers drained {', '.join(back_remote)}, remove {reverse} from the config and "
        f"`bin/pulumi up`. Resume {flow_name} if it was paused (`bin/connectors resume --flow {flow_name}`). "
        "Then run `bin/drill` on a throwaway stack to prove the runbook again.",
    ]


def render_failback(steps: Sequence[str], *, failed: str, to: str) -> str:
    lines = [f"Failback plan: move producers and consumers from {to} back to {failed}", ""]
    lines += [f"{i}. {step}" for i, step in enumerate(steps, 1)]
    return "\n".join(lines)
