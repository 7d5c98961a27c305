"""Container platforms: `kubernetes` (prod) and `docker` (single host).

`manifests` is pure (Kubernetes objects and docker container specs as plain data); `kubernetes`
and `docker` register them as pulumi_kubernetes / pulumi_docker resources under a component.
Import the Pulumi modules directly (`components.platform.kubernetes`) so that importing the pure
manifests never pulls in a provider SDK.
"""

from __future__ import annotations
