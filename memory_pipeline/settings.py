"""Engine constants from the seed's environment variable names (seed 000 §7.1), validated."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

# The checkout (editable install): dagster.yaml, workspace.yaml and the committed sample data live here.
REPO_ROOT = Path(__file__).resolve().parent.parent
PACKAGE_ROOT = REPO_ROOT
POOL_WAIT_ENV, POOL_WAIT_DEFAULT_MIN = "MEMORY_PIPELINE_POOL_WAIT_MINUTES", 30.0
VERBOSE_ENV = "MEMORY_PIPELINE_VERBOSE"  # set by the CLI's --verbose, so run workers see it too


class SettingsError(ValueError):
    """A configuration value is malformed; the message names the variable."""


# field name → (env var, type). The seed names the minimum-ratio floor COMPRESSION_MAX_RATIO; we keep it.
ENV_NAMES: dict[str, tuple[str, type]] = {
    "similarity_threshold": ("COMPRESSION_SIMILARITY_THRESHOLD", float),
    "linkage": ("COMPRESSION_LINKAGE", str),  # single | complete | average
    "max_cluster_members": ("COMPRESSION_MAX_CLUSTER_MEMBERS", int),  # 0 = no cap (seed 004 §3.1)
    "max_cluster_tokens": ("COMPRESSION_MAX_CLUSTER_TOKENS", int),
    "linkage_max_component": ("COMPRESSION_LINKAGE_MAX_COMPONENT", int),
    "min_cluster_size": ("COMPRESSION_MIN_CLUSTER_SIZE", int),
    "freshness_hours": ("COMPRESSION_FRESHNESS_HOURS", float),
    "critical_floor": ("COMPRESSION_CRITICAL_FLOOR", float),
    "rate_limit_per_min": ("COMPRESSION_RATE_LIMIT_PER_MIN", int),
    "min_compression_ratio": ("COMPRESSION_MAX_RATIO", float),
    "fingerprint_ttl_days": ("COMPRESSION_FINGERPRINT_TTL_DAYS", float),
    "max_abstraction_tokens": ("COMPRESSION_MAX_ABSTRACTION_TOKENS", int),
    "max_cost_usd": ("COMPRESSION_MAX_COST_USD", float),
    "lease_ttl_hours": ("MEMORY_PIPELINE_LEASE_TTL_HOURS", float),
    "lease_heartbeat_seconds": ("MEMORY_PIPELINE_LEASE_HEARTBEAT_SECONDS", float),
    "backups_keep": ("MEMORY_PIPELINE_BACKUPS_KEEP", int),
    # graph-preserving compaction (seed 004)
    "cluster_source": ("COMPRESSION_CLUSTER_SOURCE", str),
    "key_window": ("COMPRESSION_KEY_WINDOW", str),
    "key_max_members": ("COMPRESSION_KEY_MAX_MEMBERS", int),
    "key_max_tokens": ("COMPRESSION_KEY_MAX_TOKENS", int),
    "usage_decay": ("COMPRESSION_USAGE_DECAY", float),
    "rollup_max_keys": ("COMPRESSION_ROLLUP_MAX_KEYS", int),
    "hub_policy": ("COMPRESSION_HUB_POLICY", str),
    "external_indexes": ("MEMORY_PIPELINE_EXTERNAL_INDEXES", str),
    "outbox_critical": ("MEMORY_PIPELINE_OUTBOX_CRITICAL", int),
    "max_superseded_share": ("MEMORY_PIPELINE_MAX_SUPERSEDED_SHARE", float),
    "retention_floor": ("MEMORY_PIPELINE_RETENTION_FLOOR", float),  # knowledge-retention probes
    "retention_probes": ("MEMORY_PIPELINE_RETENTION_PROBES", int),
    "retention_budget": ("MEMORY_PIPELINE_RETENTION_BUDGET", int),
    "retention_seconds": ("MEMORY_PIPELINE_RETENTION_SECONDS", float),
    "retention_share": ("MEMORY_PIPELINE_RETENTION_SHARE", float),
    "grade_floor": ("MEMORY_PIPELINE_GRADE_FLOOR", float),  # the night's grade of what it wrote
}

# Text settings and their allowed values (None: free text).
CHOICES: dict[str, tuple[str, ...] | None] = {
    "linkage": ("single", "complete", "average"),
    "cluster_source": ("embedding", "keys", "both"),
    "key_window": ("day", "week"),
    "hub_policy": ("summarise", "pin"),
    "external_indexes": None,
}

# Lower bounds; the critical floor's comes from seed §10: below 2.0 it compresses what is really critical.
_MINIMA: dict[str, float] = {
    "similarity_threshold": 1e-9,
    "min_cluster_size": 2,
    "max_cluster_members": 0,
    "max_cluster_tokens": 0,
    "linkage_max_component": 2,
    "freshness_hours": 0,
    "critical_floor": 2.0,
    "rate_limit_per_min": 1,
    "min_compression_ratio": 1.0,
    "fingerprint_ttl_days": 0,
    "max_abstraction_tokens": 1,
    "max_cost_usd": 0,
    "lease_ttl_hours": 0,
    "lease_heartbeat_seconds": 1,  # a beat a second at most: the file may sit on a shared network file system
    "backups_keep": 1,
    "key_max_members": 2,
    "key_max_tokens": 1,
    "usage_decay": 1e-9,
    "rollup_max_keys": 1,
    "outbox_critical": 1,
    "max_superseded_share": 0,
    "retention_floor": 0,
    "retention_probes": 0,
    "retention_budget": 1,
    "retention_seconds": 0,
    "retention_share": 0,
    "grade_floor": 0,
}


_SHARES = ("similarity_threshold", "usage_decay", "max_superseded_share", "retention_floor", "retention_share",
           "grade_floor")


def env_overrides(environ: Mapping[str, str] | None = None) -> dict[str, int | float | str]:
    """The engine settings that the environment sets, parsed and checked."""
    env = os.environ if environ is None else environ
    values: dict[str, int | float | str] = {}
    for field_name, (var, kind) in ENV_NAMES.items():
        if var not in env:
            continue
        raw = env[var]
        if kind is str:
            allowed = CHOICES.get(field_name)
            if allowed is not None and raw not in allowed:
                raise SettingsError(f"{var}={raw!r}: expected one of {', '.join(allowed)}")
            values[field_name] = raw
            continue
        try:
            value = kind(raw)
        except ValueError:
            raise SettingsError(f"{var}={raw!r}: expected {kind.__name__}") from None
        if not math.isfinite(value):
            raise SettingsError(f"{var}={raw!r}: must be finite")
        if value < _MINIMA[field_name]:
            raise SettingsError(f"{var}={raw!r}: must be ≥ {_MINIMA[field_name]:g}")
        if field_name in _SHARES and value > 1:
            raise SettingsError(f"{var}={raw!r}: must be ≤ 1")
        values[field_name] = value
    return values


def default_home(environ: Mapping[str, str] | None = None, package_root: Path = PACKAGE_ROOT) -> Path:
    """Where the workspace lives when MEMORY_PIPELINE_HOME is unset, the same from any current directory:
    `<checkout>/data/workspace` when the package runs from a source checkout (an editable install, the demo),
    else `$XDG_DATA_HOME/memory-pipeline/workspace` (default `~/.local/share/memory-pipeline/workspace`)."""
    env = os.environ if environ is None else environ
    if (package_root / "pyproject.toml").is_file() and (package_root / "memory_pipeline").is_dir():
        return package_root / "data" / "workspace"
    data = Path(env.get("XDG_DATA_HOME") or Path(env.get("HOME") or Path.home()) / ".local" / "share")
    return data / "memory-pipeline" / "workspace"


def workspace_home(environ: Mapping[str, str] | None = None) -> Path:
    """The workspace folder: MEMORY_PIPELINE_HOME (relative: to the current directory), else `default_home`."""
    env = os.environ if environ is None else environ
    return Path(env.get("MEMORY_PIPELINE_HOME") or default_home(env)).expanduser().resolve()


def pool_wait_seconds(environ: dict[str, str] | None = None) -> float:
    """How long a run waits for another live run's store slot before it gives up (minutes in the variable)."""
    env = os.environ if environ is None else environ
    raw = env.get(POOL_WAIT_ENV, "").strip()
    if not raw:
        return POOL_WAIT_DEFAULT_MIN * 60
    try:
        value = float(raw)
    except ValueError:
        raise SettingsError(f"{POOL_WAIT_ENV}={raw!r}: expected a number of minutes") from None
    if not math.isfinite(value) or value < 0:
        raise SettingsError(f"{POOL_WAIT_ENV}={raw!r}: must be a finite number ≥ 0")
    return value * 60


