"""JAAS quoted strings: how a value is written inside `option="..."` of a `sasl.jaas.config`.

Its own module so both the connector configs (connectors.py) and the secrets files (jaas.py,
which imports the security model and through it connectors.py) can use it without a cycle.
"""

from __future__ import annotations


def jaas_quote(text: str) -> str:
    """The body of a JAAS quoted string holding `text`: Kafka's JaasConfig tokenizer undoes exactly this."""
    return text.replace("\\", "\\\\").replace('"', '\\"')
