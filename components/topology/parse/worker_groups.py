"""`mm2:workerGroups.<name>`: the Connect workers that run flows, and where their REST API listens."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from components.topology import settings as known
from components.topology.model import (
    DEFAULT_SECRETS_FILE,
    Cluster,
    Platform,
    RestartMode,
    SecretRef,
    WorkerGroup,
    frozen_map,
)
from components.topology.parse.metrics import parse_lag_port, parse_metrics_port
from components.topology.parse.problems import Problems, path
from components.topology.parse.values import (
    SAFE_NAME,
    as_bool,
    as_int,
    as_mapping,
    as_secret,
    as_str,
    check_owned,
    check_secret_literals,
    platform_field,
    string_map,
    unknown_fields,
)

GROUP_FIELDS = (
    "cluster",
    "workers",
    "groupId",
    "configTopic",
    "offsetTopic",
    "statusTopic",
    "restPort",
    "url",
    "restAuth",
    "restTls",
    "secretsFile",
    "workerConfig",
    "platform",
    "metricsPort",
    "lagPort",
    "restarts",
)


def parse_worker_group(
    problems: Problems,
    name: str,
    raw: Any,
    clusters: Mapping[str, Cluster],
    declared: set[str],
) -> WorkerGroup | None:
    where = path("workerGroups", name)
    ok = True
    if not SAFE_NAME.match(name):
        problems.add(
            where,
            f'worker group name "{name}" is not usable in topic and group ids.',
            'Use letters, digits, "-" and "_".',
        )
        ok = False
    mapping = as_mapping(problems, raw, where)
    if mapping is None:
        return None
    unknown_fields(problems, mapping, GROUP_FIELDS, where)
    cluster_alias = _storage_cluster(problems, mapping, where, declared)
    if cluster_alias is None:
        return None
    cluster = clusters.get(cluster_alias)
    workers = as_int(problems, mapping.get("workers", 1), f"{where}.workers", minimum=1, maximum=64)
    url, platform, reachable = _url_and_platform(problems, mapping, where, cluster)
    rest_port, has_port = _rest_port(problems, mapping, where, platform, workers)
    rest_auth, rest_username, rest_password = _rest_auth(problems, mapping, where, name)
    rest_tls = _rest_tls(problems, mapping, where, url, platform)
    secrets_file = _secrets_file(problems, mapping, where)
    worker_config = string_map(problems, mapping.get("workerConfig"), f"{where}.workerConfig")
    check_owned(problems, worker_config, f"{where}.workerConfig", known.WORKER_OWNED, known.WORKER_OWNED_PREFIXES)
    check_secret_literals(problems, worker_config, f"{where}.workerConfig")
    ids, distinct = _storage_ids(problems, mapping, where, name)
    metrics_port = parse_metrics_port(problems, mapping, where, platform, workers)
    lag_port = parse_lag_port(problems, mapping, where, platform)
    restarts = _restarts(problems, mapping, where)
    ok = ok and reachable and has_port and distinct
    if not ok or workers is None or cluster is None or any(v is None for v in ids.values()):
        return None
    return WorkerGroup(
        name=name,
        cluster=cluster_alias,
        workers=workers,
        group_id=str(ids["groupId"]),
        config_topic=str(ids["configTopic"]),
        offset_topic=str(ids["offsetTopic"]),
        status_topic=str(ids["statusTopic"]),
        rest_port=rest_port,
        url=url,
        rest_auth=rest_auth,
        secrets_file=secrets_file,
        worker_config=frozen_map(worker_config),
        platform=platform,
        rest_username=rest_username,
        rest_password=rest_password,
        rest_tls=rest_tls,
        metrics_port=metrics_port,
        lag_port=lag_port,
        restarts=restarts,
    )


def _storage_cluster(problems: Problems, mapping: Mapping[str, Any], where: str, declared: set[str]) -> str | None:
    """The declared cluster holding the group's storage topics, or None (reported)."""
    cluster_alias = as_str(problems, mapping.get("cluster"), f"{where}.cluster") if "cluster" in mapping else None
    if cluster_alias is None:
        if "cluster" not in mapping:
            problems.add(
                f"{where}.cluster",
                "a worker group needs the cluster that holds its storage topics.",
                f"Set cluster to one of: {', '.join(sorted(declared)) or '(no clusters defined)'}.",
            )
        return None
    if cluster_alias not in declared:
        hint = known.suggest(cluster_alias, declared)
        did = f'Did you mean "{hint}"? ' if hint else ""
        problems.add(
            f"{where}.cluster",
            f'unknown cluster "{cluster_alias}".',
            f"{did}Use one of: {', '.join(sorted(declared)) or '(no clusters defined)'}.",
        )
        return None
    return cluster_alias


def _url_and_platform(
    problems: Problems, mapping: Mapping[str, Any], where: str, cluster: Cluster | None
) -> tuple[str | None, Platform, bool]:
    """(an existing Connect URL, where the workers run, whether the group may still be built)."""
    ok = True
    url = as_str(problems, mapping["url"], f"{where}.url") if "url" in mapping else None
    if url is not None and not re.match(r"^https?://", url):
        problems.add(
            f"{where}.url", f"{url!r} is not an http(s) URL.", "Write it as http://host:8083 or https://host:8443."
        )
    platform, valid = platform_field(problems, mapping, where)
    ok = ok and valid
    if platform is None:
        platform = Platform.EXTERNAL if url is not None else (cluster.platform if cluster else Platform.EXTERNAL)
    if platform is Platform.EXTERNAL and url is None:
        problems.add(
            f"{where}.url",
            "this worker group is not deployed by the stack (its cluster is external), "
            "so it needs an existing Connect URL.",
            "Set url to the Connect REST endpoint, or set platform to local/kubernetes/docker to deploy workers.",
        )
        ok = False
    return url, platform, ok


