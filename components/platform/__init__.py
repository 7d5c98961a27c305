"""The platforms clusters and worker groups run on, one package each, behind one contract.

The contract (`contract.py`): a platform backend has two operations,

- `deploy_brokers(parent, name, BrokerRequest) -> DeployedBrokers`: one cluster's brokers,
  registered as children of the `KafkaCluster` component `parent`; the request carries the
  cluster, the stack's credentials, the admin client settings readiness probes use and the
  cluster's users; the result holds the resources its users, ACLs and topics wait for;
- `deploy_workers(parent, name, WorkerRequest) -> DeployedWorkers`: one worker group's
  workers under the `ConnectWorkerGroup` `parent`, after the storage cluster; the result holds
  the resources connectors wait for and, when the platform decides it, the REST URL.

`backends.platform_backend(platform, local, containers, tls)` picks the backend; `external`
has none (an adopted cluster or Connect group deploys nothing).

Packages and modules:

- `local/`: JVMs on 127.0.0.1 (`deploy`: the backend; `layout`: the run-directory layout;
  `process`, `provider`: starting and finding the JVMs; `secrets_file`, `tls`: owner-only
  secret files and the stack's TLS material);
- `kubernetes/`: pure object rendering (`kafka_objects`, `connect_objects`, `monitoring`,
  `names`, `metadata`) and `deploy`, which registers them as pulumi_kubernetes resources;
- `docker/`: pure container specs (`specs`), `deploy` (the backend), `provider` (the
  containers as a dynamic resource) and `engine` (the Docker Engine API);
- shared and pure: `settings` (the `mm2-platform` stack config), `container_broker` (broker
  properties and start script on kubernetes and docker), `image_layout` (paths inside the
  Kafka image), `secret_files` (secret keys and secret-file text of container deployments),
  `topology_facts` (KRaft cluster ids, the clusters and heartbeats of a worker group).

Pure modules import no pulumi and do no I/O; import the Pulumi modules directly
(`components.platform.kubernetes.deploy`) so that importing pure rendering never pulls in a
provider SDK. This package's `__init__` imports nothing for the same reason.
"""

from __future__ import annotations
