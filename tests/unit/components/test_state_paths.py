"""Stacks deployed before a provider moved still unpickle it: the state names it by old path."""

from __future__ import annotations

import pickle

import pytest

from components.platform.local import provider, secrets_file, tls


@pytest.mark.parametrize(
    ("old_path", "cls"),
    [
        ("components.local.provider ProcessProvider", provider.ProcessProvider),
        ("components.local.secrets_file SecretsFileProvider", secrets_file.SecretsFileProvider),
        ("components.local.tls TlsMaterialProvider", tls.TlsMaterialProvider),
    ],
)
def test_provider_pickled_under_its_old_path_unpickles(old_path: str, cls: type) -> None:
    module, name = old_path.split()
    # Protocol 0's GLOBAL opcode: exactly how a pickled instance refers to its class.
    assert pickle.loads(f"c{module}\n{name}\n.".encode()) is cls


def test_a_path_that_never_existed_does_not_unpickle() -> None:
    with pytest.raises((ModuleNotFoundError, AttributeError)):
        pickle.loads(b"ccomponents.local.provider\nNoSuchProvider\n.")
