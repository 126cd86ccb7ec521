"""Every environment setting the package reads, checked in one place before a command starts.

`check_environment()` raises a SettingsError whose one line names the first malformed variable and what it
expects; the CLI calls it before any command, so a typo is `configuration error: VAR='x': expected …` instead of
a traceback (or, worse, a silently different behaviour) from deep inside a run. Plain Python, no Dagster.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping
from datetime import date

from memory_pipeline.settings import SettingsError, env_overrides, pool_wait_seconds

RETENTION_ENV, RETENTION_DEFAULT = "MEMORY_PIPELINE_JOURNAL_RETENTION_DAYS", 90
_CRON_FIELD = re.compile(r"^[0-9A-Za-z*/,?\-]+$")

Check = Callable[[str, str], None]  # (variable, raw value) → None, or raise SettingsError


def _number(kind: type, minimum: float, maximum: float = math.inf, what: str = "") -> Check:
    def check(var: str, raw: str) -> None:
        try:
            value = kind(raw.strip())
        except ValueError:
            noun = "a whole number" if kind is int else "a number"
            raise SettingsError(f"{var}={raw!r}: expected {noun}{what}") from None
        if not math.isfinite(value) or not minimum <= value <= maximum:
            upper = "" if maximum == math.inf else f" and ≤ {maximum:g}"
            raise SettingsError(f"{var}={raw!r}: must be ≥ {minimum:g}{upper}{what}")

    return check


def _choice(*allowed: str, lower: bool = True) -> Check:
    def check(var: str, raw: str) -> None:
        value = raw.strip().lower() if lower else raw.strip()
        if value not in allowed:
            raise SettingsError(f"{var}={raw!r}: expected one of {', '.join(allowed)}")

    return check


def _timezone(var: str, raw: str) -> None:
    from zoneinfo import ZoneInfo

    try:
        ZoneInfo(raw.strip())
    except (ValueError, KeyError, OSError):
        raise SettingsError(f"{var}={raw!r}: expected an IANA time zone such as UTC or Europe/Paris") from None


def _iso_date(var: str, raw: str) -> None:
    try:
        date.fromisoformat(raw.strip())
    except ValueError:
        raise SettingsError(f"{var}={raw!r}: expected a date as YYYY-MM-DD") from None


def _cron(var: str, raw: str) -> None:
    fields = raw.split()
    if len(fields) != 5 or not all(_CRON_FIELD.match(f) for f in fields):
        raise SettingsError(f"{var}={raw!r}: expected a five-field cron string such as '30 3 * * *'")


def _url(var: str, raw: str) -> None:
    if not re.match(r"^https?://[^\s/]+", raw.strip()):
        raise SettingsError(f"{var}={raw!r}: expected an http:// or https:// URL")


def _embedder(environ: Mapping[str, str]) -> None:
    from memory_pipeline.embedding import spec

    if spec.ENV_MODEL not in environ and spec.ENV_PLUGIN not in environ:
        return
    model, imported = spec.parse_model_setting(environ.get(spec.ENV_MODEL, spec.MINILM))
    spec.check_setting(model, imported, environ.get(spec.ENV_PLUGIN, "").strip())


# variable → its check; a variable that is unset (or empty, where the code reads empty as unset) is not checked
CHECKS: dict[str, Check] = {
    RETENTION_ENV: _number(int, 0, what=" (days: journals older than this move to archive/journal/)"),
    "MEMORY_PIPELINE_JOURNAL_TZ": _timezone,
    "NIGHTLY_CONSOLIDATION_TZ": _timezone,
    "MEMORY_PIPELINE_JOURNAL_START": _iso_date,
    "NIGHTLY_CONSOLIDATION_CRON": _cron,
    "MEMORY_PIPELINE_FLEET_CRON": _cron,
    "MEMORY_PIPELINE_LLM": _choice("auto", "offline", "anthropic", "batch", lower=False),
    "MEMORY_PIPELINE_PROGRESS": _choice("auto", "bar", "log"),
    "MEMORY_PIPELINE_SECRETS": _choice("redact", "keep"),
    "MEMORY_PIPELINE_CLUSTER_BUILD": _choice("incremental", "full"),
    "MEMORY_PIPELINE_CLUSTER_SCREEN": _choice("auto", "off", "0", "false", "no", "on", "1", "true", "yes"),
    "MEMORY_PIPELINE_CELERY_MODE": _choice("steps", "runs", lower=False),
    "MEMORY_PIPELINE_MAX_CONCURRENT_RUNS": _number(int, 1),
    "MEMORY_PIPELINE_FLEET_MAX_COST_USD": _number(float, 0, what=" (US dollars)"),
    "MEMORY_PIPELINE_DECAY_RATE": _number(float, 0, 1),
    "MEMORY_PIPELINE_DECAY_FLOOR": _number(float, 0, 1),
    "MEMORY_PIPELINE_DECAY_MIN_AGE_DAYS": _number(int, 0),
    "MEMORY_PIPELINE_PLUGIN_BATCH": _number(int, 1),
    "MEMORY_PIPELINE_PLUGIN_TIMEOUT": _number(float, 0.001, what=" (seconds)"),
    "MEMORY_PIPELINE_WEBHOOK_URL": _url,
    "MEMORY_PIPELINE_SEARCH_UPDATE_SECONDS": _number(float, 0, what=" (seconds)"),
    "MEMORY_PIPELINE_HTTP_HEADER_TIMEOUT": _number(float, 0.001, what=" (seconds)"),
    "MEMORY_PIPELINE_HTTP_BODY_TIMEOUT": _number(float, 0.001, what=" (seconds)"),
    "MEMORY_PIPELINE_TRANSCRIPT_QUIET_MINUTES": _number(float, 0, what=" (minutes)"),
}


def check_environment(environ: Mapping[str, str] | None = None) -> None:
    """Raise a SettingsError naming the first malformed setting; return quietly when all are well-formed."""
    env = os.environ if environ is None else environ
    env_overrides(env)  # the engine's COMPRESSION_* and MEMORY_PIPELINE_* numbers and choices
    pool_wait_seconds(dict(env))
    for var, check in CHECKS.items():
        raw = env.get(var)
        if raw is not None and raw.strip():
            check(var, raw)
    _embedder(env)


def journal_retention_days(environ: Mapping[str, str] | None = None) -> int:
    """MEMORY_PIPELINE_JOURNAL_RETENTION_DAYS (default 90), a whole number ≥ 0, or a SettingsError naming it."""
    env = os.environ if environ is None else environ
    raw = (env.get(RETENTION_ENV) or "").strip()
    if not raw:
        return RETENTION_DEFAULT
    CHECKS[RETENTION_ENV](RETENTION_ENV, raw)
    return int(raw)
