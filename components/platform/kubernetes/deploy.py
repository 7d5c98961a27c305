"""The `kubernetes` platform: KRaft clusters and Connect worker groups as pulumi_kubernetes resources.

`KafkaCluster` and `ConnectWorkerGroup` call `deploy_kafka_kubernetes` / `deploy_connect_kubernetes`
with themselves as `parent`; every object is built as plain data by `kafka_objects` / `connect_objects` and only
registered here, so previews show the same objects tests compare.

Secrets: each cluster's brokers read `secrets.properties` from the Secret `<alias>-kafka-secrets`
and PKCS12 stores from `<alias>-kafka-tls`; a worker group reads `<group>-connect-secrets`,
`<group>-connect-rest-users` and `<group>-connect-tls`, its lag exporter
`<group>-lag-exporter-clients` (its clients' passwords as JSON) and `<group>-connect-tls`. Given
`secret_values` (the stack's `mm2:secrets`, a Pulumi secret), the files Secrets are created by
the stack and kept encrypted in state (the program always passes them); without it they are
referenced only and must exist. TLS stores are always referenced (cert-manager creates them).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.platform.container_broker import container_broker_secret_keys, internal_protocol
from components.platform.kubernetes.broker_roll import BrokerRoll
from components.platform.kubernetes.connect_objects import ConnectObjects, connect_objects, worker_selector
from components.platform.kubernetes.fixed_fields import listener_layout, shape_inputs
from components.platform.kubernetes.kafka_objects import (
    BROKER_TLS_KEYS,
    KafkaObjects,
    kafka_objects,
    tls_secret_problem,
)
from components.platform.kubernetes.metadata import config_hash, selector_text
from components.platform.kubernetes.monitoring import METRICS_PORT
from components.platform.kubernetes.names import KafkaNames, connect_secret_names, kafka_secret_names
from components.platform.kubernetes.pod_watch import READY, RUNNING, PodsStarted
from components.platform.kubernetes.scheduling import stamped
from components.platform.kubernetes.shape_guard import StatefulSetShape
from components.platform.secret_files import (
    REST_USERS_KEY,
    SECRETS_KEY,
    container_group_secret_keys,
    rest_users_text,
    secrets_file_text,
)
from components.platform.settings import KubernetesSettings
from components.platform.topology_facts import kraft_cluster_id
from components.topology import Cluster, Topology, WorkerGroup, bootstrap_servers
from components.topology.security import User, admin_rotation_refusal

SecretValues = pulumi.Input[Mapping[str, str]]


@dataclass
class KubernetesKafka:
    """What `deploy_kafka_kubernetes` registered, and the address clients use."""

    bootstrap: pulumi.Output[str]
    objects: KafkaObjects
    resources: list[pulumi.Resource] = field(default_factory=list)


@dataclass
class KubernetesConnect:
    """What `deploy_connect_kubernetes` registered, and the REST URL connectors are sent to."""

    url: pulumi.Output[str]
    objects: ConnectObjects
    resources: list[pulumi.Resource] = field(default_factory=list)
    # the group's objects' options (parent, provider): the group's other workloads share them
    opts: pulumi.ResourceOptions | None = None
    # the digest of the group's client TLS Secret (`follow_tls`), None without one: its lag
    # exporter mounts that Secret too and rolls on it as the workers do
    tls: pulumi.Output[str] | None = None


def child_opts(
    parent: pulumi.Resource, name: str, context: str | None, settings: KubernetesSettings, opts: Any
) -> pulumi.ResourceOptions:
    """parent=the component; a provider of our own when a kubeconfig context or a render
    directory is configured and the caller did not pass one; `readyTimeout` as the bound of the
    provider's wait for each object to be ready.

    Our own provider updates ConfigMaps and Secrets in place: by default pulumi-kubernetes
    replaces one whose data changed, and with a fixed name it deletes it before creating it
    again, so a pod (re)starting meanwhile cannot mount its config or its passwords."""
    base = pulumi.ResourceOptions.merge(pulumi.ResourceOptions(), opts) if opts else pulumi.ResourceOptions()
    bound = pulumi.CustomTimeouts(create=settings.ready_timeout, update=settings.ready_timeout)
    child = pulumi.ResourceOptions(parent=parent, custom_timeouts=bound)
    if base.provider is None and (context or settings.render_dir):
        provider = k8s.Provider(
            f"{name}-k8s",
            context=context,
            namespace=settings.namespace,
            render_yaml_to_directory=settings.render_dir,
            enable_config_map_mutable=True,
            enable_secret_mutable=True,
            opts=pulumi.ResourceOptions(parent=parent),
        )
        child = pulumi.ResourceOptions(parent=parent, provider=provider, custom_timeouts=bound)
    elif base.provider is not None:
        child = pulumi.ResourceOptions(parent=parent, provider=base.provider, custom_timeouts=bound)
    return pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=base.depends_on))


def register(obj: Mapping[str, Any], resource_name: str, opts: pulumi.ResourceOptions) -> pulumi.Resource:
    """One typed pulumi_kubernetes resource from a manifest dict (camelCase keys pass through)."""
    kind = obj["kind"]
    metadata = obj["metadata"]
    if kind == "ConfigMap":
        return k8s.core.v1.ConfigMap(resource_name, metadata=metadata, data=obj["data"], opts=opts)
    if kind == "Service":
        return k8s.core.v1.Service(resource_name, metadata=metadata, spec=obj["spec"], opts=opts)
    if kind == "StatefulSet":
        return k8s.apps.v1.StatefulSet(resource_name, metadata=metadata, spec=obj["spec"], opts=opts)
    if kind == "Deployment":
        return k8s.apps.v1.Deployment(resource_name, metadata=metadata, spec=obj["spec"], opts=opts)
    if kind == "PodDisruptionBudget":
        return k8s.policy.v1.PodDisruptionBudget(resource_name, metadata=metadata, spec=obj["spec"], opts=opts)
    if kind == "NetworkPolicy":
        return k8s.networking.v1.NetworkPolicy(resource_name, metadata=metadata, spec=obj["spec"], opts=opts)
    if kind == "ServiceAccount":
        return k8s.core.v1.ServiceAccount(
            resource_name,
            metadata=metadata,
            automount_service_account_token=obj.get("automountServiceAccountToken"),
            opts=opts,
        )
    if kind == "ClusterRole":
        return k8s.rbac.v1.ClusterRole(resource_name, metadata=metadata, rules=obj["rules"], opts=opts)
    if kind == "ClusterRoleBinding":
        return k8s.rbac.v1.ClusterRoleBinding(
            resource_name, metadata=metadata, role_ref=obj["roleRef"], subjects=obj["subjects"], opts=opts
        )
    if kind == "PriorityClass":
        return k8s.scheduling.v1.PriorityClass(
            resource_name,
            metadata=metadata,
            value=obj["value"],
            global_default=obj["globalDefault"],
            preemption_policy=obj["preemptionPolicy"],
            description=obj["description"],
            opts=opts,
        )
    if kind == "PersistentVolumeClaim":
        return k8s.core.v1.PersistentVolumeClaim(resource_name, metadata=metadata, spec=obj["spec"], opts=opts)
    return k8s.apiextensions.CustomResource(
        resource_name, api_version=obj["apiVersion"], kind=kind, metadata=metadata, spec=obj["spec"], opts=opts
    )


def start_watch(
    resource_name: str,
    workload: Mapping[str, Any],
    digest: str,
    names: tuple[str, str, str, str],
    context: str | None,
    settings: KubernetesSettings,
    opts: pulumi.ResourceOptions,
) -> list[pulumi.Resource]:
    """The watch on a workload's pods starting (pod_watch.py), beside the workload; none when the
    objects are only rendered to files. `names`: what the pods are, the settings of their
    requests, of their count and of their image. A Deployment's watch also waits for its rollout
    (pulumi-kubernetes does not: READY_ONCE_APPLIED); a StatefulSet's readiness is its roll's."""
    if settings.render_dir:
        return []
    what, resources_key, count_key, image_key = names
    props = {
        "name": workload["metadata"]["name"],
        "namespace": settings.namespace,
        "selector": dict(workload["spec"]["selector"]["matchLabels"]),
        "replicas": int(workload["spec"]["replicas"]),
        "template": digest,
        "what": what,
        "resources_key": resources_key,
        "count_key": count_key,
        "image_key": image_key,
        "context": context or "",
        "bound": settings.ready_timeout,
        "until": READY if workload["kind"] == "Deployment" else RUNNING,
    }
    return [PodsStarted(resource_name, props, opts)]


def files_secret(
    resource_name: str,
    secret_name: str,
    namespace: str,
    key: str,
    text: pulumi.Input[str],
    opts: pulumi.ResourceOptions,
) -> k8s.core.v1.Secret:
    return k8s.core.v1.Secret(
        resource_name,
        metadata={
            "name": secret_name,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/part-of": "mm2-replication"},
        },
        type="Opaque",
        string_data={key: pulumi.Output.secret(text)},
        opts=opts,
    )


def deploy_kafka_kubernetes(
    parent: pulumi.ComponentResource,
    name: str,
    cluster: Cluster,
    opts: pulumi.ResourceOptions | None = None,
    *,
    settings: KubernetesSettings | None = None,
    stack: str | None = None,
    secret_values: SecretValues | None = None,
    admin: pulumi.Input[Mapping[str, str]] | None = None,
    users: Sequence[User] = (),
) -> KubernetesKafka:
    """A KRaft cluster (combined broker+controller StatefulSet) as children of `parent`.

    Registers the ConfigMap, the headless Service `<alias>-kafka-brokers`, the bootstrap Service
    `<alias>-kafka-bootstrap`, the StatefulSet (PVC template, anti-affinity, zone spread, probes,
    resources), a PodDisruptionBudget, a NetworkPolicy, optional external LoadBalancers and, with
    `secret_values`, the brokers' secrets-file Secret. `users`: the stack's users of the cluster.
    """
    settings = settings or KubernetesSettings()
    pod = settings.cluster(cluster.alias)
    cluster_id = kraft_cluster_id(stack or pulumi.get_stack(), cluster.alias)
    passwords = {user.name: user.password for user in users}
    objects = kafka_objects(cluster, settings, cluster_id, passwords)
    stateful_set, digest = stamped(objects.stateful_set)
    objects = dataclasses.replace(objects, stateful_set=stateful_set)
    child = child_opts(parent, name, pod.context, settings, opts)
    resources: list[pulumi.Resource] = []
    rolled_on = _follow_tls(parent, name, cluster, settings, child, stateful_set, digest)

    keys = container_broker_secret_keys(cluster, passwords)
    if secret_values is not None and keys:
        secret_name, _ = kafka_secret_names(cluster, pod)
        text = pulumi.Output.from_input(secret_values).apply(lambda v: secrets_file_text(keys, v))
        resources.append(files_secret(f"{name}-secrets", secret_name, settings.namespace, SECRETS_KEY, text, child))
    # Pods must not start before their Secret exists, or they crash-loop on the missing mount.
    secret_resources = list(resources)
    pod_opts = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=secret_resources))
    config = register(objects.config_map, f"{name}-config", child)
    resources.append(config)
    # The brokers' ServiceAccount and its role to read their node's zone, and their priority class, before their pods.
    first = (*objects.node_reader, *((objects.priority_class,) if objects.priority_class is not None else ()))
    readers = [register(obj, f"{name}-{obj['kind'].lower()}", child) for obj in first]
    resources += readers
    resources.append(register(objects.headless_service, f"{name}-brokers", child))
    resources.append(register(objects.bootstrap_service, f"{name}-bootstrap", child))
    shape = StatefulSetShape(
        f"{name}-statefulset-shape",
        shape_inputs(
            cluster.alias,
            settings.namespace,
            objects.stateful_set["metadata"]["name"],
            pod,
            cluster.brokers,
            listener_layout(internal_protocol(cluster)),
        ),
        pulumi.ResourceOptions(parent=parent),
    )
    stateful = register(
        objects.stateful_set,
        f"{name}-statefulset",
        pulumi.ResourceOptions.merge(pod_opts, pulumi.ResourceOptions(depends_on=[config, shape, *readers])),
    )
    resources.append(stateful)
    if admin is not None and not settings.render_dir:
        roll_opts = pulumi.ResourceOptions(parent=parent, depends_on=[stateful])
        resources.append(BrokerRoll(f"{name}-roll", _roll_inputs(cluster, settings, rolled_on, admin), roll_opts))
    brokers = (f"the brokers of {cluster.alias}", settings.cluster_key(cluster.alias, "resources"))
    brokers_key = f"mm2:clusters.{cluster.alias}.brokers"
    # What the pods wait for, not the StatefulSet itself: the watch runs while it is created. Not
    # on a new template: no pod changes until the roll, which watches each new pod itself.
    watch_opts = pulumi.ResourceOptions(
        parent=parent, depends_on=[config, shape, *readers, *secret_resources], ignore_changes=["template"]
    )
    names = (*brokers, brokers_key, settings.cluster_key(cluster.alias, "image"))
    resources += start_watch(f"{name}-pods-started", stateful_set, digest, names, pod.context, settings, watch_opts)
    resources += _register_beside(objects, cluster.alias, name, child)
    return KubernetesKafka(
        bootstrap=pulumi.Output.from_input(bootstrap_servers(cluster)), objects=objects, resources=resources
    )


def _register_beside(
    objects: KafkaObjects, alias: str, name: str, child: pulumi.ResourceOptions
) -> list[pulumi.Resource]:
    """What stands beside the brokers: the disruption budget, the NetworkPolicy, the external
    Services, the ServiceMonitor and PrometheusRule."""
    out = [
        register(objects.pod_disruption_budget, f"{name}-pdb", child),
        register(objects.network_policy, f"{name}-netpol", child),
    ]
    for obj in objects.external_services:
        suffix = obj["metadata"]["name"].removeprefix(f"{alias}-kafka-")
        out.append(register(obj, f"{name}-{suffix}", child))
    out += [register(obj, f"{name}-{obj['kind'].lower()}", child) for obj in objects.monitoring]
    return out


TLS_ANNOTATION = "mm2-iac.dev/tls"  # on a pod template: the digest of the TLS Secret its pods mount
SECRETS_ANNOTATION = "mm2-iac.dev/secrets"  # on a pod template: the digest of the secret files its pods read


def follow_secrets(workload: dict[str, Any], files: Sequence[pulumi.Output[str]]) -> None:
    """Stamp `workload`'s pod template (after `stamped`) with a digest of the secret files its pods
    read, so a rotated password rolls them onto the new file. The digest is not kept secret: 16 hex
    characters of a SHA-256 over every file, as Helm's checksum annotations are."""
    if not files:
        return
    digest = pulumi.Output.all(*files).apply(lambda texts: config_hash({"files": list(texts)}))
    template = workload["spec"]["template"]["metadata"]
    template["annotations"] = {**template.get("annotations", {}), SECRETS_ANNOTATION: pulumi.Output.unsecret(digest)}


