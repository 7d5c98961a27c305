"""Validation throughput benchmark: the Spark validator against a single-process baseline (run.py)."""
