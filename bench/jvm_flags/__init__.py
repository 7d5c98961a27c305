"""JVM flags benchmark: CPU of a test module's brokers and workers with Kafka's flags against C1 only (run.py)."""