def _follow_tls(
    parent: pulumi.Resource,
    name: str,
    cluster: Cluster,
    settings: KubernetesSettings,
    child: pulumi.ResourceOptions,
    stateful_set: dict[str, Any],
    digest: str,
) -> pulumi.Output[str]:
    """What the brokers' roll follows: their template's digest and, on a TLS cluster, the digest
    of the TLS Secret they mount, also stamped on `stateful_set`'s template: a renewed certificate
    (cert-manager rewrites the Secret) changes the template, so the pods roll onto it."""
    if not cluster.security.protocol.uses_tls or settings.render_dir:
        return pulumi.Output.from_input(digest)
    _, secret_name = kafka_secret_names(cluster, settings.cluster(cluster.alias))
    key = settings.cluster_key(cluster.alias, "tlsSecret")
    tls = tls_digest(parent, name, secret_name, BROKER_TLS_KEYS, key, settings, child)
    follow_tls(stateful_set, tls)
    return pulumi.Output.all(digest, tls).apply(lambda both: f"{both[0]}-{both[1]}")


def tls_digest(
    parent: pulumi.Resource,
    name: str,
    secret_name: str,
    wanted: Sequence[str],
    key: str,
    settings: KubernetesSettings,
    child: pulumi.ResourceOptions,
) -> pulumi.Output[str]:
    """A digest of TLS Secret `secret_name` as it is now (read at each preview and up), not a
    secret: a short hash of every store in it. A Secret without a key in `wanted` (what the pods
    mount) fails the preview, naming the setting `key`."""
    where = f"{settings.namespace}/{secret_name}"
    read = k8s.core.v1.Secret.get(
        f"{name}-tls-read", where, opts=pulumi.ResourceOptions(parent=parent, provider=child.provider)
    )

    def digest(data: Mapping[str, str] | None) -> str:
        problem = tls_secret_problem(key, where, tuple(wanted), data or {})
        if problem:
            raise ValueError(problem)
        return config_hash(dict(data or {}))

    return pulumi.Output.unsecret(read.data.apply(digest))


