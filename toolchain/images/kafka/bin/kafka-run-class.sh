#!/bin/bash
# Runs one Kafka main class on the image's classpath. Reads the variables Apache Kafka's own
# scripts read, so stack settings written for them keep working: KAFKA_HEAP_OPTS,
# KAFKA_JVM_PERFORMANCE_OPTS, KAFKA_LOG4J_OPTS, KAFKA_OPTS (word-split on purpose).
set -euo pipefail
main=$1
shift
home=${KAFKA_HOME:-/opt/kafka}
# shellcheck disable=SC2086
exec java ${KAFKA_HEAP_OPTS:--Xmx256m} \
  ${KAFKA_JVM_PERFORMANCE_OPTS:--XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true} \
  ${KAFKA_LOG4J_OPTS:--Dlog4j2.configurationFile=$home/config/log4j2.properties} \
  ${KAFKA_OPTS:-} -cp "$home/libs/*" "$main" "$@"
