"""Operator commands that run against a deployed stack: smoke check, connectors, failover, DR drill."""
