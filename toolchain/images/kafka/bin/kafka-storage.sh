#!/bin/bash
# Formats a KRaft log directory (kafka.tools.StorageTool), as Apache Kafka's script of the same name.
exec "$(dirname "$0")/kafka-run-class.sh" kafka.tools.StorageTool "$@"
