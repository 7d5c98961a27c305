"""The auto-restart watcher's pure parts, below every layer that uses them: the plan file the
platforms write for a worker group (`plan.py`) and the back-off planner the watcher follows
(`backoff.py`). The watcher process itself is an operator command (components/ops/watcher.py).

Standard library only: the Kubernetes watcher pod ships these files and installs nothing.
"""
