"""components/topology/traces.py: the first line of an error or trace, and a trace's head."""

from __future__ import annotations

from components.topology.traces import NO_TRACE, TRACE_HEAD_LINES, first_line, trace_head


def test_first_line_skips_blank_lines_and_cuts_long_ones_only_when_asked() -> None:
    assert first_line("\n  \norg.Foo: bar  \n\tat x") == "org.Foo: bar"
    assert first_line("") == ""
    assert first_line("y" * 500, limit=20) == "y" * 17 + "..."
    assert first_line("y" * 500) == "y" * 500


def test_trace_head_keeps_the_exception_and_the_frames_that_locate_it() -> None:
    trace = "\n".join(["org.Foo: bar", *(f"\tat f{i}" for i in range(20))])
    head = trace_head(trace)
    assert head.splitlines()[:TRACE_HEAD_LINES] == trace.splitlines()[:TRACE_HEAD_LINES]
    assert head.endswith("\n\t...")
    assert trace_head("org.Foo: bar\n") == "org.Foo: bar"
    assert trace_head("  \n") == NO_TRACE
