"""The scrape jobs of a local stack's lag exporters, from the stack's outputs (pure)."""

from __future__ import annotations

from components.monitoring.prometheus import lag_targets, rule_groups, scrape_configs
from components.topology import parse_topology

from ..topology.helpers import dev_config, external_target_config


def test_a_lag_job_per_exporter_labelled_as_the_rules_select_it() -> None:
    topology = parse_topology(dev_config())
    lag = lag_targets(topology, {"mm2": "http://127.0.0.1:41234", "gone": "http://127.0.0.1:1"})
    assert lag.targets == {"mm2": "127.0.0.1:41234"} and lag.missing == ()  # a group not in the config: skipped
    [job] = scrape_configs(topology, "5s", lag.targets)
    assert job == {
        "job_name": "mm2-lag-mm2",
        "scrape_interval": "5s",
        "static_configs": [{"targets": ["127.0.0.1:41234"], "labels": {"mm2_lag_exporter": "mm2"}}],
    }
    [group] = rule_groups(topology)
    assert any('up{mm2_lag_exporter="mm2"}' in r["expr"] for r in group["rules"])


def test_a_lag_url_that_is_no_http_host_port_is_named() -> None:
    topology = parse_topology(dev_config())
    for url in ("127.0.0.1:41234", "https://127.0.0.1:41234", "http://127.0.0.1", "http://127.0.0.1:99999"):
        lag = lag_targets(topology, {"mm2": url})
        assert lag.targets == {} and lag.missing == (f"group mm2: lagUrl {url!r} is not an http://host:port URL",)
        assert lag.describe().startswith("lag exporters: no lag targets written: group mm2: lagUrl")


def test_a_group_with_no_enabled_flow_runs_no_exporter_and_is_not_missed() -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["enabled"] = False
    lag = lag_targets(parse_topology(config), None)
    assert lag.targets == {} and lag.missing == ()
    assert lag.describe() == "lag exporters: none to scrape (no local worker group with an enabled flow runs one)"


def test_no_lag_rules_for_a_group_the_stack_runs_no_exporter_for() -> None:
    # An adopted (external) worker group: the stack runs no exporter beside it.
    topology = parse_topology(external_target_config())
    assert lag_targets(topology, None).missing == ()
    for group in rule_groups(topology):
        assert not [r["alert"] for r in group["rules"] if "mm2_lag" in r["expr"]]