def follow_tls(workload: dict[str, Any], digest: pulumi.Output[str] | None) -> None:
    """Stamp `workload`'s pod template (after `stamped`) with `digest` of the TLS Secret its pods
    mount: a renewed store (cert-manager rewrites the Secret; Java reads stores once, at start)
    rolls them onto it."""
    if digest is None:
        return
    template = workload["spec"]["template"]["metadata"]
    template["annotations"] = {**template.get("annotations", {}), TLS_ANNOTATION: digest}


def _roll_inputs(
    cluster: Cluster, settings: KubernetesSettings, digest: pulumi.Input[str], admin: pulumi.Input[Mapping[str, str]]
) -> dict[str, Any]:
    """The BrokerRoll's inputs (broker_roll.py): the pods to roll to template `digest`, the bound
    of each wait, the override, and the stack's admin connection (a secret)."""
    pod = settings.cluster(cluster.alias)
    bootstrap = bootstrap_servers(cluster)
    return {
        "cluster": cluster.alias,
        "namespace": settings.namespace,
        "statefulset": KafkaNames(cluster.alias).statefulset,
        "replicas": cluster.brokers,
        "template": digest,
        "context": pod.context or "",
        "bound": settings.ready_timeout,
        "override": pod.roll_override,
        "override_key": settings.cluster_key(cluster.alias, "rollOverride"),
        # How a new admin password is rotated (admin_rotation.py), or why it cannot be.
        "mechanism": cluster.security.sasl_mechanism.value if cluster.security.sasl_mechanism else "",
        "admin_rotation": admin_rotation_refusal(cluster) or "",
        "admin": pulumi.Output.secret(
            pulumi.Output.from_input(admin).apply(lambda client: {"bootstrap": bootstrap, "client": dict(client)})
        ),
    }