def verbose(environ: dict[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    return env.get(VERBOSE_ENV, "").strip().lower() in ("1", "true", "yes")


def package_version() -> str:
    """This package's installed version (`memory-pipeline --version`, the MCP server's `serverInfo.version`)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("memory_pipeline")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "0+unknown"


def console_loggers(quiet_level: str = "INFO") -> dict[str, dict]:
    """Run config for Dagster's console logger: `quiet_level` normally, DEBUG with the CLI's --verbose."""
    return {"console": {"config": {"log_level": "DEBUG" if verbose() else quiet_level}}}


AS_OF_HELP = "expected an ISO-8601 timestamp such as 2026-11-01T03:30:00Z (or a date, 2026-11-01; no offset = UTC)"


def parse_as_of(value: str | datetime | None, name: str = "as_of") -> datetime | None:
    """The one reading of an `as_of` for every reader (search, context, recall; CLI, MCP, gateway), as naive UTC:
    a day reads as it ended ("2026-09-20" → 23:59:59), a time as given (an offset converted); None for none. An
    empty value is refused rather than read as "now": whoever sent it meant some moment. The SettingsError (a
    ValueError) quotes what was given and names the accepted forms."""
    if value is None:
        return None
    if isinstance(value, datetime):
        when = value
    else:
        text = value.strip()
        if not text:
            raise SettingsError(f"{name} is empty: leave it out to read what holds now, or give a moment: "
                                f"{AS_OF_HELP.removeprefix('expected ')}")  # fmt: skip
        text = text.replace("Z", "+00:00").replace("z", "+00:00")
        if " " in text and "T" not in text:
            text = text.replace(" ", "T", 1)
        try:
            when = datetime.fromisoformat(f"{text}T23:59:59" if len(text) == 10 else text)
        except ValueError:
            raise SettingsError(f"{name} {value!r}: {AS_OF_HELP}") from None
    return when.astimezone(UTC).replace(tzinfo=None) if when.tzinfo else when


def check_as_of(value: str, name: str = "--as-of") -> str:
    """`value` unchanged if it is empty or an ISO-8601 timestamp; else a SettingsError saying the format."""
    text = value.strip().replace("Z", "+00:00")
    if " " in text and "T" not in text:
        text = text.replace(" ", "T", 1)
    if value:
        try:
            datetime.fromisoformat(text)  # the same rule as store.records.parse_timestamp
        except ValueError:
            raise SettingsError(f"{name} {value!r}: {AS_OF_HELP}") from None
    return value
