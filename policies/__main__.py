"""The MM2 replication-safety policy pack: `pulumi preview --policy-pack policies`.

Only builds the pack (constructing it starts the policy server and never returns); its policies
are listed in pack.py, which the tests import, and live in the *_rules.py modules.
"""

from __future__ import annotations

from pack import ALL_POLICIES
from pulumi_policy import EnforcementLevel, PolicyPack

PolicyPack(
    name="mm2-replication-safety",
    policies=ALL_POLICIES,
    # Each policy sets its own level; this only covers a policy that doesn't.
    enforcement_level=EnforcementLevel.ADVISORY,
)
