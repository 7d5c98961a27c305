"""Where the local platform's dynamic providers lived before they moved to
`components/platform/local/`, kept so stacks deployed before the move keep working.

Pulumi stores each dynamic resource's provider pickled *by module path* in the stack state, and
`pulumi refresh` / `pulumi destroy` unpickle the stored one. A stack deployed before the move
therefore names `components.local.provider.ProcessProvider` (and `secrets_file`, `tls`); without
these paths its JVMs could no longer be refreshed or stopped. The next `pulumi up` records the
providers under their new paths. Nothing in this project imports this package.
"""

from __future__ import annotations

import importlib
import sys

for _moved in ("provider", "secrets_file", "tls"):
    sys.modules[f"{__name__}.{_moved}"] = importlib.import_module(f"components.platform.local.{_moved}")
