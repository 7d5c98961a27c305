"""Benchmarks: each prints its figures and records the machine; results in bench/results/."""