def _rest_port(
    problems: Problems, mapping: Mapping[str, Any], where: str, platform: Platform, workers: int | None
) -> tuple[int | None, bool]:
    """(worker 0's REST port, whether the group may still be built)."""
    if "restPort" in mapping:
        rest_port = as_int(problems, mapping["restPort"], f"{where}.restPort", minimum=1024, maximum=65535)
        if rest_port is not None and workers is not None and rest_port + workers - 1 > 65535:
            problems.add(f"{where}.restPort", "the workers' ports run past 65535.", "Pick a lower restPort.")
        return rest_port, True
    if platform in (Platform.LOCAL, Platform.DOCKER):
        problems.add(
            f"{where}.restPort",
            f"a {platform.value} worker group needs a REST port.",
            "Set restPort (worker i listens on restPort+i), e.g. restPort: 18083.",
        )
        return None, False
    return None, True


def _rest_auth(
    problems: Problems, mapping: Mapping[str, Any], where: str, name: str
) -> tuple[bool, str | None, SecretRef | None]:
    """`restAuth: true`, or a map naming the user and its password reference."""
    raw_auth = mapping.get("restAuth", False)
    if isinstance(raw_auth, Mapping):
        unknown_fields(problems, raw_auth, ("username", "password"), f"{where}.restAuth")
        rest_username = as_str(problems, raw_auth.get("username", "mm2-admin"), f"{where}.restAuth.username")
        rest_password = as_secret(
            problems,
            raw_auth.get("password", {"secret": f"{name}.rest.password"}),
            f"{where}.restAuth.password",
            f"{name}.rest.password",
        )
        return True, rest_username, rest_password
    if as_bool(problems, raw_auth, f"{where}.restAuth"):
        return True, "mm2-admin", SecretRef(f"{name}.rest.password")
    return False, None, None


def _rest_tls(problems: Problems, mapping: Mapping[str, Any], where: str, url: str | None, platform: Platform) -> bool:
    rest_tls = bool(as_bool(problems, mapping.get("restTls", False), f"{where}.restTls"))
    if rest_tls and url is not None:
        problems.add(
            f"{where}.restTls",
            "restTls gives the workers the stack deploys an HTTPS listener; this group is reached at its url, "
            "whose scheme already says whether it is HTTPS.",
            "Remove restTls, and write the url as https://... if that Connect serves HTTPS.",
        )
    elif rest_tls and platform is not Platform.LOCAL:
        problems.add(
            f"{where}.restTls",
            f"HTTPS for the Connect REST API is generated for local worker groups only, not {platform.value}.",
            "Remove restTls, or run the group on the local platform.",
        )
    return rest_tls


def _secrets_file(problems: Problems, mapping: Mapping[str, Any], where: str) -> str:
    if "secretsFile" not in mapping:
        return DEFAULT_SECRETS_FILE
    given = as_str(problems, mapping["secretsFile"], f"{where}.secretsFile")
    if given is None:
        return DEFAULT_SECRETS_FILE
    if not given.startswith("/") or "$" in given or ":" in given:
        problems.add(
            f"{where}.secretsFile",
            f"{given!r} must be an absolute path without variables or colons.",
            "Kafka's FileConfigProvider reads the path literally; use e.g. /etc/mm2/secrets.properties.",
        )
        return DEFAULT_SECRETS_FILE
    return given


def _storage_ids(
    problems: Problems, mapping: Mapping[str, Any], where: str, name: str
) -> tuple[dict[str, str | None], bool]:
    """(group id and the three storage topics by field, whether the topics are distinct)."""
    ids: dict[str, str | None] = {}
    for field_name, default in (
        ("groupId", f"mm2-{name}"),
        ("configTopic", f"mm2-{name}-configs"),
        ("offsetTopic", f"mm2-{name}-offsets"),
        ("statusTopic", f"mm2-{name}-status"),
    ):
        ids[field_name] = (
            as_str(problems, mapping[field_name], f"{where}.{field_name}") if field_name in mapping else default
        )
    topic_names = [ids["configTopic"], ids["offsetTopic"], ids["statusTopic"]]
    if len(set(topic_names)) != 3:
        problems.add(
            f"{where}.configTopic",
            "the config, offset and status topics must be three different topics.",
            "Give configTopic, offsetTopic and statusTopic distinct names.",
        )
        return ids, False
    return ids, True


def _restarts(problems: Problems, mapping: Mapping[str, Any], where: str) -> RestartMode | None:
    """`restarts: rolling | all-at-once`; absent: rolling when the group has more than one worker."""
    if "restarts" not in mapping:
        return None
    given = mapping["restarts"]
    for mode in RestartMode:
        if given == mode.value:
            return mode
    problems.add(
        f"{where}.restarts",
        f"{given!r} is not a restart mode.",
        f"Use one of: {', '.join(m.value for m in RestartMode)} (or leave it out: rolling with more than one worker).",
    )
    return None
