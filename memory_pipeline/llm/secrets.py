"""Keeping the API key out of logs, metadata, reports and exception messages."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable

REDACTED = "[REDACTED]"
# Anthropic keys look like sk-ant-api03-…; anything of that shape is redacted even if it is not ours.
_KEY_SHAPE = re.compile(r"sk-ant-[A-Za-z0-9_\-]{4,}")
_MIN_SECRET_LEN = 8  # shorter "secrets" (test placeholders) would redact ordinary words


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    for secret in secrets:
        if secret and len(secret) >= _MIN_SECRET_LEN:
            text = text.replace(secret, REDACTED)
    return _KEY_SHAPE.sub(REDACTED, text)


class SecretFilter(logging.Filter):
    """Redacts secrets from every record that passes through the logger it is attached to."""

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        super().__init__()
        self.secrets = {s for s in secrets if s}

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redact(message, self.secrets)
        if clean != message:
            record.msg, record.args = clean, None
        return True


def guard_sdk_loggers(secret: str | None) -> None:
    """Attach a redacting filter to the SDK's and its HTTP layer's loggers (once per secret)."""
    for name in ("anthropic", "httpx2", "httpcore2", "httpx", "httpcore"):
        logger = logging.getLogger(name)
        existing = next((f for f in logger.filters if isinstance(f, SecretFilter)), None)
        if existing is None:
            logger.addFilter(SecretFilter([secret]))
        elif secret:
            existing.secrets.add(secret)
