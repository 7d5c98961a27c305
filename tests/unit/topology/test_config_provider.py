"""components/topology/config_provider.py: the one reading and writing of `${...}` placeholders."""

from __future__ import annotations

import pytest

from components.topology.config_provider import PLACEHOLDER, file_placeholder, file_reference, is_placeholder
from components.topology.model import SecretRef


def test_what_the_stack_writes_reads_back_as_the_same_file_and_key() -> None:
    written = file_placeholder("/etc/mm2/secrets.properties", "dr.mm2.password")
    assert written == "${file:/etc/mm2/secrets.properties:dr.mm2.password}"
    assert SecretRef("dr.mm2.password").placeholder("/etc/mm2/secrets.properties") == written
    assert is_placeholder(written)
    assert file_reference(f"  {written} ") == ("/etc/mm2/secrets.properties", "dr.mm2.password")


@pytest.mark.parametrize(
    ("value", "placeholder", "reference"),
    [
        ("${env:MM2_PASSWORD}", True, None),  # another provider: a reference, but names no file
        ("${file:/p:a:b}", True, ("/p", "a:b")),  # the key may hold colons, the file may not
        ("${file:/p}", True, None),
        ("${file::k}", True, None),
        ("secret", False, None),
        ("x${file:/p:k}", False, None),
        ("${file:/p:k} and ${file:/p:j}", False, None),
        ("${}", False, None),
    ],
)
def test_placeholders_and_file_references(value: str, placeholder: bool, reference: tuple[str, str] | None) -> None:
    assert is_placeholder(value) is placeholder
    assert file_reference(value) == reference


def test_the_pattern_finds_every_placeholder_inside_a_jaas_string() -> None:
    jaas = 'M required username="${file:/p:user}" password="${file:/p:pw}";'
    assert [m["body"] for m in PLACEHOLDER.finditer(jaas)] == ["/p:user", "/p:pw"]
