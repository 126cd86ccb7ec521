"""Secret shapes a hostile user stored that the detector missed, or only half-redacted: each is gone from the
store and every file of the workspace, replaced by a marker, whichever way it came in — `import`, an MCP
`remember`, `flush`, a Codex session's JSON-encoded tool call — and ordinary prose about passwords and tokens is
left as it was. Every fake secret is built from parts so no scanner takes this file for a leak."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from memory_pipeline import redaction
from memory_pipeline.cli import main
from memory_pipeline.store import MemoryStore
from memory_pipeline.store.importers import import_jsonl
from memory_pipeline_tests.hostile.test_secrets_on_the_way_in import _everything
from memory_pipeline_tests.hostile.test_transcript_import_cases import rollout, said
from memory_pipeline_tests.writes.conftest import mcp_calls

GCP = "AIza" + "SyD4x9Qm2Lr7Tk1Wv8Zb3Nc6Hj0Pf5Gy2Ue"
FINE_PAT = "github_pat_" + "11ABCDEFG0" + "aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5oQ7sU9wY1aC3eG5iK7mO9qS1uW3yA5cE7gI9k"
HF = "hf_" + "QwErTyUiOpAsDfGhJkLzXcVbNmQwErTyUi"
NPM = "npm_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
SAS = "Xk2%2Bq9Lm4Tz8Wv1Nc6Rb3Yh7Jd5Gf0Sa%3D"
DISCORD = "Hk3-pQ9zLm2" + "xY7wV1bN5cR8tG4jF6dS0aE3qW9eR2tY7uI1oP5aS8dF4gH6jK0lZ3xC9vB2nM5q"
REDIS = "Rd5!cacheP4ss"
BEARER = "Opq7" + "rSt9uVw1XyZ3aBc5DeF7gHi9JkL1"
JWT_SIG = "Zq110Xv-dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
JWT = "eyJhbGciOiJIUzI1NiJ9." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0." + JWT_SIG
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY9"
AWS_FILE = "[default]\naws_access_key_id = AKIA" + "IOSFODNN7EXAMPLE\naws_secret_access_key = " + AWS_SECRET + "\n"

# (row id, text as it reaches the store, the secret that must go)
SHAPES = [
    ("gcp-api-key", f"the maps client uses key {GCP} in prod", GCP),
    ("github-fine-grained-pat", f"cloned with {FINE_PAT} yesterday", FINE_PAT),
    ("huggingface-token", f"HF login: {HF}", HF),
    ("npm-token", f"publish with {NPM} from CI", NPM),
    ("azure-sas-url", "download https://acct.blob.core.windows.net/backups/db.bak?sv=2022-11-02&ss=b&srt=o&sp=r"
     f"&se=2026-01-01T00:00:00Z&spr=https&sig={SAS} before Friday", SAS),
    ("discord-webhook", f"alerts go to https://discord.com/api/webhooks/1234567890123456789/{DISCORD}", DISCORD),
    ("discordapp-webhook", f"old hook https://discordapp.com/api/webhooks/123456789012345678/{DISCORD} retired",
     DISCORD),
    ("redis-password-no-user", f"REDIS_URL is redis://:{REDIS}@cache.internal:6379/0", REDIS),
    ("authorization-bearer", f"curl -H 'Authorization: Bearer {BEARER}' https://api.internal/v1/jobs", BEARER),
    ("mysql-p", "mysql -h db-01 -u root -pMy5ql!root appdb < dump.sql", "My5ql!root"),
    ("sshpass-p", "sshpass -p 'Ssh#pass42' ssh deploy@web-02", "Ssh#pass42"),
    ("docker-login-p", "docker login -u ci -p Dk9zz!pass registry.example.com", "Dk9zz!pass"),
    ("docker-login-password", "docker login --password Dkr7#word registry.example.com", "Dkr7#word"),
    ("env-db-pass", "# .env\nDB_HOST=db-01\nDB_PASS=Hunt3r2Pass\n", "Hunt3r2Pass"),
    ("env-key", "MAILGUN_KEY=mg-7a1c9e ./send.sh", "mg-7a1c9e"),
    ("netrc", "machine api.example.com login bob password Xy7pQ2zL9", "Xy7pQ2zL9"),
    ("prose-password", "the root password for db-01 is Tr0ub4dor&3.", "Tr0ub4dor&3"),
    ("yaml-next-line", "db_password: |\n  hunter2-long", "hunter2-long"),
    ("escaped-next-line", '{"cmd": "cat db.yml", "out": "db:\\n  password:\\n    hunter2-long-Xq9"}',
     "hunter2-long-Xq9"),
    ("jwt-signature", f"the session cookie was {JWT}", JWT_SIG),
    ("aws-file-in-json", json.dumps({"output": AWS_FILE}), AWS_SECRET),
    ("json-escaped-password", json.dumps({"arguments": json.dumps({"password": "Hx8-qq2Lm", "user": "app"})}),
     "Hx8-qq2Lm"),
    ("json-escaped-client-secret", json.dumps({"arguments": json.dumps({"client_secret": "cs-Zq81mXw"})}),
     "cs-Zq81mXw"),
    ("prose-password-colon", "ssh password for db-01: Qw3rty!Uiop", "Qw3rty!Uiop"),
    ("password-piped-to-stdin", "echo 'Sup3rS3cret' | docker login --password-stdin -u me registry.io",
     "Sup3rS3cret"),
    # a token longer than its rule's shape is redacted to its end, not up to the shape's length
    ("github-pat-longer", f"cloned with {FINE_PAT}Xq7Zw yesterday", "Xq7Zw"),
    ("url-password-reserved", "DATABASE_URL=postgresql://app:Pg5ecret!x@db.internal:5432/app", "Pg5ecret!x"),
    ("curl-user", "curl -u admin:Adm1nPass! https://jenkins.internal/api", "Adm1nPass!"),
    ("ssh-keygen-passphrase", "ssh-keygen -t ed25519 -N 'K3yPassphrase!' -f deploy_key", "K3yPassphrase!"),
    ("openssl-pass", "openssl enc -aes-256-cbc -pass pass:Op3nSSLpass -in f", "Op3nSSLpass"),
    ("htpasswd-batch", "htpasswd -cb .htpasswd admin Htp4ss!word", "Htp4ss!word"),
    ("key-in-prose", "The Stripe API key for staging is sk_test_51HxYzAbCdEfGhIjKlMnOp.",
     "sk_test_51HxYzAbCdEfGhIjKlMnOp"),
]  # fmt: skip

PROSE = [
    "the password policy requires 12 characters",
    "passed the token to the function",
    "the password is stored in the vault.",
    "the root password for db-01 is in the vault",
    "Bearer tokens expire after an hour; refresh them with the client.",
    "use docker login --password-stdin, never --password on the command line",
    "machine learning models need a password manager",
    "SORT_KEY=created_at and PRIMARY_KEY=id in the export",
    "mysql -u root -p prompts for the password",
    "the signature param is sig=short in the docs",
    'curl -u "$USER:$PASS" https://ci.internal',
    "ssh-keygen -N '' makes a key without a passphrase",
    "the API key for staging is in the vault",
    "Set token expiry to 3600 seconds.",
    "htpasswd -b takes the password on the command line, so avoid it",
    "cloned https://github.com/acme/app and ran make",
]


@pytest.mark.parametrize(("text", "secret"), [s[1:] for s in SHAPES], ids=[s[0] for s in SHAPES])
def test_each_shape_is_replaced_by_a_marker(text: str, secret: str) -> None:
    out, kinds = redaction.redact(text, environ={})
    assert secret not in out and kinds and "[redacted " in out, out
    assert redaction.redact(out, environ={}) == (out, []), "a marker is redacted again"


@pytest.mark.parametrize("text", PROSE)
def test_prose_about_passwords_and_tokens_is_left_alone(text: str) -> None:
    assert redaction.redact(text, environ={}) == (text, [])


def test_a_megabyte_of_near_misses_finishes() -> None:
    """No rule backtracks without bound: each keyword a megabyte long, the value never closing."""
    for unit in ("password for x is ", "mysql -p", "DB_PASS=", "machine h login u ", "Authorization: Bearer ",
                 '\\"password\\": \\"', "eyJ" + "a" * 20 + ".", "://:", "&sig="):  # fmt: skip
        text = (unit * (1_000_000 // len(unit) + 1))[:1_000_000]
        assert len(redaction.redact(text, environ={})[0]) > 0


def _contents(home: Path) -> dict[str, str]:
    con = duckdb.connect(str(home / "memory.duckdb"), read_only=True)
    try:
        return dict(con.execute("SELECT id, content FROM memories").fetchall())
    finally:
        con.close()


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, dict[str, str]]]:
    """Every shape written once through each entry point: its workspace and the stored text by row id."""
    import os

    os.environ.pop(redaction.SECRETS_ENV, None)
    out: dict[str, tuple[Path, dict[str, str]]] = {}
    base = tmp_path_factory.mktemp("shapes")
    imported = base / "import"
    imported.mkdir()
    src = base / "rows.jsonl"
    src.write_text("".join(json.dumps({"id": i, "content": t, "created_at": "2026-11-01T10:00:00Z"}) + "\n"
                           for i, t, _ in SHAPES))  # fmt: skip
    import_jsonl(MemoryStore(imported / "memory.duckdb"), src)
    out["import"] = (imported, _contents(imported))
    remembered = base / "remember"
    remembered.mkdir()
    answers = mcp_calls(remembered, *[("remember", {"text": t, "id": i}) for i, t, _ in SHAPES])
    assert [a.is_error for a in answers] == [False] * len(SHAPES)
    out["remember"] = (remembered, _contents(remembered))
    return out


@pytest.mark.parametrize("way", ["import", "remember"])
@pytest.mark.parametrize(("row", "secret"), [(s[0], s[2]) for s in SHAPES], ids=[s[0] for s in SHAPES])
def test_each_shape_is_stored_as_a_marker(written: dict[str, tuple[Path, dict[str, str]]], way: str, row: str,
                                          secret: str) -> None:  # fmt: skip
    home, contents = written[way]
    assert secret not in contents[row] and "[redacted " in contents[row], contents[row]
    assert secret.encode() not in _everything(home)


def _workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "ws"
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(home))
    monkeypatch.setenv("MEMORY_PIPELINE_JOURNAL_GIT", "1")
    monkeypatch.delenv(redaction.SECRETS_ENV, raising=False)
    return home


def test_flushed_turns_and_codex_tool_calls_keep_no_shape(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`flush` and a Codex session whose tool arguments and outputs are JSON strings (escaped once more)."""
    home = _workspace(tmp_path, monkeypatch)
    turns = [{"role": "user", "content": t} for _, t, _ in SHAPES]
    (tmp_path / "turns.json").write_text(json.dumps(turns))
    assert main(["flush", str(tmp_path / "turns.json")]) == 0
    src = tmp_path / "src"
    src.mkdir()
    items: list[dict[str, object]] = [said("user", "Why does the deploy fail?")]
    for n, (_, text, _) in enumerate(SHAPES):
        items += [{"type": "function_call", "name": "shell", "call_id": f"c{n}",
                   "arguments": json.dumps({"command": ["bash", "-lc", text]})},
                  {"type": "function_call_output", "call_id": f"c{n}", "output": json.dumps({"output": text})}]
    items.append(said("assistant", "Decided: rotate every credential above."))
    (src / "rollout-codex.jsonl").write_bytes(rollout("0199e0d2-bbbb-7a30-b5e4-2f8d9c6a1e57", *items))
    assert main(["transcripts", "import", str(src)]) == 0
    found = _everything(home)
    assert found.count(b"[redacted ") >= 3 * len(SHAPES)
    assert [row for row, _, secret in SHAPES if secret.encode() in found] == []
