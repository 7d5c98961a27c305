"""The project's container images (built by `bin/bootstrap --images` from `toolchain/images`),
the paths inside them and the directories the container platforms mount into them (kubernetes
and docker alike). Pure constants."""

from __future__ import annotations

# The images' names. The Kafka image's tag is the Kafka version toolchain/versions.env pins
# (the build checks it); a user pushing to their own registry sets `mm2-platform` image fields.
KAFKA_IMAGE = "mm2-iac/kafka:4.3.1"
WATCHER_IMAGE = "mm2-iac/watcher:py3.13"
# The label of a Kubernetes node that pulls no image (bin/kube's node: no registry is reachable
# from it), value "none": the program's preview names an image such a node lacks, instead of its
# pods waiting for it (components/platform/kubernetes/access.py).
NO_PULLS_LABEL = "mm2-iac.dev/image-pulls"
# Both images run as this unprivileged user; the Kubernetes pods ask for the same ids.
IMAGE_USER = "mm2"
IMAGE_USER_ID = 1000
IMAGE_GROUP_ID = 1000

KAFKA_HOME = "/opt/kafka"
# The Prometheus JMX exporter java agent, baked into the Kafka image (nothing downloads at start).
JMX_AGENT_JAR = "/opt/mm2/agent/jmx_prometheus_javaagent.jar"
CONFIG_DIR = "/etc/mm2/config"  # ConfigMap or uploads: properties, start script, JAAS, exporter rules
RUNTIME_DIR = "/opt/mm2/runtime"  # emptyDir: the effective properties file and logs
PODINFO_DIR = "/etc/podinfo"  # downward API: the pod's labels (zone, when the cluster copies it)
REST_USERS_DIR = "/etc/mm2/rest"
REST_USERS_FILE = f"{REST_USERS_DIR}/users.properties"
# Where container brokers find their secrets file (a Kubernetes Secret / docker upload holding
# `secrets.properties`) and their TLS material (PKCS12 keystore and truststore).
BROKER_SECRETS_FILE = "/etc/kafka/secrets/secrets.properties"
BROKER_TLS_DIR = "/etc/kafka/tls"
BROKER_DATA_DIR = "/var/lib/kafka/data"
