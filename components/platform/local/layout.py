"""Where the local platform keeps its processes: the run-directory layout, defined once.

Pure: paths as strings, no I/O. Every local stack has one run root,
`<project>/.mm2/run/<stack>`, holding:

- `<alias>/broker-<i>/`: broker `i` of cluster `<alias>` (`data/` its log directory);
- `connect-<group>/secrets.properties`: the group's secrets file its connectors resolve;
- `connect-<group>/worker-<i>/`: worker `i` of worker group `<group>`;
- `wan.network/`: the emulated network's switch sockets and forwarders' pid files, when the
  stack's links are emulated (`components.platform.local.network`);
- `tls/`: the stack's CA, truststore and keystores (`components.platform.local.tls`);
- `watcher-<group>/`: the group's auto-restart watcher (`components.platform.local.watcher`),
  `status.json` its status (what `bin/status` shows).

Inside each process's run directory: `config/` (its properties, log4j2 config and owner-only
secret files) and `logs/`. A process's marker (on its command line, how it is found again) is
its run directory relative to the run root, prefixed by the stack.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# Relative to a process's run directory.
CONFIG_DIR = "config"
PROCESS_PROPERTIES = f"{CONFIG_DIR}/process.properties"
LOG4J2_FILE = f"{CONFIG_DIR}/log4j2.properties"
BROKER_SECRETS = f"{CONFIG_DIR}/secrets.properties"
WORKER_SECRETS = f"{CONFIG_DIR}/worker-secrets.properties"
REST_JAAS = f"{CONFIG_DIR}/rest-jaas.conf"
REST_USERS = f"{CONFIG_DIR}/rest-users.properties"
LOGS_DIR = "logs"
BROKER_DATA_DIR = "data"
# Relative to a worker group's directory.
GROUP_SECRETS = "secrets.properties"
# Relative to the run root, and to a watcher's directory.
WATCHER_DIR = "watcher-{group}"
WATCHER_STATUS_FILE = "status.json"


def watcher_path(group: str) -> str:
    """The auto-restart watcher's directory relative to the stack's run root (the marker's path part)."""
    return WATCHER_DIR.format(group=group)


LAG_EXPORTER_DIR = "lag-exporter-{group}"
LAG_EXPORTER_STATE_FILE = "state.json"


def lag_exporter_path(group: str) -> str:
    """The lag exporter's directory relative to the stack's run root (the marker's path part)."""
    return LAG_EXPORTER_DIR.format(group=group)


# The emulated network's sockets and pid files (components/platform/local/network.py). The dot,
# which no cluster alias or group name may hold, keeps it apart from their directories.
NETWORK_PATH = "wan.network"


def run_root(project_dir: str | Path, stack: str) -> str:
    """The stack's run root under the project directory."""
    return f"{project_dir}/.mm2/run/{stack}"


def tls_dir(run_root: str) -> str:
    return f"{run_root}/tls"


def brokers_path(alias: str) -> str:
    """What the paths of every broker of cluster `alias` start with."""
    return f"{alias}/broker-"


def broker_path(alias: str, node_id: int) -> str:
    return f"{brokers_path(alias)}{node_id}"


def group_path(group: str) -> str:
    return f"connect-{group}"


def worker_path(group: str, index: int) -> str:
    return f"{group_path(group)}/worker-{index}"


def process_marker(stack: str, path: str) -> str:
    """The command-line marker of the process at `path` (`broker_path`, `worker_path`) in
    `stack`, unique per stack; a prefix of it (`brokers_path`, or "") matches a set of them."""
    return f"{stack}/{path}"


@dataclass(frozen=True)
class LocalPlatform:
    """Where the local platform keeps its processes and which jars it runs."""

    stack: str
    run_root: str  # run_root(<project>, <stack>)
    kafka_libs: str  # classpath directory written by bin/bootstrap

    def run_dir(self, path: str) -> str:
        """The run directory of the process at `path` (`broker_path`, `worker_path`)."""
        return f"{self.run_root}/{path}"

    def marker(self, path: str) -> str:
        """The command-line marker of the process at `path`, unique per stack."""
        return process_marker(self.stack, path)

    def group_secrets_file(self, group: str) -> str:
        return f"{self.run_root}/{group_path(group)}/{GROUP_SECRETS}"
