"""bin/kube benchmark: bootstrap --kubernetes cold, relinked and warm; the node's up, pod and down (run.py)."""