def deploy_connect_kubernetes(
    parent: pulumi.ComponentResource,
    name: str,
    group: WorkerGroup,
    topology: Topology,
    opts: pulumi.ResourceOptions | None = None,
    *,
    settings: KubernetesSettings | None = None,
    secret_values: SecretValues | None = None,
) -> KubernetesConnect:
    """A Connect worker group running MM2 as children of `parent`.

    Registers the worker ConfigMap (worker properties, REST JAAS, exporter rules), the Deployment,
    the Service `<group>-connect-api`, a PodDisruptionBudget, a metrics Service, a ServiceMonitor
    and a PrometheusRule (when metrics are on), a NetworkPolicy (with `restFrom`) and, with
    `secret_values`, the secrets-file and REST users Secrets. `url` is the group's configured
    `url` when given (ingress or load balancer, reachable from where `pulumi up` runs), else the
    in-cluster Service URL.
    """
    settings = settings or KubernetesSettings()
    pod = settings.group(group.name)
    objects = connect_objects(group, topology, settings)
    deployment, digest = stamped(objects.deployment)
    objects = dataclasses.replace(objects, deployment=deployment)
    child = child_opts(parent, name, pod.context, settings, opts)
    resources: list[pulumi.Resource] = []
    tls = _group_tls(parent, name, group, topology, settings, child)
    follow_tls(deployment, tls)

    if secret_values is not None:
        values = pulumi.Output.from_input(secret_values)
        files_name, users_name, _ = connect_secret_names(group, pod)
        keys = container_group_secret_keys(topology, group)
        files: list[pulumi.Output[str]] = []
        if keys:
            files.append(values.apply(lambda v: secrets_file_text(keys, v)))
            resources.append(
                files_secret(f"{name}-secrets", files_name, settings.namespace, SECRETS_KEY, files[-1], child)
            )
        if group.rest_auth:
            files.append(values.apply(lambda v: rest_users_text(group, v)))
            resources.append(
                files_secret(f"{name}-rest-users", users_name, settings.namespace, REST_USERS_KEY, files[-1], child)
            )
        # A rotated password rolls the workers (after the clusters' users have it: they come first).
        follow_secrets(deployment, files)
    config = register(objects.config_map, f"{name}-config", child)
    if objects.priority_class is not None:
        resources.append(register(objects.priority_class, f"{name}-priorityclass", child))
    pod_opts = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[*resources, config]))
    resources.append(config)
    resources.append(register(objects.deployment, f"{name}-deployment", pod_opts))
    workers = (f"the workers of {group.name}", settings.group_key(group.name, "resources"))
    watch_opts = pulumi.ResourceOptions(parent=parent, depends_on=pod_opts.depends_on)
    workers_key = f"mm2:workerGroups.{group.name}.workers"
    names = (*workers, workers_key, settings.group_key(group.name, "image"))
    watch = start_watch(f"{name}-pods-started", deployment, digest, names, pod.context, settings, watch_opts)
    resources += watch
    # After the watch: pulumi-kubernetes waits for a Service's pods, and would hold `up` on pods
    # that cannot start as the Deployment's own wait would.
    after_pods = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=watch))
    resources.append(register(objects.service, f"{name}-api", after_pods))
    if objects.metrics_service is not None:
        resources.append(register(objects.metrics_service, f"{name}-metrics", after_pods))
    resources.append(register(objects.pod_disruption_budget, f"{name}-pdb", child))
    if objects.service_monitor is not None:
        resources.append(register(objects.service_monitor, f"{name}-servicemonitor", child))
    if objects.prometheus_rule is not None:
        resources.append(register(objects.prometheus_rule, f"{name}-alerts", child))
    if objects.network_policy is not None:
        resources.append(register(objects.network_policy, f"{name}-networkpolicy", child))
    return KubernetesConnect(
        url=pulumi.Output.from_input(objects.url), objects=objects, resources=resources, opts=child, tls=tls
    )


