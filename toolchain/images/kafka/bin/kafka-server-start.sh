#!/bin/bash
# A KRaft broker and controller (kafka.Kafka), as Apache Kafka's script of the same name.
exec "$(dirname "$0")/kafka-run-class.sh" kafka.Kafka "$@"
