"""Paths inside the `apache/kafka` image and the directories the container platforms mount
into it (kubernetes and docker alike). Pure constants."""

from __future__ import annotations

KAFKA_HOME = "/opt/kafka"
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
