#!/bin/bash
# A distributed Kafka Connect worker, with MirrorMaker 2's connectors on its classpath.
exec "$(dirname "$0")/kafka-run-class.sh" org.apache.kafka.connect.cli.ConnectDistributed "$@"
