"""Secrets never reach the store: each kind a hostile user tried is replaced by a marker naming it, everyday text
(numbers, hashes, times, words like `token` and `key`) is left alone, and `keep` stores text verbatim."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from memory_pipeline import redaction
from memory_pipeline.settings import SettingsError
from memory_pipeline.store import MemoryStore
from memory_pipeline.store.importers import import_jsonl
from memory_pipeline.store.records import parse_record

PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAwq8kq1mCGZ3yYxJ0Qd5rV3FzXkq6\n"
    "Zx2nLr9pQwErTyUiOp0987654321AbCdEfGhIjKl\n-----END RSA PRIVATE KEY-----"
)
# (text, the secret that must go, the kind its marker names)
SECRETS = [
    ("export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY && aws s3 ls",
     "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "AWS_SECRET_ACCESS_KEY"),
    ("aws_access_key_id = AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE", "AWS Access Key"),
    ("pushed with ghp_16C7e42F292c6912E7710c838347Ae178B4a as the token", "16C7e42F292c6912E7710c838347Ae178B4a",
     "GitHub Token"),
    (f"the deploy key is\n{PEM}\nkeep it safe", PEM, "Private Key"),
    ("PGPASSWORD=hunter2xyz psql -h db.internal -U app", "hunter2xyz", "PGPASSWORD"),
    ("DATABASE_URL=postgres://app:S3cr3tPassw0rd@db.internal:5432/app", "S3cr3tPassw0rd", "Basic Auth"),
    ("export OPENAI_API_KEY=sk-proj-4fTq9ZbX2vLm8NcR7sYw1KdJ3hGp6eAu0iOo",
     "sk-proj-4fTq9ZbX2vLm8NcR7sYw1KdJ3hGp6eAu0iOo", "redacted"),
    ('{"name": "charge", "arguments": {"api_key": "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"}}',
     "4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c", "redacted"),
    ("client_secret: 'Zm9vYmFyYmF6cXV4'", "Zm9vYmFyYmF6cXV4", "client_secret"),
    ("Authorization token=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
     "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "redacted"),
    ("slack bot: xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "AbCdEfGhIjKlMnOpQrStUvWx", "Slack"),
]  # fmt: skip

# Notes an agent writes every day: none of them holds a secret, and none may change.
EVERYDAY = [
    "Backtested a carry trade on the basis on BTC 15m candles: Sharpe 0.94, max drawdown 47%.",
    "Standup moved to 10:15 so the Berlin folks can join.",
    "Fixed in commit 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f; see PR #4312.",
    "context budget: 1500 tokens; active tokens 37722",
    "sort_key = created_at, primary key: memory_id",
    "author: Jane Doe; passed 12 of 14 tests",
    "Set a price alert on TIA at 5.99: previous all-time high, expect a reaction.",
    "The token bucket refills 50 tokens per second; key rotation is monthly.",
    "password reset emails now expire after 30 minutes",
    "Use the API key from the vault (never paste it): OPENAI_API_KEY=$OPENAI_API_KEY",
    "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 of the empty file",
    "The run id was d4f556f1-5c2e-4a8b-9f1d-2b7c3e8a9f10; it archived 561 memories.",
]


@pytest.mark.parametrize(("text", "secret", "kind"), SECRETS, ids=[s[2] for s in SECRETS])
def test_each_kind_of_secret_is_replaced_by_a_marker_naming_it(text: str, secret: str, kind: str) -> None:
    out, kinds = redaction.redact(text, environ={})
    assert secret not in out, out
    assert kinds and "[redacted" in out and kind.lower() in out.lower(), out
    head, tail = text[: text.index(secret)], text[text.index(secret) + len(secret) :]
    kept_head = head.rsplit(" ", 1)[0] if " " in head else ""  # the words before the token the secret is part of
    assert out.startswith(kept_head) and out.endswith(tail), out  # only the secret goes, not its sentence


@pytest.mark.parametrize("text", EVERYDAY)
def test_everyday_text_is_left_alone(text: str) -> None:
    assert redaction.redact(text, environ={}) == (text, [])


def test_conversations_we_did_not_write_are_left_alone() -> None:
    """Every turn of the LoCoMo conversations (real chat, never tuned on): no turn holds a secret, none changes."""
    from memory_pipeline.evaluation.locomo_transcripts import default_locomo_path

    path = default_locomo_path()
    if not path.exists():
        pytest.skip(f"no LoCoMo file at {path}")
    turns = [
        turn["text"]
        for conversation in json.loads(path.read_text(encoding="utf-8"))
        for key, session in conversation["conversation"].items()
        if key.startswith("session_") and isinstance(session, list)
        for turn in session
    ]
    assert len(turns) > 1000
    changed = [t for t in turns if redaction.redact(t, environ={})[1]]
    assert changed == []


def test_keep_stores_verbatim_and_a_wrong_value_is_named() -> None:
    text = SECRETS[1][0]
    assert redaction.redact(text, environ={redaction.SECRETS_ENV: "keep"}) == (text, [])
    with pytest.raises(SettingsError, match="MEMORY_PIPELINE_SECRETS='verbatim'"):
        redaction.redact(text, environ={redaction.SECRETS_ENV: "verbatim"})


def test_a_long_blob_is_scanned_at_its_ends_and_prose_in_one_pass() -> None:
    blob = "A" * 100_000
    text = f"before AKIAIOSFODNN7EXAMPLE {blob} ghp_16C7e42F292c6912E7710c838347Ae178B4a after"
    out, kinds = redaction.redact(text, environ={})
    assert "AKIAIOSFODNN7EXAMPLE" not in out and "ghp_16C7" not in out and blob in out
    assert kinds == ["AWS Access Key", "GitHub Token"]


def test_a_record_that_holds_a_secret_is_stored_without_it_and_without_its_vector(tmp_path: Path) -> None:
    """Every write of a memory (import, remember, the spool) validates through `parse_record`: the store, and so
    search and the prompt, never see the key; a vector given with it (of the original text) is dropped."""
    record = parse_record(
        {"id": "m1", "content": SECRETS[1][0], "created_at": "2026-11-01T10:00:00Z", "embedding": [0.1, 0.2]}, "row 1"
    )
    assert "AKIAIOSFODNN7EXAMPLE" not in record.content and record.embedding is None
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"id": "m2", "content": SECRETS[4][0], "created_at": "2026-11-01T10:00:00Z"}) + "\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    import_jsonl(MemoryStore(ws / "memory.duckdb"), src)
    con = duckdb.connect(str(ws / "memory.duckdb"), read_only=True)
    try:
        (content,) = con.execute("SELECT content FROM memories WHERE id = 'm2'").fetchone() or ("",)
    finally:
        con.close()
    assert "hunter2xyz" not in content and "[redacted value of PGPASSWORD]" in content
    assert b"hunter2xyz" not in (ws / "memory.duckdb").read_bytes()
