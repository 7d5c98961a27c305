"""MM2's record layouts, built by hand (mm2-internals.md section 3), decoded and encoded in Python."""

from __future__ import annotations

import struct

import pytest

from components import mm2_records as r
from components.mm2_records import Checkpoint, RecordFormatError, decode_checkpoint, encode_checkpoint
from tests.unit.components.mm2_record_bytes import CKPT_KEY, CKPT_VALUE, HB_KEY, HB_VALUE, SYNC_KEY, SYNC_VALUE, s

# Checkpoint("consumer-group-1", "primary.test-topic-1", 3, upstream 150, downstream 251, ""), laid out
# by hand from mm2-internals.md 3.1: STRING = INT16 length + UTF-8, big-endian integers.
KEY = (
    bytes.fromhex("0010")
    + b"consumer-group-1"
    + bytes.fromhex("0014")
    + b"primary.test-topic-1"
    + bytes.fromhex("00000003")
)
VALUE = bytes.fromhex("0000000000000000009600000000000000fb0000")

TOPICS = {"orders": "primary.orders"}


def test_decode_checkpoint_from_the_documented_layout() -> None:
    got = decode_checkpoint(KEY, VALUE, 1234)
    assert got == Checkpoint("consumer-group-1", "primary.test-topic-1", 3, 150, 251, "", 1234)


def test_encode_is_the_inverse_of_decode_with_metadata() -> None:
    original = Checkpoint("g-ü", "primary.orders", 2, 10, 9, "meta data", 0)
    key, value = encode_checkpoint(original)
    assert decode_checkpoint(key, value) == original
    assert encode_checkpoint(decode_checkpoint(KEY, VALUE)) == (KEY, VALUE)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        (KEY[:-1], VALUE, "truncated"),
        (KEY + b"\x00", VALUE, "trailing"),
        (KEY, b"\x00\x01" + VALUE[2:], "unknown version 1"),
        (KEY, VALUE[:17], "truncated"),
        (KEY, VALUE + b"x", "trailing"),
        (bytes.fromhex("ffff"), VALUE, "negative string length"),
    ],
)
def test_decode_rejects_malformed_records(key: bytes, value: bytes, message: str) -> None:
    with pytest.raises(RecordFormatError, match=message):
        decode_checkpoint(key, value)


def test_checkpoint_layout() -> None:
    assert len(CKPT_VALUE) == 20
    c = r.decode_checkpoint(CKPT_KEY, CKPT_VALUE)
    assert c == r.Checkpoint("consumer-group-1", "primary.test-topic-1", 3, 150, 251, "")
    assert r.encode_checkpoint(c) == (CKPT_KEY, CKPT_VALUE)


def test_checkpoint_with_metadata_and_unicode() -> None:
    c = r.Checkpoint("gruppe-ü", "dr.orders", 0, 2**40, 7, "meta")
    key, value = r.encode_checkpoint(c)
    assert value[18:] == s("meta") and len(value) == 24
    assert r.decode_checkpoint(key, value) == c


def test_offset_sync_layout_has_no_version() -> None:
    assert len(SYNC_VALUE) == 16
    assert r.decode_offset_sync(SYNC_KEY, SYNC_VALUE) == r.OffsetSync("test-topic-1", 3, 100, 200)
    assert r.encode_offset_sync(r.OffsetSync("test-topic-1", 3, 100, 200)) == (SYNC_KEY, SYNC_VALUE)


def test_heartbeat_layout() -> None:
    assert r.decode_heartbeat(HB_KEY, HB_VALUE) == r.Heartbeat("backup", "primary", 1_700_000_000_000)
    assert r.encode_heartbeat(r.Heartbeat("backup", "primary", 1_700_000_000_000)) == (HB_KEY, HB_VALUE)


@pytest.mark.parametrize(
    ("decode", "key", "value", "message"),
    [
        (r.decode_checkpoint, CKPT_KEY, struct.pack(">h", 1) + CKPT_VALUE[2:], "unknown version 1"),
        (r.decode_checkpoint, CKPT_KEY[:-1], CKPT_VALUE, "truncated"),
        (r.decode_offset_sync, SYNC_KEY, SYNC_VALUE + b"\0", "trailing"),
        (r.decode_heartbeat, HB_KEY, HB_VALUE[:9], "truncated"),
        (r.decode_heartbeat, struct.pack(">h", -1) + s("x"), HB_VALUE, "negative string length"),
    ],
)
def test_malformed_records_are_rejected(decode, key: bytes, value: bytes, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(r.RecordFormatError, match=message):
        decode(key, value)
