"""Operator commands that run against a deployed stack (smoke check, later failover and drills)."""
