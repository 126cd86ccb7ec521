"""Bearer tokens of the fleet gateway: one per agent, `mpg_<token id>_<secret>`. Only a salted SHA-256 of the
secret is stored (`<fleet root>/gateway/tokens.json`, mode 0600); the token itself is shown once, when issued.
Issuing a new token for an agent replaces its old one; revoking removes it. The gateway re-reads the file when
it changes, so a revoked token fails on the very next request."""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import json
import os
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from memory_pipeline.errors import UserError
from memory_pipeline.fleet.registry import AGENT_ID, agent_home, agents_dir, check_agent_id

PREFIX = "mpg"


def gateway_dir(root: Path) -> Path:
    return Path(root) / "gateway"


def tokens_path(root: Path) -> Path:
    return gateway_dir(root) / "tokens.json"


def _digest(salt: str, secret: str) -> str:
    return hashlib.sha256(bytes.fromhex(salt) + secret.encode("utf-8")).hexdigest()


def _read(path: Path) -> dict[str, dict[str, str]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, json.JSONDecodeError) as exc:
        raise UserError(f"{path}: unreadable token file ({exc}); issue the tokens again") from None
    tokens = data.get("tokens") if isinstance(data, dict) else None
    return tokens if isinstance(tokens, dict) else {}


@contextmanager
def _locked(root: Path) -> Iterator[dict[str, dict[str, str]]]:
    """The token table under an exclusive lock; written back atomically (temp file, fsync, rename)."""
    folder = gateway_dir(root)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "tokens.lock", "a") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        tokens = _read(tokens_path(root))
        yield tokens
        tmp = folder / f".tokens.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"version": 1, "tokens": tokens}, fh, indent=1, sort_keys=True)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, tokens_path(root))


def issue(root: Path, agent: str, now: datetime) -> str:
    """A new token for a registered agent (its previous one stops working). Returned once, never stored."""
    agent_home(root, agent)
    token_id, secret, salt = secrets.token_hex(6), secrets.token_urlsafe(32), secrets.token_hex(16)
    with _locked(root) as tokens:
        for tid in [t for t, e in tokens.items() if e.get("agent") == agent]:
            del tokens[tid]
        tokens[token_id] = {"agent": agent, "salt": salt, "hash": _digest(salt, secret), "issued": now.isoformat()}
    return f"{PREFIX}_{token_id}_{secret}"


def revoke(root: Path, agent: str) -> bool:
    """End the agent's token; False when it had none."""
    check_agent_id(agent)
    with _locked(root) as tokens:
        mine = [t for t, e in tokens.items() if e.get("agent") == agent]
        for tid in mine:
            del tokens[tid]
    return bool(mine)


@dataclass
class TokenBook:
    """What the gateway checks each request against: the token table, re-read whenever the file changes."""

    root: Path

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._stamp: tuple[int, ...] | None = None
        self._tokens: dict[str, dict[str, str]] = {}

    def _current(self) -> dict[str, dict[str, str]]:
        path = tokens_path(self.root)
        try:
            st = os.stat(path)
            stamp: tuple[int, ...] = (st.st_ino, st.st_mtime_ns, st.st_size)
        except FileNotFoundError:
            stamp = (0, 0, 0)
        with self._lock:
            if stamp != self._stamp:
                try:
                    self._tokens = _read(path)
                except UserError:
                    self._tokens = {}  # a damaged file admits nobody
                self._stamp = stamp
            return self._tokens

    def agent(self, token: str | None) -> str | None:
        """The agent a token belongs to, or None (no token, malformed, unknown, revoked, agent removed). The
        answer never says which of these it was."""
        if not token:
            return None
        parts = token.split("_", 2)
        if len(parts) != 3 or parts[0] != PREFIX:
            return None
        entry: Any = self._current().get(parts[1])
        if not isinstance(entry, dict):
            return None
        try:
            good = hmac.compare_digest(_digest(str(entry["salt"]), parts[2]), str(entry["hash"]))
        except (KeyError, ValueError):
            return None
        agent = str(entry.get("agent", ""))
        if not good or not AGENT_ID.match(agent) or not (agents_dir(self.root) / agent).is_dir():
            return None
        return agent

    def readable(self) -> bool:
        try:
            self._current()
            return True
        except OSError:
            return False
