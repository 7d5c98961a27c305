"""Tests of the pure topology model (components/topology)."""
