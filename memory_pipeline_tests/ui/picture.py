"""What a screenshot of the asset graph shows, written into the PNG itself (a `tEXt` chunk) when it is taken, so
a fast test can tell a committed picture from the definitions it no longer matches without opening a browser."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

SIGNATURE = b"\x89PNG\r\n\x1a\n"
SHOWN = "memory_pipeline:shown"  # the chunk's keyword


def _chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    if not data.startswith(SIGNATURE):
        raise ValueError("not a PNG")
    out, at = [], len(SIGNATURE)
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        out.append((data[at + 4 : at + 8], data[at + 8 : at + 8 + length]))
        at += 12 + length
    return out


def texts(path: Path) -> dict[str, str]:
    """The PNG's tEXt chunks, keyword → text."""
    found = {}
    for kind, body in _chunks(path.read_bytes()):
        if kind == b"tEXt":
            key, _, value = body.partition(b"\0")
            found[key.decode("latin-1")] = value.decode("latin-1")
    return found


def with_text(data: bytes, key: str, value: str) -> bytes:
    """`data` (a PNG) with a tEXt chunk `key` = `value` just before its end (replacing one of the same key)."""
    body = key.encode("latin-1") + b"\0" + value.encode("latin-1")
    chunk = struct.pack(">I", len(body)) + b"tEXt" + body + struct.pack(">I", zlib.crc32(b"tEXt" + body))
    out = bytearray(SIGNATURE)
    for kind, payload in _chunks(data):
        if kind == b"tEXt" and payload.split(b"\0", 1)[0] == key.encode("latin-1"):
            continue
        if kind == b"IEND":
            out += chunk
        out += struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))
    return bytes(out)


def shown(assets: list[str], checks: list[str]) -> str:
    """The chunk's text: the group's asset keys in the graph's order, and the checks on them."""
    return f"assets: {', '.join(assets)}; checks: {', '.join(sorted(checks))}"


def group_now() -> str:
    """The abstraction group as the definitions hold it: its assets in the pipeline's order, their checks."""
    from memory_pipeline import definitions
    from memory_pipeline.defs.abstraction.schedules import PIPELINE

    graph = definitions.defs().resolve_asset_graph()
    keys = {k.to_user_string() for k in graph.get_all_asset_keys() if graph.get(k).group_name == "abstraction"}
    order = [a.key.to_user_string() for a in PIPELINE]
    assert set(order) == keys, "the group and the pipeline's order differ"
    checks = [f"{c.asset_key.to_user_string()}:{c.name}" for c in graph.asset_check_keys
              if c.asset_key.to_user_string() in keys]  # fmt: skip
    return shown(order, checks)
