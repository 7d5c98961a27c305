"""The MM2 replication-safety policy pack: `pulumi preview --policy-pack policies`.

Only builds the pack (constructing it starts the policy server and never returns); the rules
live in rules.py, which the tests import.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, PolicyPack
from rules import ALL_POLICIES

PolicyPack(
    name="mm2-replication-safety",
    policies=ALL_POLICIES,
    # Each policy sets its own level; this only covers a policy that doesn't.
    enforcement_level=EnforcementLevel.ADVISORY,
)