def _group_tls(
    parent: pulumi.Resource,
    name: str,
    group: WorkerGroup,
    topology: Topology,
    settings: KubernetesSettings,
    child: pulumi.ResourceOptions,
) -> pulumi.Output[str] | None:
    """The digest of the group's client TLS Secret (`follow_tls`), None when its pods mount none."""
    from components.platform.kubernetes.lag_exporter_objects import group_tls_keys

    wanted = group_tls_keys(topology, group)
    if not wanted or settings.render_dir:
        return None
    _, _, secret_name = connect_secret_names(group, settings.group(group.name))
    key = settings.group_key(group.name, "tlsSecret")
    return tls_digest(parent, name, secret_name, wanted, key, settings, child)


def worker_pods(settings: KubernetesSettings, group: WorkerGroup) -> dict[str, str]:
    """Where a group's workers run (`DeployedWorkers.pods`): the Deployment's pods, and the port of
    their metrics (none when `metrics` is off)."""
    pod = settings.group(group.name)
    selector = selector_text(worker_selector(group.name))
    port = str(METRICS_PORT) if pod.metrics else ""
    return {"context": pod.context or "", "namespace": settings.namespace, "selector": selector, "port": port}


def broker_pods(settings: KubernetesSettings, alias: str) -> dict[str, str]:
    """Where cluster `alias`'s brokers run (`DeployedBrokers.pods`): broker N is pod `<statefulset>-N`."""
    context = settings.cluster(alias).context or ""
    return {"context": context, "namespace": settings.namespace, "statefulset": KafkaNames(alias).statefulset}
