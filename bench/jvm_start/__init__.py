"""JVM start-up benchmark: the local platform's class-data-sharing archives against none (run.py)."""
