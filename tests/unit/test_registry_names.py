"""Package registries are named by their names (Maven Central, PyPI, the Go module proxy), never by
their hosts, in code, docs and messages: the clients reach them through their own defaults and the
user's settings (~/.m2/settings.xml, pip's configuration, GOPROXY), which a host written here would
bypass or contradict."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REGISTRY_HOSTS = (
    "repo.maven.apache.org",
    "repo1.maven.org",
    "central.sonatype.com",
    "maven-central.storage-download.googleapis.com",
    "spark-packages.org",
    "pypi.org",
    "pypi.python.org",
    "files.pythonhosted.org",
    "proxy.golang.org",
    "sum.golang.org",
    "deb.debian.org",
    "security.debian.org",
    "registry.npmjs.org",
    "registry-1.docker.io",
)
# Go's checksums name modules by import path, not by the proxy that serves them.
SKIPPED_SUFFIXES = (".sum",)


def registry_hosts_in(text: str) -> list[str]:
    lowered = text.lower()
    return [host for host in REGISTRY_HOSTS if host in lowered]


def tracked_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True)
    paths = (ROOT / name for name in listed.stdout.split("\0") if name)
    return [p for p in paths if p.is_file() and not p.name.endswith(SKIPPED_SUFFIXES) and p != Path(__file__)]


def test_no_registry_is_named_by_its_host() -> None:
    found = {}
    for path in tracked_files():
        try:
            hosts = registry_hosts_in(path.read_text(encoding="utf-8"))
        except UnicodeDecodeError:
            continue  # binary
        if hosts:
            found[str(path.relative_to(ROOT))] = hosts
    assert found == {}


def test_the_registry_host_rule_can_fail() -> None:
    message = "Check network access to repo.maven.apache.org or ~/.m2/settings.xml mirrors."
    assert registry_hosts_in(message) == ["repo.maven.apache.org"]
    assert registry_hosts_in("Check network access to Maven Central or the mirrors in ~/.m2/settings.xml.") == []
    # Maven's POM namespace is Maven's site, not the registry.
    assert registry_hosts_in('<project xmlns="http://maven.apache.org/POM/4.0.0">') == []
