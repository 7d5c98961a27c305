"""Lag exporter benchmark: what the exporter costs replication on the dev stack (run.py)."""
