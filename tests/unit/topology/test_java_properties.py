"""components/topology/java_properties.py: java.util.Properties syntax, both ways."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from components.topology.java_properties import parse_properties, render_properties


def test_java_properties_syntax() -> None:
    text = (
        "a=1\n"
        "b: 2\n"
        "c 3\n"
        "  d   =   4\n"
        "# e = 5\n"
        "! f = 6\n"
        "g = one,\\\n    two\n"
        "h\\:colon = x\\\\y\n"
        "i = \\u0041\\tB\n"
        "j =\n"
        "k = ends with even \\\\\\\\\n"
        "l = next\n"
        "m\\ space = v\n"
    )
    assert parse_properties(text) == [
        ("a", "1"),
        ("b", "2"),
        ("c", "3"),
        ("d", "4"),
        ("g", "one,two"),
        ("h:colon", "x\\y"),
        ("i", "A\tB"),
        ("j", ""),
        ("k", "ends with even \\\\"),
        ("l", "next"),
        ("m space", "v"),
    ]


@given(st.lists(st.tuples(st.text(min_size=1), st.text())))
def test_render_then_parse_is_identity(pairs: list[tuple[str, str]]) -> None:
    assert parse_properties(render_properties(pairs)) == pairs
