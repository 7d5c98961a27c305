"""Pulumi components for MirrorMaker 2 replication; the pure topology model lives in `topology`."""
