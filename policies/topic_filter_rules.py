"""Internal topics are excluded from replication, judged with MM2's DefaultTopicFilter semantics."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

from graph import flow_label
from model_facts import DEFAULT_TOPIC_FILTER_CLASS, ConnectorKind
from pulumi_policy import EnforcementLevel, ReportViolation, StackValidationArgs, StackValidationPolicy
from rule_config import config_schema, config_strings, string_array
from stack_view import StackView, split_list

# `{source}` and `{target}` are replaced by the flow's aliases.
DEFAULT_INTERNAL_TOPICS: Final = (
    "__consumer_offsets",
    "__transaction_state",
    "mm2-offset-syncs.{target}.internal",
    "mm2-configs.{target}.internal",
    "mm2-offsets.{source}.internal",
    "mm2-status.{target}.internal",
    "{target}.checkpoints.internal",
    "connect-configs",
    "connect-offsets",
    "connect-status",
    "heartbeats",
    "{target}.heartbeats",
)
# Patterns suggested in the fix, in the order tried; the list of internal topics.
_SUGGESTED_EXCLUDES: Final = (r"__.*", r".*[\-\.]internal", r"connect-.*", r"heartbeats", r".*\.heartbeats")


def compile_patterns(value: str) -> list[re.Pattern[str]] | None:
    """MM2 topic patterns (Java regexes, matched against the whole name); None if one won't compile.

    Python's `re` agrees with Java on the patterns people write for topic filters; a pattern it
    cannot compile (e.g. `\\Q...\\E`) makes the filter unjudgeable rather than guessed.
    """
    patterns: list[re.Pattern[str]] = []
    for item in split_list(value):
        try:
            patterns.append(re.compile(item))
        except re.error:
            return None
    return patterns


def replicated_topics(topics: Iterable[str], include: str, exclude: str) -> list[str] | None:
    """Which of `topics` MM2's DefaultTopicFilter lets through (None when a pattern won't compile)."""
    includes = compile_patterns(include)
    excludes = compile_patterns(exclude)
    if includes is None or excludes is None:
        return None
    return [
        topic
        for topic in topics
        if any(p.fullmatch(topic) for p in includes) and not any(p.fullmatch(topic) for p in excludes)
    ]


def _suggest_exclude(topic: str) -> str:
    return next((p for p in _SUGGESTED_EXCLUDES if re.fullmatch(p, topic)), re.escape(topic))


def check_internal_topics_excluded(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    samples = config_strings(args.get_config(), "internalTopics", DEFAULT_INTERNAL_TOPICS)
    view = StackView.from_resources(args.resources)
    for connector in view.connectors:
        if connector.kind is not ConnectorKind.SOURCE or connector.flow is None:
            continue
        filter_class = connector.setting("topic.filter.class")
        if filter_class is None or filter_class.strip() != DEFAULT_TOPIC_FILTER_CLASS:
            continue  # unknown, or a custom filter we can't evaluate
        include = connector.setting("topics")
        exclude = connector.setting("topics.exclude")
        if include is None or exclude is None:
            continue
        source, target = connector.flow
        names = list(dict.fromkeys(s.replace("{source}", source).replace("{target}", target) for s in samples))
        leaked = replicated_topics(names, include, exclude)
        if not leaked:
            continue
        suggestion = ", ".join(dict.fromkeys(_suggest_exclude(t) for t in leaked))
        report_violation(
            f"Source connector {connector.name} (flow {flow_label(connector.flow)}) would replicate internal "
            f"topics {', '.join(leaked)}: topics='{include}' matches them and topics.exclude='{exclude}' does "
            f"not exclude them. Copying another cluster's offsets, Connect state or MM2 bookkeeping onto "
            f"'{target}' corrupts it. Fix: add {suggestion} to topics.exclude for flow "
            f"{flow_label(connector.flow)} (keep MM2's defaults in the list), or list the topics to replicate "
            f"explicitly.",
            connector.urn,
        )


internal_topics_excluded = StackValidationPolicy(
    name="internal-topics-excluded",
    description="Internal topics (__*, *.internal, connect-*, heartbeats, checkpoints) are not replicated.",
    enforcement_level=EnforcementLevel.ADVISORY,
    validate=check_internal_topics_excluded,
    config_schema=config_schema(
        internalTopics=string_array(
            DEFAULT_INTERNAL_TOPICS,
            "Representative internal topic names checked against each source connector's topics and "
            "topics.exclude; {source} and {target} are replaced by the flow's aliases.",
        )
    ),
)
