"""The pack's policies, in the order the engine reports them.

`__main__.py` only builds `PolicyPack(policies=ALL_POLICIES)`; tests import this module. The pack's
modules are imported as top-level modules: the policy host runs the pack directory with
`runpy.run_path`, which puts the directory first on `sys.path`; the tests do the same.
"""

from __future__ import annotations

from typing import Final

from cycle_rules import no_name_preserving_replication_on_cycles
from durability_rules import (
    disaster_recovery_syncs_group_offsets,
    replication_factor_within_broker_count,
    source_connector_min_tasks,
)
from flow_connector_rules import flow_connectors_agree, flow_has_all_connectors
from pulumi_policy import Policy
from retention_rules import dr_retention_outlasts_outage_budget, retention_outlasts_outage_budget
from security_rules import (
    connect_rest_requires_auth,
    cross_datacenter_flows_use_tls,
    no_plaintext_secrets_in_connector_config,
)
from shared_target_rules import shared_target_settings_consistent
from topic_filter_rules import internal_topics_excluded

ALL_POLICIES: Final[list[Policy]] = [
    no_name_preserving_replication_on_cycles,
    replication_factor_within_broker_count,
    flow_has_all_connectors,
    flow_connectors_agree,
    disaster_recovery_syncs_group_offsets,
    internal_topics_excluded,
    cross_datacenter_flows_use_tls,
    connect_rest_requires_auth,
    no_plaintext_secrets_in_connector_config,
    source_connector_min_tasks,
    shared_target_settings_consistent,
    dr_retention_outlasts_outage_budget,
    retention_outlasts_outage_budget,
]
