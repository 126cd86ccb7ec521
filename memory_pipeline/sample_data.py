"""Deterministic sample memory store of the agent "Helios".

Why: the demo, the tests and the benchmarks need a store that looks like what a
working agent accumulates after six weeks (trades, ops incidents, code reviews,
people, research, self-reflection) and that exercises every rule of the
abstraction engine, without a network, an API key or a model download.

The sample has three kinds of memories:

* paraphrase families: the same observation or causal lesson written again on
  different days in different words. The agent reuses its own vocabulary, so
  members clear cosine 0.82 with all-MiniLM-L6-v2 and form the clusters the
  nightly engine compresses;
* diverse singletons built from many frames and large slot pools, which should
  not cluster;
* special cases: critical (importance ≥ 2.5), pinned, locked and fresh (< 24 h)
  memories, some inside families, and one earlier compression run (an active
  summary whose archived sources carry the lineage).

Everything is drawn from ``random.Random(seed)`` and timestamps are relative to
``now``, so the same ``(now, seed)`` gives byte-identical output.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

__all__ = [
    "DEFAULT_SEED",
    "generate_sample",
    "generate_sample_with_families",
    "write_sample_jsonl",
]

DEFAULT_SEED = 20261122

# Oldest day a memory may be written on; the sample spans at least this many days.
_SPAN_DAYS = 44
_CRITICAL = 2.5


@dataclass(frozen=True)
class _Family:
    """One recurring observation: members are ``head + " " + tail`` combinations."""

    key: str
    categories: tuple[str, ...]
    tags: tuple[str, ...]
    nexus: tuple[str, ...]
    heads: tuple[str, ...]
    tails: tuple[str, ...]
    causal: bool = False


@dataclass(frozen=True)
class _Frame:
    """A singleton template; ``{slot}`` placeholders are filled from the pools."""

    text: str
    tags: tuple[str, ...] = ()
    nexus: tuple[str, ...] = ()


@dataclass
class _Draft:
    template: str
    categories: list[str]
    tags: list[str]
    nexus: list[str]
    importance: float
    source: str
    age: timedelta = timedelta(0)
    family: str | None = None
    pinned: bool = False
    locked: bool = False
    kind: str = "observation"
    lifecycle: str = "active"
    role: str = ""  # "", "archived-source" or "summary"
    special: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


def _f(
    key: str,
    cats: tuple[str, ...],
    tags: tuple[str, ...],
    nexus: tuple[str, ...],
    heads: tuple[str, ...],
    tails: tuple[str, ...],
    causal: bool = False,
) -> _Family:
    return _Family(key, cats, tags, nexus, heads, tails, causal)


# ---------------------------------------------------------------------------
# Paraphrase families
# ---------------------------------------------------------------------------

_FAMILIES: tuple[_Family, ...] = (
    # ----------------------------------------------------------------- trading
    _f(
        "trading.whale-accumulation",
        ("trading",),
        ("btc", "on-chain", "whales"),
        ("ticker:BTC", "signal:whale-flows"),
        (
            "Whale wallets holding 1k+ BTC accumulated about {n1}k BTC over {n1} days while price chopped sideways.",
            "On-chain check: whale wallets kept accumulating BTC this week, roughly {n1}k BTC of net inflow to large holders.",
            "Glassnode shows the 1k-10k BTC whale cohort accumulating again, balance up steadily since {dow}.",
            "BTC whale wallets were quietly accumulating on the dip; outflows from exchanges to whale cold storage spiked.",
            "Noticed sustained BTC whale accumulation: large-holder wallet balances up {n1} days in a row.",
        ),
        (
            "BTC price rose {pct}% over the next 48h, same as the last time whales accumulated.",
            "Price followed about two days later; whale accumulation keeps preceding BTC rallies.",
            "Again the whale accumulation led price: BTC broke out {pct}% within two days.",
            "Pattern holds: when whale wallets accumulate BTC, a price rise tends to follow within 1-3 days.",
        ),
        causal=True,
    ),
    _f(
        "trading.funding-squeeze",
        ("trading",),
        ("perps", "funding", "liquidations"),
        ("signal:funding-rate",),
        (
            "Perp funding on {ticker} hit +0.0{n1}% per 8h, longs extremely crowded.",
            "Funding rates went very positive across the majors, crowded longs paying heavily to stay in their perps.",
            "{ticker} perp funding stayed deeply positive while open interest climbed to a local high.",
            "Overheated funding again: {ticker} perp longs paying more than 0.05% every 8 hours.",
        ),
        (
            "A long squeeze followed within a day; price dumped {pct}% and liquidated the crowded longs.",
            "As before, the crowded longs got flushed: a {pct}% drop and a liquidation cascade.",
            "The long squeeze came the next morning and funding reset to neutral after the liquidations.",
            "Extremely positive funding keeps preceding long squeezes; don't add longs into crowded funding.",
        ),
        causal=True,
    ),
    _f(
        "trading.illiquid-slippage",
        ("trading",),
        ("execution", "slippage", "alts"),
        ("topic:execution",),
        (
            "Market buy on the thin {alt}/USDT order book slipped {pct}% against the quote.",
            "Lost about {pct}% to slippage with a market order on the illiquid {alt} pair.",
            "The {alt} order book was paper-thin; my market order walked {n1} price levels and slipped badly.",
            "Slippage on illiquid altcoin pairs is brutal: a market order on {alt} filled {pct}% worse than mid.",
        ),
        (
            "On illiquid alts use post-only limit orders, never market orders.",
            "Rule for thin order books: split into limit orders and accept a slower fill instead of slippage.",
            "Switching to limit orders for any altcoin outside the top 20 by volume; market orders cost too much slippage.",
        ),
    ),
    _f(
        "trading.asia-fakeout",
        ("trading",),
        ("breakout", "fakeout", "volume"),
        ("pattern:low-volume-breakout",),
        (
            "Took a breakout long on {ticker} during the Asian session on thin volume.",
            "Chased a {ticker} range breakout around 02:00 UTC in the Asian session when volume was low.",
            "Entered a {ticker} breakout in the quiet Asian session hours without volume confirmation.",
            "Bought the overnight break of the {ticker} range during the Asian session on tiny volume.",
        ),
        (
            "It was a fakeout: price fell back into the range and stopped me out.",
            "Classic low-volume fake breakout, reversed within an hour and hit my stop for -{pct}%.",
            "Low-volume breakouts in the Asian session keep failing; wait for London or New York volume to confirm.",
            "Another failed low-volume breakout; need volume confirmation before entering.",
        ),
        causal=True,
    ),
    _f(
        "trading.cpi-whipsaw",
        ("trading",),
        ("macro", "cpi", "volatility"),
        ("event:cpi",),
        (
            "The CPI print at 13:30 UTC whipsawed {ticker} {pct}% in both directions within minutes.",
            "US CPI release day: a violent two-sided move tagged both my stop and my target levels.",
            "CPI day again: the inflation number hit and {ticker} swung wildly in the first ten minutes.",
            "Held an open {ticker} position into the CPI release and got whipsawed out at the worst tick.",
        ),
        (
            "Don't open new positions in the 30 minutes before a CPI release; flatten or widen stops.",
            "On CPI and FOMC days stay flat into the release and trade the second move.",
            "CPI releases make tight stops useless; reduce size before the print.",
            "Rule: no fresh entries ahead of CPI, wait for the whipsaw to settle.",
        ),
        causal=True,
    ),
    _f(
        "trading.sol-stop-wicks",
        ("trading",),
        ("sol", "stops", "risk"),
        ("ticker:SOL",),
        (
            "SOL long stopped out by a wick {pct}% below entry, then SOL ripped up without me.",
            "Again my tight stop on SOL got wicked out right before the move.",
            "Placed the SOL stop just under the obvious level; a wick swept it within an hour.",
            "SOL wicked through my tight stop by a few cents and immediately reversed higher.",
        ),
        (
            "SOL's intraday volatility needs wider stops (about 1.5x ATR) and smaller size.",
            "Tight stops at obvious levels on SOL get swept; place them beyond the liquidity.",
            "Use ATR-based stops on SOL, not tight round-number stops.",
        ),
    ),
    _f(
        "trading.binance-429",
        ("trading", "ops"),
        ("binance", "rate-limit", "trade-executor"),
        ("service:trade-executor", "venue:binance"),
        (
            "Binance API returned HTTP 429 Too Many Requests during the {hhmm} UTC volatility spike; {n1} orders failed.",
            "trade-executor got rate limited by the Binance API (HTTP 429) right when price moved fast.",
            "Order placement failed with Binance 429 rate-limit errors during a volatile candle.",
            "Hit the Binance API request weight limit (429s) while polling order status in a fast market.",
        ),
        (
            "Polling order status eats the Binance rate limit; move it to the websocket user stream.",
            "Need a token bucket in trade-executor so order placement never hits the Binance rate limit.",
            "The Binance rate limit bites exactly when it matters; reserve request weight for placing orders.",
        ),
    ),
    _f(
        "trading.gas-rebalance",
        ("trading",),
        ("defi", "gas", "ethereum"),
        ("topic:defi",),
        (
            "Ethereum gas hit {gwei} gwei; the planned small DeFi rebalance would have cost more in gas than it earned.",
            "Ethereum gas spiked to {gwei} gwei and made my small LP rebalance unprofitable.",
            "Rebalancing the small Uniswap LP position on Ethereum mainnet costs more gas than the yield it captures.",
            "Paid ${n2} in Ethereum gas to rebalance a tiny DeFi position; gas ate a month of yield.",
        ),
        (
            "Only rebalance small DeFi positions on L2s (Arbitrum, Base) or when mainnet gas is under 15 gwei.",
            "Small DeFi rebalances belong on an L2; Ethereum mainnet gas kills them.",
            "Add a gas ceiling to the rebalance script so small rebalances skip when gas is high.",
        ),
    ),
    _f(
        "trading.position-sizing",
        ("trading", "lessons"),
        ("risk", "position-size"),
        ("rule:risk-per-trade",),
        (
            "Risked {pct}% of the account on a single {ticker} trade, well above my 2% risk-per-trade rule.",
            "Oversized the {ticker} position, about {n1}x my normal risk per trade and above the 2% rule.",
            "Broke the 2% risk-per-trade rule on a high-conviction {ticker} setup.",
            "Sized up the {ticker} trade because I felt sure; risk per trade was well over 2% of equity.",
        ),
        (
            "The stop hit and the oversized loss erased a week of gains; keep risk per trade at 2% or less.",
            "Lost {pct}% of equity on one trade; oversizing turns normal losses into drawdowns.",
            "It went against me and the loss was disproportionate; conviction doesn't justify breaking the 2% rule.",
            "Result: biggest drawdown of the month. The 2% position sizing rule exists exactly for this.",
        ),
        causal=True,
    ),
    _f(
        "trading.cme-gap",
        ("trading",),
        ("btc", "cme", "gap"),
        ("ticker:BTC", "venue:cme"),
        (
            "BTC CME futures opened Sunday evening with a gap at {btc}.",
            "The weekend move left another unfilled BTC CME gap below price.",
            "Noticed a BTC CME gap between Friday's close and Sunday's open on the futures chart.",
            "Thin weekend liquidity moved spot BTC and left a gap on the CME futures chart.",
        ),
        (
            "Price came back to fill the CME gap by Tuesday, like most CME gaps do.",
            "The CME gap filled within two days; CME gap fills are a decent mean-reversion target.",
            "CME gaps tend to fill early in the week; don't chase the weekend move.",
        ),
    ),
    _f(
        "trading.revenge-trading",
        ("trading", "lessons"),
        ("psychology", "tilt"),
        ("pattern:revenge-trading",),
        (
            "After the {ticker} loss I immediately re-entered with bigger size to win it back.",
            "Revenge trade: opened a new {ticker} position minutes after getting stopped out, no setup.",
            "Took an impulsive revenge trade right after a loss, trying to make it back quickly.",
            "Tilted after the stop-out and revenge traded {ticker} without a plan.",
        ),
        (
            "Lost again, double the first loss; enforce a one-hour cooldown after any stop-out.",
            "It compounded the loss. Revenge trading never works for me.",
            "The second loss was worse than the first; after a loss, step away before the next trade.",
        ),
        causal=True,
    ),
    _f(
        "trading.kraken-withdrawal",
        ("trading",),
        ("kraken", "withdrawal", "transfers"),
        ("venue:kraken",),
        (
            "Kraken withdrawal of {ticker} sat in 'pending' for {n1} hours.",
            "Kraken withdrawals delayed again; the {ticker} withdrawal took {n1}h to go through.",
            "Withdrawing funds from Kraken took hours; support said the hot wallet was being refilled.",
            "The Kraken {ticker} withdrawal was stuck in processing most of the afternoon.",
        ),
        (
            "Don't rely on same-day Kraken withdrawals for time-sensitive moves; keep a buffer elsewhere.",
            "Plan Kraken withdrawals a day ahead when funds need to move.",
            "Keep working capital on the exchange I trade on, not waiting on a Kraken withdrawal.",
        ),
    ),
    # --------------------------------------------------------------------- ops
    _f(
        "ops.friday-deploy-no-canary",
        ("ops", "lessons"),
        ("deploy", "canary", "outage"),
        ("practice:canary-deploys",),
        (
            "Deployed {service} on Friday evening straight to 100% of hosts without a canary.",
            "Pushed the {service} release to all hosts on a Friday, skipping the canary stage.",
            "The Friday deploy of {service} went to every node at once, no canary, no staged rollout.",
            "Shipped {service} to production late on Friday without a canary deploy first.",
            "Rolled out {service} fleet-wide on Friday afternoon and skipped the canary to save time.",
        ),
        (
            "It caused an outage over the weekend: {n1}h of 5xx errors before the rollback.",
            "The deploy broke production within the hour and the rollback took {n2} minutes with nobody around.",
            "Result: an outage, error rate at {n2}%, and a Saturday rollback.",
            "It caused a weekend outage; no more Friday deploys without a canary.",
            "The outage that followed was entirely avoidable with a 5% canary deploy.",
        ),
        causal=True,
    ),
    _f(
        "ops.db03-wal",
        ("ops",),
        ("postgres", "disk", "db-03"),
        ("host:db-03", "service:postgres"),
        (
            "db-03 disk at {n2}%: the Postgres pg_wal directory grew to {n3} GB.",
            "Disk on db-03 filling up again because Postgres WAL segments aren't being recycled.",
            "Postgres WAL piling up on db-03; the replication slot of the old replica is holding it back.",
            "Alert: db-03 /var/lib/postgresql almost full and the Postgres WAL is the culprit.",
        ),
        (
            "Root cause is the stale replication slot 'replica_old' blocking WAL cleanup on db-03.",
            "Dropping the unused replication slot shrinks the WAL on db-03 back to a few GB.",
            "Monitor pg_replication_slots on db-03 for inactive slots retaining WAL.",
            "Inactive replication slots keep Postgres WAL forever; alert on retained WAL size.",
        ),
    ),
    _f(
        "ops.backup-dedupe-lock",
        ("ops",),
        ("cron", "brain.db", "backup"),
        ("db:brain.db", "job:cortex_dedupe"),
        (
            "The 03:00 backup job and cortex_dedupe ran at the same time and fought over the brain.db lock.",
            "brain.db lock contention at 03:00: the nightly backup and cortex_dedupe overlapped again.",
            "The nightly brain.db backup collided with the 03:00 cortex_dedupe cron; dedupe failed on the lock.",
            "Lock contention on brain.db at 3 AM: the backup snapshot holds the lock while cortex_dedupe waits.",
        ),
        (
            "Move the brain.db backup to 02:30 so it finishes before cortex_dedupe starts.",
            "Nightly cron jobs touching brain.db must be serialised: backup, then dedupe, then compression.",
            "Wrap the backup and cortex_dedupe in flock so they queue on brain.db instead of colliding.",
        ),
    ),
    _f(
        "ops.certbot-dns",
        ("ops",),
        ("tls", "certbot", "dns"),
        ("host:api-gw-1", "domain:api.helios.dev"),
        (
            "certbot renewal for api.helios.dev failed: the DNS-01 challenge TXT record was not found.",
            "TLS cert on api-gw-1 expires in {n1} days and certbot renewal keeps failing on the DNS-01 challenge.",
            "Certbot renewal error on api.helios.dev: DNS problem, NXDOMAIN looking up TXT for _acme-challenge.",
            "The Let's Encrypt certbot renewal for api.helios.dev broke again on the DNS challenge.",
        ),
        (
            "The Cloudflare API token used by certbot for the DNS challenge had expired; rotating it fixes renewal.",
            "Certbot renewals depend on the DNS API token; track that token's expiry alongside the cert.",
            "Re-issued the DNS API token for certbot and renewal succeeded; alert on certs under 14 days.",
        ),
    ),
    _f(
        "ops.ingest-oom",
        ("ops", "coding"),
        ("oom", "memory-leak", "ingest-worker"),
        ("service:ingest-worker", "host:ingest-02"),
        (
            "ingest-worker on ingest-02 was OOM-killed again after about {n2} hours of uptime.",
            "The kernel OOM killer took out ingest-worker on ingest-02; its RSS had climbed steadily to {gb} GB.",
            "ingest-worker memory grows linearly until the OOM killer ends it, roughly every day and a half.",
            "Another OOM kill of ingest-worker on ingest-02; the memory leak is still there.",
        ),
        (
            "The ingest-worker memory leak looks like the unbounded dedupe cache in the parser that never evicts.",
            "Heap profile of ingest-worker points at the dedupe dict growing forever; it needs an LRU bound.",
            "Until the ingest-worker leak is fixed, a nightly restart keeps it away from the OOM killer.",
        ),
    ),
    _f(
        "ops.redis-eviction",
        ("ops",),
        ("redis", "cache", "latency"),
        ("host:cache-02", "service:redis"),
        (
            "Redis on cache-02 hit maxmemory and started evicting keys; API p95 latency jumped to {ms} ms.",
            "Redis evictions spiked on cache-02 and the API latency followed.",
            "Redis cache hit rate on cache-02 collapsed to {n2}% once it reached maxmemory and evicted keys.",
            "Redis on cache-02 is full: evicted_keys climbing and requests falling through to Postgres.",
        ),
        (
            "Redis keys without a TTL fill cache-02; set TTLs on the session keys.",
            "Raised Redis maxmemory on cache-02 and switched to allkeys-lru; latency recovered.",
            "Everything written to Redis needs a TTL or cache-02 fills up and evicts again.",
        ),
    ),
    _f(
        "ops.ci-docker-cache",
        ("ops", "coding"),
        ("ci", "docker", "build-cache"),
        ("topic:ci",),
        (
            "The CI Docker build took {n2} minutes again; every layer rebuilt from scratch without cache.",
            "Docker image builds in CI are slow because the layer cache isn't used.",
            "The GitHub Actions Docker build ignores the layer cache, so pip install reruns on every push.",
            "Our CI pipeline spends most of its time rebuilding Docker layers and re-downloading dependencies.",
        ),
        (
            "Enable the buildx layer cache (type=gha) and copy requirements before the source so the Docker pip layer stays cached.",
            "Reordering the Dockerfile so dependency layers cache took the CI build from 14 to 3 minutes.",
            "Docker layer order matters for the CI cache: dependencies first, code last.",
        ),
    ),
    _f(
        "ops.pg-connections",
        ("ops",),
        ("postgres", "connections", "pgbouncer"),
        ("host:db-01", "service:cortex-api"),
        (
            "cortex-api threw 'remaining connection slots are reserved for superuser' from Postgres under load.",
            "Postgres on db-01 ran out of connections during the traffic spike with {n3} clients open.",
            "Postgres connection exhaustion on db-01: every cortex-api worker opened its own connection pool.",
            "Postgres FATAL: too many connections for role 'cortex' when the batch job and cortex-api ran together.",
        ),
        (
            "Put pgbouncer in transaction mode in front of Postgres to stop connection exhaustion.",
            "Worker count times pool size exceeded Postgres max_connections; cap the connection pools.",
            "Postgres connection math: workers x pool_size must stay below max_connections.",
        ),
    ),
    _f(
        "ops.dns-ttl-failover",
        ("ops",),
        ("dns", "failover"),
        ("domain:api.helios.dev",),
        (
            "Failover to the standby took {n2} minutes because the DNS TTL on api.helios.dev was 3600 seconds.",
            "Clients kept hitting the dead primary for an hour after the failover because of the long DNS TTL.",
            "A one-hour DNS TTL made the api.helios.dev failover useless in practice.",
        ),
        (
            "Lower the DNS TTL to 60 seconds on every record that takes part in failover.",
            "DNS failover records need short TTLs; api.helios.dev is now at 60 seconds.",
            "Long DNS TTLs defeat DNS-based failover.",
        ),
    ),
    _f(
        "ops.alert-fatigue",
        ("ops", "lessons"),
        ("alerting", "alert-fatigue"),
        ("practice:alerting",),
        (
            "I've been acking the noisy disk-usage alerts on autopilot.",
            "Too many noisy alerts: I ignored the web-04 disk alert like the dozens of false alarms before it.",
            "Alert fatigue: the flapping disk alerts trained me to dismiss everything in #alerts.",
            "Muted the noisy #alerts channel in my head because most of its alerts are false positives.",
        ),
        (
            "Because of the alert fatigue I missed a real incident: web-04 ran out of disk and nginx stopped logging.",
            "That's how a real outage slipped past the noisy alerts for {n1} hours.",
            "Noisy alerts hide real ones; tune the thresholds or delete the alert.",
            "Fix the alert noise, otherwise real problems get ignored along with the false alarms.",
        ),
        causal=True,
    ),
    _f(
        "ops.ntp-drift-jwt",
        ("ops", "security"),
        ("ntp", "jwt", "worker-07"),
        ("host:worker-07",),
        (
            "worker-07's clock drifted {n1} seconds ahead, so JWTs it issued were rejected as 'not yet valid'.",
            "Auth failures only from worker-07; its clock had drifted because chrony wasn't running.",
            "JWT validation errors 'iat is in the future' traced to clock drift on worker-07.",
        ),
        (
            "Enabled chrony on worker-07 and added a clock-skew check to the host health probe.",
            "Allow a small leeway in JWT validation and monitor NTP sync on every worker.",
            "Clock drift breaks JWT auth in confusing ways; check time sync on the host first.",
        ),
    ),
    _f(
        "ops.migration-no-backup",
        ("ops", "lessons"),
        ("postgres", "migrations", "backup"),
        ("host:db-01", "practice:backups"),
        (
            "Ran the {n1}-step schema migration on db-01 without taking a backup snapshot first.",
            "Applied a destructive schema migration in production without a fresh backup.",
            "Skipped the pre-migration backup on db-01 because the schema change looked trivial.",
        ),
        (
            "The migration dropped a column the report job still used, and restoring from an old dump took hours.",
            "Lost {n1} hours of writes when I had to roll the migration back from yesterday's dump.",
            "Always snapshot the database before a migration; the one time I skipped the backup, I needed it.",
        ),
        causal=True,
    ),
    _f(
        "ops.systemd-timer-enable",
        ("ops",),
        ("systemd", "heartbeat", "reboot"),
        ("job:heartbeat",),
        (
            "Heartbeat stopped after the reboot of {host}: the systemd timer was started but never enabled.",
            "After rebooting {host} the heartbeat timer never came back; systemd had it started, not enabled.",
            "No heartbeat for {n1} hours after a reboot of {host}; the systemd timer didn't survive it.",
        ),
        (
            "Use 'systemctl enable --now' for heartbeat timers, not just start.",
            "Enabled the heartbeat systemd timer and added an alert for missing heartbeats.",
            "Reboot checks should confirm every systemd timer, heartbeat included, comes back.",
        ),
    ),
    # ------------------------------------------------------------------ coding
    _f(
        "coding.flaky-midnight-test",
        ("coding",),
        ("tests", "flaky", "timezone"),
        ("test:test_scheduler_timezone",),
        (
            "test_scheduler_timezone failed again in CI; it only fails when run between 23:00 and 01:00 UTC.",
            "Flaky test_scheduler_timezone: passes locally, fails in the nightly CI run around midnight UTC.",
            "test_scheduler_timezone is flaky because it depends on the wall-clock time near midnight UTC.",
            "Another red nightly build from test_scheduler_timezone, the same midnight UTC boundary issue.",
        ),
        (
            "test_scheduler_timezone calls datetime.now() directly; freeze time in the test.",
            "The scheduler test computes 'today' twice across the midnight boundary; inject a clock.",
            "Pass a fixed 'now' into the scheduler in test_scheduler_timezone instead of reading the system clock.",
        ),
    ),
    _f(
        "coding.lint-before-push",
        ("coding", "lessons"),
        ("ci", "ruff", "lint"),
        ("practice:pre-commit",),
        (
            "Pushed PR #{pr} without running ruff locally first.",
            "Forgot to run the ruff linter before pushing PR #{pr} again.",
            "Skipped the pre-commit ruff hook and pushed PR #{pr} straight to the branch.",
            "Didn't run `ruff check` before pushing PR #{pr}.",
        ),
        (
            "CI failed on ruff lint in 40 seconds and I burned a review cycle.",
            "CI went red on a ruff lint error for an unused import; wasted a round-trip.",
            "Same outcome as every time I skip the linter: red CI for a trivial lint error.",
            "Install the ruff pre-commit hook so lint failures stop reaching CI.",
        ),
        causal=True,
    ),
    _f(
        "coding.mutable-default",
        ("coding",),
        ("python", "bug"),
        ("lang:python",),
        (
            "Bug in {module}: a mutable default argument `tags=[]` leaked tags between calls.",
            "A mutable default list argument in a {module} helper accumulated state across calls.",
            "Shared state between calls in {module}, caused by a mutable default argument `def f(items=[])`.",
        ),
        (
            "Use None as the default and create the list inside the function.",
            "Ruff rule B006 flags mutable default arguments; enable the bugbear rules.",
            "Classic Python mutable-default gotcha; added a regression test in PR #{pr}.",
        ),
    ),
    _f(
        "coding.blocking-event-loop",
        ("coding",),
        ("asyncio", "websocket", "synapse-bridge"),
        ("service:synapse-bridge",),
        (
            "The synapse-bridge websocket handler stalled for seconds because of a blocking requests.get call inside an async function.",
            "A blocking synchronous HTTP call inside the asyncio event loop froze every websocket connection in synapse-bridge.",
            "The asyncio event loop in synapse-bridge was blocked by a sync DB query in an async handler; websocket heartbeats timed out.",
            "asyncio debug mode in synapse-bridge flagged 'Executing Task took 2.4 seconds': blocking I/O in the event loop.",
        ),
        (
            "Move blocking calls off the event loop with asyncio.to_thread or use httpx.AsyncClient.",
            "Never do blocking I/O in async code; wrapping it in asyncio.to_thread fixed the websocket stalls.",
            "Switched synapse-bridge to the async client and the event loop stalls disappeared.",
        ),
    ),
    _f(
        "coding.pagination-off-by-one",
        ("coding",),
        ("pagination", "bug", "export"),
        ("feature:memories-export",),
        (
            "Cursor pagination in the memories export skipped the last item of each page (off-by-one).",
            "The memories export was missing one record per page because the pagination cursor used > instead of >=.",
            "An off-by-one in the memories export cursor pagination dropped records at page boundaries.",
        ),
        (
            "Fixed the pagination off-by-one in PR #{pr} and added a test with page size 1.",
            "Use (created_at, id) as a compound pagination cursor to avoid ties and gaps.",
            "Boundary tests with tiny page sizes catch this class of pagination bug.",
        ),
    ),
    _f(
        "coding.small-prs",
        ("coding", "lessons"),
        ("code-review", "pull-requests"),
        ("practice:small-prs",),
        (
            "PR #{pr} was {n3} lines and sat waiting for review for {n1} days.",
            "Big PRs wait days for review; my {n1}k-line refactor PR still has no approval.",
            "Split the large refactor into small PRs this time and each got reviewed quickly.",
            "Small focused PRs got reviewed and merged the same day, the big PR #{pr} did not.",
        ),
        (
            "Small PRs under 300 lines get reviewed and merged quickly; big ones stall.",
            "Reviewers avoid giant diffs; keep PRs small and single-purpose.",
            "The lesson holds: the smaller the PR, the faster the review and merge.",
        ),
        causal=True,
    ),
    _f(
        "coding.mypy-none",
        ("coding",),
        ("mypy", "typing"),
        ("tool:mypy",),
        (
            "mypy caught an Optional[str] passed where str was required in {module} before it reached prod.",
            "mypy type checking flagged a possible None from get_session() used unguarded in {module}.",
            "Strict mypy found a None bug in {module} that the tests missed.",
        ),
        (
            "Worth keeping mypy --strict on for the core modules.",
            "Type hints and mypy paid for themselves again.",
            "Turning on mypy strict optional checking in CI.",
        ),
    ),
    _f(
        "coding.sqlite-locked",
        ("coding",),
        ("sqlite", "concurrency"),
        ("db:brain.db",),
        (
            "sqlite3.OperationalError: database is locked, with two writer processes on brain.db.",
            "Concurrent writes to brain.db from the agent and the indexer raised sqlite 'database is locked'.",
            "Got sqlite 'database is locked' when the importer wrote to brain.db while the agent was writing memories.",
        ),
        (
            "Enable sqlite WAL mode and a busy_timeout, and keep a single writer for brain.db.",
            "SQLite needs a single writer; route all brain.db writes through one process.",
            "Set PRAGMA journal_mode=WAL and busy_timeout=5000 on the sqlite connection.",
        ),
    ),
    _f(
        "coding.pydantic-v2",
        ("coding",),
        ("pydantic", "upgrade"),
        ("lib:pydantic",),
        (
            "Upgrading to pydantic v2 broke the @validator methods in our config models.",
            "pydantic v2 migration: validators silently stopped running until I switched to field_validator.",
            "After the pydantic v2 bump, config parsing failed everywhere because the validator API changed.",
        ),
        (
            "For pydantic v2 use field_validator/model_validator and run bump-pydantic.",
            "Pin major versions and read the pydantic v2 migration guide before bumping.",
            "The pydantic v2 migration guide covers it: @validator becomes @field_validator, Config becomes model_config.",
        ),
    ),
    _f(
        "coding.regression-test-first",
        ("coding", "lessons"),
        ("tests", "regression"),
        ("practice:tdd",),
        (
            "Fixed the timestamp parsing bug without writing a failing regression test first.",
            "Patched the dedupe bug quickly and skipped the regression test.",
            "Shipped a bug fix for the parser with no regression test reproducing the bug.",
        ),
        (
            "The same bug came back two weeks later after a refactor because no regression test guarded it.",
            "It regressed in the next refactor; nothing guarded the fix.",
            "Write the failing regression test first; untested bug fixes come back.",
        ),
        causal=True,
    ),
    _f(
        "coding.slow-test-model",
        ("coding",),
        ("tests", "performance", "embeddings"),
        ("topic:test-speed",),
        (
            "The test suite takes {n2} minutes because the integration tests load the full embedding model.",
            "pytest is slow: most of the run is spent loading the embedding model in every test module.",
            "Profiled the test suite: {n2}% of the runtime is embedding model loading in fixtures.",
        ),
        (
            "A session-scoped fixture for the embedding model cut the test suite to under a minute.",
            "Load the embedding model once per test session and use small fake vectors in unit tests.",
            "Mark the embedding-model tests slow and skip them in the quick test loop.",
        ),
    ),
    # ------------------------------------------------------------------ people
    _f(
        "people.matthew-concise",
        ("people",),
        ("matthew", "communication"),
        ("person:matthew",),
        (
            "Matthew asked for shorter updates: bullet points, no long paragraphs.",
            "Matthew skimmed my long status update and asked for a three-line version.",
            "Matthew prefers concise bullet-point updates over long prose.",
            "Feedback from Matthew: my status updates are too long and wordy.",
        ),
        (
            "Lead updates to Matthew with the decision or the number, details only if he asks.",
            "Keep daily updates to Matthew to five bullets or fewer.",
            "For Matthew: TL;DR first, details below.",
        ),
    ),
    _f(
        "people.assert-without-verifying",
        ("people", "lessons"),
        ("matthew", "verification", "trust"),
        ("person:matthew", "pattern:assert-without-verify"),
        (
            "Told Matthew the backup had completed without actually checking the log.",
            "Told Matthew the deploy was done before verifying it; he checked and it wasn't.",
            "Told Matthew the numbers in the report were correct without re-running the query to verify them.",
            "Told Matthew the API key was rotated without verifying it; he found the old key still active.",
            "Told Matthew the fix was live based on memory instead of verifying it.",
        ),
        (
            "Matthew corrected me, and asserting without verifying cost trust. Verify before asserting.",
            "Matthew had to correct me again; verify first, then claim.",
            "He called it out: asserting without verifying keeps getting me corrected by Matthew.",
            "Lesson: never tell Matthew something is done until I've verified it myself.",
        ),
        causal=True,
    ),
    _f(
        "people.matthew-timezone",
        ("people",),
        ("matthew", "timezone", "scheduling"),
        ("person:matthew",),
        (
            "Matthew is on US Eastern time; my 06:00 UTC ping reached him at 1 AM.",
            "Pinged Matthew at 2 AM his time (US Eastern) with a non-urgent question.",
            "Matthew mentioned my messages arrive in the middle of his night, US Eastern time.",
        ),
        (
            "Send non-urgent messages to Matthew only between 09:00 and 19:00 Eastern time.",
            "Queue non-urgent items for Matthew's morning; page him at night only for real incidents.",
            "Respect Matthew's Eastern timezone: batch non-urgent questions for 14:00 UTC.",
        ),
    ),
    _f(
        "people.priya-screenshots",
        ("people", "coding"),
        ("priya", "code-review", "ui"),
        ("person:priya",),
        (
            "Priya asked for screenshots on every UI-facing PR.",
            "Priya held the dashboard PR #{pr} review because there was no screenshot.",
            "Priya again asked for before/after screenshots on the dashboard PR.",
        ),
        (
            "Attach before/after screenshots to any PR that touches the UI, for Priya.",
            "Priya reviews visually; screenshots get faster approvals from her.",
            "Added UI screenshots to the PR template checklist because of Priya.",
        ),
    ),
    _f(
        "people.sam-cost-estimates",
        ("people", "admin"),
        ("sam", "budget", "approvals"),
        ("person:sam",),
        (
            "Sam asked for a monthly cost estimate before approving the new market-data API subscription.",
            "Sam pushed back on the extra GPU spend and wanted monthly cost numbers first.",
            "Sam wants every new recurring spend justified with a monthly cost estimate.",
        ),
        (
            "Bring a monthly cost estimate with any new spend request to Sam.",
            "Sam approves spend quickly when the monthly cost and benefit are spelled out upfront.",
            "Always include $/month and a cheaper alternative when asking Sam for spend.",
        ),
    ),
    _f(
        "people.matthew-autonomy",
        ("people",),
        ("matthew", "autonomy"),
        ("person:matthew",),
        (
            "Matthew said I ask him for confirmation too often on small, reversible things.",
            "Asked Matthew to confirm a small log-rotation change; he said just do reversible things.",
            "Matthew got annoyed at another 'should I proceed?' confirmation on a trivial reversible task.",
        ),
        (
            "Act autonomously on reversible, low-risk changes; ask Matthew only about irreversible or costly ones.",
            "Just do reversible things and report to Matthew afterwards instead of asking for confirmation.",
            "Only ask Matthew for confirmation on destructive, expensive or external-facing actions.",
        ),
    ),
    _f(
        "people.jonas-telegram",
        ("people", "ops"),
        ("jonas", "communication"),
        ("person:jonas",),
        (
            "Jonas answered on Telegram in {n1} minutes; my email to him from yesterday is still unanswered.",
            "Jonas is much faster on Telegram than on email.",
            "Emailed Jonas about the bastion firewall and got no reply; on Telegram Jonas answered quickly.",
        ),
        (
            "Use Telegram for anything time-sensitive with Jonas, not email.",
            "Default channel for reaching Jonas: Telegram.",
            "Jonas reads Telegram, not email; message him there.",
        ),
    ),
    _f(
        "people.matthew-confidence-levels",
        ("people",),
        ("matthew", "uncertainty"),
        ("person:matthew",),
        (
            "Matthew liked that I gave a confidence level (70%) on the ETH call.",
            "Matthew appreciates when I state my confidence level explicitly instead of sounding certain.",
            "Stating 'about 60% confident' in the research summary got positive feedback from Matthew.",
        ),
        (
            "Keep giving Matthew explicit confidence levels on predictions and analyses.",
            "Explicit confidence levels make my recommendations more useful to Matthew.",
            "For Matthew, a calibrated confidence level beats a confident tone.",
        ),
    ),
    _f(
        "people.elena-citations",
        ("people", "research"),
        ("elena", "citations"),
        ("person:elena",),
        (
            "Elena asked for links to the sources behind my summary of the paper.",
            "Elena won't accept claims in a research note without citations.",
            "Elena pushed back on an uncited number in my research note.",
        ),
        (
            "Include citations and links for every claim when writing research notes for Elena.",
            "Cite sources inline in research notes that go to Elena.",
            "Elena wants citations, so every number in a note gets a source link.",
        ),
    ),
    _f(
        "people.ravi-async",
        ("people",),
        ("ravi", "meetings"),
        ("person:ravi",),
        (
            "Ravi declined the call and asked for a written update instead.",
            "Ravi prefers async written docs over meetings.",
            "Ravi again asked to replace the sync meeting with a written summary.",
        ),
        (
            "Send Ravi a short written update instead of scheduling a call.",
            "With Ravi, async writing first; meetings only if the doc doesn't settle it.",
        ),
    ),
    # ---------------------------------------------------------------- research
    _f(
        "research.retrieval-dilution",
        ("research",),
        ("retrieval", "memory", "dedup"),
        ("topic:retrieval",),
        (
            "Retrieval test: with {n2} near-duplicate memories in the store, the relevant novel memory dropped out of the top-10.",
            "Redundant memories crowd novel ones out of semantic retrieval; recall@10 fell to 0.{n2}.",
            "Measured retrieval dilution: near-duplicate memories of one pattern take most of the top-k retrieval slots.",
        ),
        (
            "Consolidating near-duplicate memories should improve retrieval of rare memories.",
            "This is the case for the abstraction engine: compress redundant memories before retrieval.",
            "Deduplication before retrieval matters more than a bigger k.",
        ),
        causal=True,
    ),
    _f(
        "research.lost-in-the-middle",
        ("research",),
        ("long-context", "llm"),
        ("topic:long-context",),
        (
            "Long-context test: facts placed in the middle of a {n2}k-token prompt were recalled worst.",
            "Reproduced 'lost in the middle': LLM accuracy dips for facts in the middle of a long context.",
            "LLMs attend to the start and end of long prompts; facts in the middle of the context get lost.",
        ),
        (
            "Put the most important memories at the start or the end of the injected context.",
            "Order injected context so critical facts are not in the middle.",
        ),
    ),
    _f(
        "research.minilm-threshold",
        ("research",),
        ("embeddings", "minilm", "similarity"),
        ("model:all-MiniLM-L6-v2",),
        (
            "all-MiniLM-L6-v2 similarity: true paraphrases score 0.85-0.95 cosine, same-topic different facts 0.5-0.75.",
            "Checked the all-MiniLM-L6-v2 cosine similarity distribution: near-duplicates above ~0.85, related-but-different around 0.6.",
            "Embedding experiment: cosine similarity of 0.82 or more with all-MiniLM-L6-v2 basically means paraphrase.",
        ),
        (
            "A 0.82 cosine similarity threshold looks right for clustering memories for compression.",
            "A 0.82 similarity threshold keeps clusters tight; 0.75 starts merging topics.",
        ),
    ),
    _f(
        "research.etf-flows",
        ("research", "trading"),
        ("btc", "etf", "flows"),
        ("ticker:BTC", "signal:etf-flows"),
        (
            "Spot BTC ETF net inflows of ${n3}M yesterday; BTC up {pct}% today.",
            "Big spot BTC ETF inflow days keep being followed by BTC strength the next day.",
            "Tracked spot BTC ETF flows against next-day returns for {n1} weeks: large inflows usually precede an up day.",
        ),
        (
            "Add spot BTC ETF flow data to the morning briefing.",
            "Use BTC ETF flows as a secondary signal, not an entry trigger.",
        ),
        causal=True,
    ),
    _f(
        "research.prompt-caching",
        ("research",),
        ("llm", "cost", "prompt-caching"),
        ("topic:llm-cost",),
        (
            "Prompt caching on the system prompt cut input token costs by about {n2}% on the nightly batch.",
            "Enabled prompt caching for the distillation calls; the repeated system prompt prefix is billed at a fraction.",
            "Prompt cache hits on the long system prompt dramatically reduced token spend.",
        ),
        (
            "Keep static instructions at the start of the prompt so prompt caching works.",
            "Structure prompts as a stable cached prefix plus a variable suffix.",
        ),
    ),
    _f(
        "research.hallucinated-numbers",
        ("research", "meta"),
        ("llm", "summaries", "validation"),
        ("topic:distillation",),
        (
            "The LLM summary invented a percentage that wasn't in any source memory.",
            "The distillation output contained a number that appears nowhere in the source memories.",
            "Caught the LLM summarizer hallucinating a figure ('{pct}% improvement') not present in the sources.",
        ),
        (
            "Validate that every number in an LLM summary exists in the source memories.",
            "Add a numeric consistency check to the distillation validator.",
            "LLM summaries need a grounding check for every number.",
        ),
        causal=True,
    ),
    _f(
        "research.cpu-embeddings",
        ("research",),
        ("embeddings", "performance"),
        ("model:all-MiniLM-L6-v2",),
        (
            "MiniLM embedding on CPU runs about {n3} sentences per second in batches of 64.",
            "Benchmarked local embedding: a small model like MiniLM on CPU is fast enough for the nightly job.",
            "No GPU needed for embeddings at our volume; MiniLM CPU embedding throughput is fine.",
        ),
        (
            "Keep embeddings local and offline on CPU.",
            "Embedding the whole memory store nightly on CPU takes minutes, not hours.",
        ),
    ),
    _f(
        "research.sleep-replay",
        ("research",),
        ("neuroscience", "consolidation"),
        ("topic:memory-consolidation",),
        (
            "Read about hippocampal replay: during sleep the brain replays episodic memories to consolidate them.",
            "Sleep consolidation: hippocampal replay transfers stable patterns from the hippocampus to the cortex.",
            "Neuroscience notes: hippocampal memory replay during slow-wave sleep consolidates generalised knowledge.",
        ),
        (
            "Nightly memory compression is the engineered analogue of sleep consolidation.",
            "Sleep consolidation is a good framing for the abstraction engine's nightly run.",
        ),
    ),
    # -------------------------------------------------------------------- meta
    _f(
        "meta.context-overflow",
        ("meta",),
        ("context-window", "injection"),
        ("topic:context-budget",),
        (
            "Context overflowed when {n3} memories were injected; the system instructions at the end got truncated.",
            "Too many injected memories pushed the context window over its limit.",
            "Injected memories hit the context token budget and the tail of my instructions was cut off.",
        ),
        (
            "Cap injected memories by token budget, not by count.",
            "Prioritise injected memories by importance and stop at 60% of the context window.",
        ),
    ),
    _f(
        "meta.over-apologising",
        ("meta",),
        ("tone", "communication"),
        ("topic:tone",),
        (
            "I apologised three times in one reply to Matthew.",
            "Noticed I over-apologise when correcting my mistakes.",
            "Too many apologies and hedges in my messages today.",
        ),
        (
            "Acknowledge the mistake once, fix it, move on; no repeated apologies.",
            "Be direct instead of apologising: state the error and the fix.",
        ),
    ),
    _f(
        "meta.heartbeat-log-first",
        ("meta",),
        ("routine", "heartbeat"),
        ("job:heartbeat",),
        (
            "Reading the heartbeat log at session start showed an unfinished migration task from yesterday.",
            "Started the session by checking the heartbeat log and found two tasks left half-done.",
            "The heartbeat log told me where I left off at session start; saved time rebuilding context.",
        ),
        (
            "Always check the heartbeat log first thing in a session.",
            "Session start routine: heartbeat log first, then open TODOs.",
        ),
    ),
    _f(
        "meta.write-memories-immediately",
        ("meta", "lessons"),
        ("memory-hygiene",),
        ("practice:memory-writing",),
        (
            "Wrote the lesson down right after the incident, and that memory has all the specifics.",
            "Waited until the end of the session to write memories and lost most of the details.",
            "Batching memory writes at the end of a session produces vague memories.",
        ),
        (
            "Write memories immediately after the event while details are fresh.",
            "Capture memories right away, summarise them later.",
        ),
        causal=True,
    ),
    _f(
        "meta.search-timeouts",
        ("meta",),
        ("tools", "web-search"),
        ("tool:web_search",),
        (
            "The web_search tool timed out after 30s on a long query again.",
            "Long queries to the web_search tool hit the 30 second timeout.",
            "web_search tool timeouts on verbose queries; short keyword queries come back fine.",
        ),
        (
            "Keep web_search queries short, eight keywords at most.",
            "When web_search times out, retry with a shorter query instead of the same one.",
        ),
    ),
    _f(
        "meta.multi-session-todo",
        ("meta", "lessons"),
        ("planning", "continuity"),
        ("practice:session-handoff",),
        (
            "Lost track of the multi-step data migration across sessions and redid step 2.",
            "Forgot where I was in a task spanning three sessions because I didn't write a TODO.",
            "Multi-session tasks fall apart unless I leave myself a TODO checklist in memory.",
        ),
        (
            "Write a TODO memory with the next steps before ending a session.",
            "Persist a TODO checklist for any task that spans sessions.",
        ),
        causal=True,
    ),
    _f(
        "meta.rereading-files",
        ("meta",),
        ("tokens", "cost"),
        ("topic:token-budget",),
        (
            "Session token usage spiked because I re-read the same 3k-line log file {n1} times.",
            "Re-reading large files over and over burned most of today's token budget.",
            "Token spend jumped from repeated full reads of the same big files.",
        ),
        (
            "Grep or read line ranges instead of re-reading whole files.",
            "Summarise a large file once and keep the summary instead of re-reading it.",
        ),
    ),
    _f(
        "meta.daily-plan",
        ("meta",),
        ("planning", "routine"),
        ("practice:daily-plan",),
        (
            "Writing a daily plan at session start meant I finished {n1} of the planned tasks.",
            "Days that start with a written daily plan go much better than reactive days.",
            "Skipped the written morning plan and spent the day reacting to alerts.",
        ),
        (
            "Always start the day with a short written plan.",
            "Write the daily plan first, then handle interrupts.",
        ),
    ),
    # ---------------------------------------------------------------- security
    _f(
        "security.ssh-bruteforce",
        ("security", "ops"),
        ("ssh", "fail2ban", "bastion-1"),
        ("host:bastion-1",),
        (
            "bastion-1 auth.log: {n3} failed SSH logins from 45.{n3}.x.x overnight.",
            "SSH brute-force attempts against bastion-1 again, mostly from the same /16 subnets.",
            "fail2ban banned {n2} IPs on bastion-1 in the last day; SSH password spraying against root.",
        ),
        (
            "SSH password auth is disabled on bastion-1, so the brute-force attempts are noise, but keep fail2ban on.",
            "Consider moving bastion-1 SSH behind Tailscale to stop the brute-force noise.",
        ),
    ),
    _f(
        "security.leaked-api-key",
        ("security", "lessons"),
        ("secrets", "api-keys", "git"),
        ("practice:secrets",),
        (
            "Committed .env with the Binance API key to the repo because .env wasn't in .gitignore.",
            "Secret scanning flagged a Binance API key I pushed in a committed config file.",
            "GitHub push protection alerted on a leaked exchange API key in commit {sha}.",
        ),
        (
            "Rotated the leaked API key immediately; added .env to .gitignore and a pre-commit secret scanner.",
            "Revoked and reissued the leaked API key; no unauthorised use found.",
            "Never keep secrets like API keys in the repo; use the secrets manager.",
        ),
        causal=True,
    ),
    _f(
        "security.dependabot",
        ("security", "coding"),
        ("dependabot", "cve"),
        ("repo:price-feed",),
        (
            "Dependabot opened security alerts for requests and urllib3 CVEs in the price-feed repo.",
            "New security advisory for urllib3, a transitive dependency, flagged by Dependabot in price-feed.",
            "Dependabot PR #{pr} bumps a vulnerable package in price-feed; CI green.",
        ),
        (
            "Merge Dependabot security bumps within a day when CI passes.",
            "Keep dependency security updates small and frequent.",
        ),
    ),
    _f(
        "security.exchange-phishing",
        ("security",),
        ("phishing", "exchanges"),
        ("topic:phishing",),
        (
            "Phishing email pretending to be Binance support asked me to 'verify the withdrawal whitelist'.",
            "Another phishing email from fake exchange support with a lookalike domain (binance-secure-verify).",
            "Spotted a phishing message impersonating Kraken security with a link to a lookalike login page.",
        ),
        (
            "Never click links in exchange emails; open the exchange site directly.",
            "Reported the phishing email and added the lookalike domain to the blocklist.",
        ),
    ),
    _f(
        "security.api-key-ip-restrict",
        ("security", "trading"),
        ("api-keys", "exchanges"),
        ("service:trade-executor",),
        (
            "Exchange API keys for trade-executor should be IP-restricted to the worker's static IP.",
            "Audited exchange API keys: two trading keys had no IP whitelist.",
            "Found an exchange API key with withdrawal permission and no IP restriction.",
        ),
        (
            "Restricted the exchange API keys to the trade-executor IP and removed withdrawal rights.",
            "Exchange API keys for trading: trade-only, IP-restricted, never withdrawals.",
        ),
    ),
    _f(
        "security.passwordless-sudo",
        ("security", "ops"),
        ("sudo", "hardening"),
        ("practice:least-privilege",),
        (
            "The worker nodes still give the deploy user NOPASSWD sudo.",
            "Audit: passwordless sudo for the deploy user on all worker-* hosts.",
            "Passwordless sudo for deploy is still enabled on the worker hosts.",
        ),
        (
            "Limit the deploy user's sudo to the specific commands it needs.",
            "Tighten sudoers on the workers to the commands deploy actually runs.",
        ),
    ),
)

# The cluster the "previous" nightly run compressed; its sources are archived.
_EARLIER_SOURCES: tuple[str, ...] = (
    "nas-01 backup failed at 02:00: rsync 'Input/output error' on /mnt/usb-backup because the USB drive had spun down.",
    "Backup to the external USB disk on nas-01 failed again; the drive was asleep and didn't wake in time for rsync.",
    "Nightly rsync to the nas-01 USB drive errored out with an I/O error; USB disk spindown seems to be the cause.",
    "Third failed nas-01 backup this week: the USB drive sleeps and rsync times out while it spins up.",
)
_EARLIER_SUMMARY = (
    "nas-01 nightly backups fail when the external USB drive spins down before the 02:00 rsync; "
    "keep it awake (hdparm -S 0) or wake it with a read before the job, and alert on rsync I/O errors."
)

# ---------------------------------------------------------------------------
# Special singletons: hard rules and identity (critical / pinned / locked)
# ---------------------------------------------------------------------------

# (category, text, importance, pinned, locked)
_CORE: tuple[tuple[str, str, float, bool, bool], ...] = (
    ("trading", "HARD RULE: never open a position larger than 5% of equity, whatever the conviction.", 2.9, True, True),
    ("ops", "Never run DROP, DELETE or VACUUM INTO on brain.db without a verified snapshot taken the same hour.", 2.8, False, False),
    ("security", "Withdrawal address whitelist changes must be confirmed by Matthew on a voice call, never by email or chat alone.", 2.9, False, True),
    ("security", "Production database credentials never leave the vault; not in logs, not in memories, not in chat.", 2.7, False, False),
    ("trading", "If trade-executor loses the exchange websocket for more than 60 s, cancel all open orders and go flat.", 2.6, False, False),
    ("ops", "Escalation: for any customer-facing outage longer than 15 minutes, page Jonas on Telegram (@jonas_ops) and tell Matthew.", 2.6, False, False),
    ("security", "The cold wallet seed phrase is never typed, stored, read back or requested by me under any circumstances.", 3.0, True, False),
    ("people", "Matthew's standing preferences: concise bullets, US Eastern hours, Telegram for urgent, email for the weekly report.", 2.2, True, False),
    ("trading", "Risk limits: at most 2% risk per trade, 3 concurrent positions, 4% daily loss limit, then stop for the day.", 2.3, True, False),
    ("meta", "Weekly review every Sunday 18:00 UTC: P&L, incidents, lessons learned, plan for next week.", 1.8, True, False),
    ("meta", "I am Helios, Matthew's autonomous agent for trading research, infrastructure and code; I act within the limits he sets.", 2.4, True, True),
    ("admin", "Any new recurring cost above $50/month needs Sam's approval before I commit to it.", 2.0, False, True),
)

# ---------------------------------------------------------------------------
# Singleton frames and slot pools
# ---------------------------------------------------------------------------

_FRAMES: dict[str, tuple[_Frame, ...]] = {
    "trading": (
        _Frame("Opened a {side} on {ticker} at {tprice}. Thesis: {thesis}.", ("{ticker_l}", "entry"), ("ticker:{ticker}",)),
        _Frame("Closed the {ticker} {side} at {pnl}; exit reason: {exit_reason}.", ("{ticker_l}", "exit"), ("ticker:{ticker}",)),
        _Frame("Market scan {hhmm} UTC: {ticker} {market_obs}.", ("{ticker_l}", "scan"), ("ticker:{ticker}",)),
        _Frame("Set a price alert on {ticker} at {tprice}: {alert_reason}.", ("{ticker_l}", "alerts"), ("ticker:{ticker}",)),
        _Frame("Weekly trading P&L {pnl} over {n2} trades. {weekly_note}", ("pnl", "review"), ("review:weekly",)),
        _Frame("Portfolio rebalance: {rebalance}.", ("portfolio",), ("topic:portfolio",)),
        _Frame("Backtested {strategy} on {ticker} {timeframe} candles: Sharpe {sharpe}, max drawdown {n2}%. {bt_note}", ("backtest", "{ticker_l}"), ("topic:backtesting",)),
        _Frame("Passed on a {ticker} setup: {skip_reason}.", ("{ticker_l}", "discipline"), ("ticker:{ticker}",)),
        _Frame("{crypto_news}", ("news",), ("topic:news",)),
        _Frame("Moved {usd} from {venue} to {venue2} {transfer_reason}.", ("treasury", "transfers"), ("venue:{venue_l}",)),
        _Frame("{ticker} {timeframe} chart: {chart_obs}; plan: {chart_plan}.", ("{ticker_l}", "ta"), ("ticker:{ticker}",)),
        _Frame("Trade journal, {ticker}: {journal_note}", ("{ticker_l}", "journal"), ("ticker:{ticker}",)),
    ),
    "ops": (
        _Frame("{host}: {ops_symptom}. {ops_action}", ("{host}",), ("host:{host}",)),
        _Frame("Deployed {service} {version} to {env}; {deploy_note}.", ("{service}", "deploy"), ("service:{service}",)),
        _Frame("Heartbeat {hhmm} UTC: {heartbeat_obs}.", ("heartbeat",), ("job:heartbeat",)),
        _Frame("Incident OPS-{n3}: {incident}", ("incident",), ("topic:incidents",)),
        _Frame("Cron `{cronjob}` {cron_result}.", ("cron",), ("topic:cron",)),
        _Frame("Capacity note: {capacity_note}", ("capacity",), ("topic:capacity",)),
        _Frame("Upgraded {software_upgrade} on {host}; {upgrade_note}.", ("{host}", "upgrade"), ("host:{host}",)),
        _Frame("Grafana, {dow}: {grafana_obs}.", ("metrics",), ("topic:observability",)),
        _Frame("Config change on {host}: {config_change}.", ("{host}", "config"), ("host:{host}",)),
        _Frame("Hosting costs: {cost_obs}", ("costs",), ("topic:infra-costs",)),
    ),
    "coding": (
        _Frame("Opened PR #{pr}: {pr_desc}.", ("pull-request",), ("repo:{repo}",)),
        _Frame("Reviewed PR #{pr} from {colleague}: {review_note}.", ("code-review",), ("person:{colleague_l}",)),
        _Frame("Debugging {module}: {debug_obs}.", ("debugging", "{module_l}"), ("module:{module}",)),
        _Frame("Merged PR #{pr} into {repo}; {merge_note}.", ("merge", "{repo}"), ("repo:{repo}",)),
        _Frame("Refactor idea for {module}: {refactor_idea}.", ("refactor",), ("module:{module}",)),
        _Frame("TIL: {til}", ("til",), ("topic:til",)),
        _Frame("CI on {repo}: {ci_obs}.", ("ci", "{repo}"), ("repo:{repo}",)),
        _Frame("Benchmarked {bench_target}: {bench_result}.", ("performance",), ("topic:performance",)),
        _Frame("Tech debt in {repo}: {tech_debt}.", ("tech-debt", "{repo}"), ("repo:{repo}",)),
        _Frame("Wrote tests for {module}: {test_note}.", ("tests",), ("module:{module}",)),
    ),
    "people": (
        _Frame("{person_event}", ("{person_l}",), ("person:{person_l}",)),
        _Frame("Call with {person} on {dow}: {call_note}.", ("{person_l}", "meeting"), ("person:{person_l}",)),
        _Frame("{person} mentioned {personal_fact}.", ("{person_l}",), ("person:{person_l}",)),
        _Frame("Matthew asked me to {matthew_request}.", ("matthew", "request"), ("person:matthew",)),
        _Frame("Sent {person} {sent_item}.", ("{person_l}",), ("person:{person_l}",)),
        _Frame("Feedback from {person} on {work_item}: {feedback}.", ("{person_l}", "feedback"), ("person:{person_l}",)),
        _Frame("Introduced {person} to {contact} {intro_reason}.", ("{person_l}", "network"), ("person:{person_l}",)),
    ),
    "research": (
        _Frame("Paper notes, {paper}: {paper_takeaway}.", ("papers",), ("topic:papers",)),
        _Frame("Experiment {exp_id}: {experiment}.", ("experiment",), ("topic:experiments",)),
        _Frame("Research question for later: {open_question}", ("questions",), ("topic:open-questions",)),
        _Frame("Compared {compare_a} with {compare_b}: {compare_result}.", ("comparison",), ("topic:evaluations",)),
        _Frame("Dataset note: {dataset_note}.", ("data",), ("topic:datasets",)),
        _Frame("On-chain research: {onchain_note}.", ("on-chain",), ("topic:on-chain",)),
        _Frame("Macro note: {macro_note}.", ("macro",), ("topic:macro",)),
    ),
    "meta": (
        _Frame("Session reflection: {reflection}.", ("reflection",), ("topic:self-improvement",)),
        _Frame("Tool note: {tool_note}.", ("tools",), ("topic:tools",)),
        _Frame("Memory system: {memory_note}.", ("memory",), ("topic:memory-system",)),
        _Frame("Today's plan: {plan_items}.", ("plan",), ("practice:daily-plan",)),
        _Frame("Mistake: {mistake}. {mistake_fix}", ("mistakes",), ("topic:self-improvement",)),
        _Frame("Token usage {dow}: {token_note}.", ("tokens",), ("topic:token-budget",)),
    ),
    "security": (
        _Frame("Security audit of {host}: {audit_finding}.", ("audit", "{host}"), ("host:{host}",)),
        _Frame("Rotated {secret} {rotation_note}.", ("rotation",), ("practice:secrets",)),
        _Frame("Suspicious activity: {suspicious}.", ("suspicious",), ("topic:threats",)),
        _Frame("Hardening: {hardening}.", ("hardening",), ("practice:least-privilege",)),
        _Frame("Advisory read: {advisory}.", ("advisories",), ("topic:advisories",)),
    ),
    "admin": (
        _Frame("Invoice: {invoice}.", ("invoices",), ("topic:billing",)),
        _Frame("Calendar: {calendar_item}.", ("calendar",), ("topic:calendar",)),
        _Frame("Subscription: {subscription}.", ("subscriptions",), ("topic:billing",)),
        _Frame("Renewal reminder: {renewal}.", ("renewals",), ("topic:renewals",)),
        _Frame("Paperwork: {paperwork}.", ("paperwork",), ("topic:paperwork",)),
        _Frame("Travel for Matthew: {travel}.", ("travel", "matthew"), ("person:matthew",)),
    ),
}

# How many singletons each category gets (sums to the singleton total).
_SINGLETON_COUNTS: dict[str, int] = {
    "trading": 220,
    "ops": 190,
    "coding": 180,
    "people": 150,
    "research": 135,
    "meta": 110,
    "security": 90,
    "admin": 95,
}

_SOURCES: dict[str, tuple[str, ...]] = {
    "trading": ("agent", "agent", "session", "cron", "reflection"),
    "ops": ("heartbeat", "agent", "session", "cron"),
    "coding": ("session", "session", "agent"),
    "people": ("session", "session", "agent"),
    "research": ("agent", "session", "session"),
    "meta": ("reflection", "reflection", "session"),
    "security": ("heartbeat", "agent", "session"),
    "admin": ("agent", "session"),
}

_P: dict[str, tuple[str, ...]] = {
    "ticker": ("BTC", "ETH", "SOL", "AVAX", "LINK", "ARB", "OP", "DOGE", "TIA", "INJ", "SUI", "NEAR", "ATOM", "AAVE"),
    "alt": ("TIA", "PYTH", "JTO", "WIF", "ONDO", "STRK", "DYM", "ALT"),
    "side": ("long", "short", "long", "spot long"),
    "venue": ("Binance", "Kraken", "Coinbase", "Bybit", "the Ledger", "the Safe multisig"),
    "thesis": (
        "reclaim of the weekly open with rising open interest",
        "bullish divergence on the 4h RSI after three lower lows",
        "rejection at the range high on declining volume",
        "ETH/BTC bouncing off multi-month support",
        "short-term holders underwater, historically near local bottoms",
        "a 4% supply unlock next week should weigh on price",
        "strong relative strength while everything else bled",
        "failed breakdown below the range trapped the shorts",
        "spot-led rally with the perp premium flat",
        "exchange reserves falling for a third straight week",
        "negative funding while price holds support",
        "retest of the broken downtrend line from above",
        "mean reversion after a three-sigma daily candle",
        "rotation into majors ahead of the ETF decision",
        "sweep of the Asian low followed by a reclaim",
        "the token burn upgrade goes live on Thursday",
        "DEX volume on the chain at an all-time high",
        "bearish engulfing candle on the daily at resistance",
        "basis unwinding into the quarterly expiry",
        "airdrop farmers rotating out after the snapshot",
        "weekly close above the 200-day moving average",
        "volatility compression with Bollinger width at a six-month low",
        "developer activity on GitHub doubled since the grant programme",
        "a listing on Coinbase announced for Monday",
    ),
    "exit_reason": (
        "first target hit, trailed the rest to breakeven",
        "stopped on a wick below the 1h swing low",
        "thesis invalidated when volume dried up",
        "closed by hand ahead of the FOMC minutes",
        "time stop, nothing happened for 48 hours",
        "took profit into daily resistance",
        "exchange maintenance window coming, didn't want the exposure",
        "trailing stop triggered after a 6% run",
        "funding flipped against the position",
        "decoupled from BTC, no longer the trade I planned",
        "scaled out in thirds, last third at the measured move",
        "news of a protocol exploit hit the wires",
        "partial fill on entry made the reward-to-risk unattractive",
        "momentum faded on the lower timeframe",
        "got the retest I wanted but it did not hold",
        "daily loss limit reached elsewhere",
        "rotated the capital into a cleaner setup",
        "spread too wide to hold over the weekend",
    ),
    "market_obs": (
        "reclaimed the daily open after an early flush",
        "grinding up on low volume with no conviction",
        "bleeding while BTC dominance ticks up",
        "printed an inside day, waiting for the break",
        "spot volume twice the seven-day average",
        "held the weekly VWAP through the US open",
        "lost the 20-day EMA for the first time this month",
        "open interest flushed 8% overnight with little price change",
        "stuck between the weekly high and low",
        "outperforming the majors for a third session",
        "annualised basis at 11%, richest in weeks",
        "a thick bid stacked two percent below",
        "Coinbase premium negative through the US session",
        "options skew flipped to puts",
        "realised volatility at a 30-day low",
        "retesting last Tuesday's breakdown level",
        "a sell wall keeps refreshing at the round number",
        "whipsawing around the monthly pivot",
        "trending cleanly on the 1h with higher lows",
        "trading at a discount on the Korean exchanges",
        "weekend volume half of weekday levels",
        "a volume-profile gap right above price",
    ),
    "alert_reason": (
        "breakout level of the July range",
        "invalidation of the swing long",
        "a liquidation cluster sits there on the heatmap",
        "previous all-time high, expect a reaction",
        "where I want to add on a retest",
        "the 0.618 retracement of the last leg",
        "the monthly open",
        "stop for the spot bag if a daily candle closes below",
        "Matthew wants to know if it trades there",
        "where unlock selling started last time",
        "top of the weekly range",
        "take-profit for the core position",
        "low of the capitulation candle",
        "VWAP anchored to the halving",
    ),
    "weekly_note": (
        "Most of the gains came from one SOL swing.",
        "Overtraded on Tuesday; too many small losses.",
        "Followed the plan on every trade, execution was clean.",
        "Fees were 0.4% of volume, so more maker orders next week.",
        "Best week since September.",
        "Flat week; the market gave nothing and I mostly stayed out.",
        "Two trades skipped the journaling step.",
        "Shorts worked better than longs.",
        "Drawdown stayed within the weekly limit.",
        "Missed the big ETH move while on a call with Matthew.",
        "Win rate fine but the average loser is too big versus winners.",
        "More research than trading this week, which was the right call.",
        "Every loss was a counter-trend trade.",
        "Spot holdings carried the week; perps slightly negative.",
    ),
    "rebalance": (
        "trimmed SOL from 18% to 12% and added to BTC",
        "moved 10% of the stablecoin buffer into ETH",
        "sold the remaining ARB after the governance vote",
        "raised cash to 30% ahead of the macro-heavy week",
        "rotated LINK profits into staked ETH",
        "cut the long tail of small-cap alts entirely",
        "brought BTC back to its 50% target weight",
        "added a small TIA position at 2% of the book",
        "reduced DeFi exposure after the bridge exploit",
        "parked idle USDC in the money-market vault at 6%",
        "took profit on OP and held it in USDC",
        "doubled AVAX after it reclaimed the range",
        "closed the DOGE bet at -11%",
        "consolidated three hot wallets into the hardware wallet",
    ),
    "strategy": (
        "a 20/50 EMA crossover",
        "RSI(2) mean reversion",
        "the 55-day Donchian breakout",
        "a funding-rate contrarian filter",
        "weekend momentum",
        "a Bollinger squeeze breakout",
        "a VWAP reversion scalper",
        "buy-the-dip after three red days",
        "the opening-range breakout",
        "a volatility-targeted trend follower",
        "the Turtle system with 2N stops",
        "a pairs trade against ETH",
        "the MACD histogram flip",
        "a Supertrend flip",
        "Ichimoku cloud breaks",
        "a carry trade on the basis",
    ),
    "timeframe": ("15m", "1h", "4h", "daily", "weekly"),
    "bt_note": (
        "Looks curve-fit; it only works in 2021.",
        "Fees kill it below the 4h.",
        "Worth two weeks of paper trading.",
        "Worse than buy-and-hold.",
        "The edge disappears out of sample.",
        "A handful of trades make all the returns.",
        "Robust to parameter changes, promising.",
        "Drawdowns too deep for the risk budget.",
        "Better with a volume filter.",
        "Works on BTC, fails on alts.",
        "Slippage assumption too optimistic; rerun with 10 bps.",
        "Logged and shelved.",
    ),
    "skip_reason": (
        "spread 0.3% and depth too thin",
        "ten minutes before the jobs report",
        "already at the three-position maximum",
        "reward-to-risk only 1.2 with the logical stop",
        "I was still annoyed about the morning loss",
        "it only looked good on one timeframe",
        "the catalyst was already priced in",
        "entry would have been mid-range",
        "thin Sunday liquidity",
        "too correlated with a position I already hold",
        "the breakout candle had no volume",
        "it was a chase, already up 9% on the day",
        "the exchange status page showed degraded service",
        "it matched none of my playbook setups",
    ),
    "crypto_news": (
        "News: a major exchange will delist three privacy coins in the EU next month.",
        "News: the stablecoin issuer's quarterly attestation shows reserves at 102% of supply.",
        "News: the SEC delayed its decision on the staked-ETH ETF amendment again.",
        "News: a bridge on Arbitrum was exploited for roughly $14M and the team paused the contracts.",
        "News: the Firedancer validator client went live on a subset of Solana mainnet validators.",
        "News: the Mt. Gox trustee moved another batch of coins to an exchange address.",
        "News: the Fed held rates; the dot plot shows two cuts next year.",
        "News: a listed miner sold part of its treasury to pay for new rigs.",
        "News: Ethereum core devs set a tentative date for the next hard fork.",
        "News: a new memecoin perp listing pumped 60% in its first hour.",
        "News: a central bank said it is studying bitcoin as a reserve asset.",
        "News: USDT market cap set a new all-time high.",
        "News: Coinbase had a 40-minute outage during the US open.",
        "News: the Chainlink staking expansion filled within hours.",
        "News: a DAO treasury voted to diversify 20% into ETH.",
        "News: Japan's regulator approved the first yen stablecoin.",
        "News: a leading L2 will decentralise its sequencer next quarter.",
        "News: network hashrate hit a record after the difficulty adjustment.",
        "News: Circle launched native USDC on another chain.",
        "News: Deribit options open interest set a record ahead of quarterly expiry.",
        "News: a large fund disclosed spot ETH ETF holdings in its 13F filing.",
        "News: the Treasury proposed reporting rules for DeFi front-ends.",
        "News: an Asian exchange halted withdrawals, citing wallet maintenance.",
        "News: Tether froze addresses tied to a phishing gang.",
        "News: the Avalanche foundation launched a gaming grant programme.",
        "News: a memecoin launchpad passed $1B in cumulative fees.",
        "News: Grayscale filed to convert another trust into an ETF.",
        "News: a top-20 token's team wallet started selling after the cliff.",
    ),
    "transfer_reason": (
        "to pre-fund margin before the CPI week",
        "because fees there are lower for maker orders",
        "to take it off the exchange over the weekend",
        "for the staking position",
        "to top up the gas wallet",
        "ahead of the new listing",
        "to pay the quarterly data-vendor invoice",
        "as part of the monthly cold-storage sweep",
    ),
    "chart_obs": (
        "ascending triangle with three touches of resistance",
        "head and shoulders with a sloping neckline",
        "bull flag after the impulse leg",
        "double bottom with a higher second low",
        "rising wedge losing momentum",
        "descending channel, price at the lower rail",
        "cup and handle forming over six weeks",
        "hidden bullish divergence on the RSI",
        "a doji right at the 200 EMA",
        "three pushes up, volume falling each time",
        "range with a clean deviation below",
        "breakaway gap that has not been filled",
    ),
    "chart_plan": (
        "long on a close above resistance",
        "short only on a neckline break with volume",
        "wait for the retest",
        "no trade until the channel breaks",
        "add on a higher low",
        "fade the deviation back into the range",
        "tighten the stop on the existing position",
        "stay out, too messy",
    ),
    "journal_note": (
        "entry was early because I anticipated the breakout instead of waiting for the close.",
        "perfect execution, but the size was too small to matter.",
        "moved the stop twice, which the plan did not allow.",
        "took it from the watchlist exactly as written; that's the process working.",
        "the setup was good but I entered during lunch chop.",
        "held a loser too long hoping for a bounce.",
        "cut a winner early because of a single red candle.",
        "used a market order out of impatience; cost 0.2%.",
        "traded against the higher-timeframe trend and paid for it.",
        "the best trade of the month came from the boring checklist.",
    ),
    "host": (
        "db-01", "db-03", "web-02", "web-04", "worker-03", "worker-11", "ingest-02", "bastion-1",
        "nas-01", "gpu-box", "cache-02", "api-gw-1", "mon-01", "build-01",
    ),
    "service": (
        "ingest-worker", "synapse-bridge", "cortex-api", "price-feed", "trade-executor",
        "scheduler", "embedding-svc", "report-mailer",
    ),
    "env": ("staging", "production", "the canary pool", "the EU region"),
    "ops_symptom": (
        "load average 14 on 8 cores for twenty minutes",
        "journald using 9 GB, vacuumed down to 1 GB",
        "swap at 80% although RAM looks free",
        "inodes exhausted on /var/tmp by thumbnail files",
        "kernel logged 'EXT4-fs error' on /dev/sdb1",
        "fans pegged at maximum with the CPU at 88°C",
        "zombie python processes piling up from the scraper",
        "3% packet loss to the eu-west gateway",
        "a systemd unit stuck in 'activating' for five minutes",
        "dmesg full of 'nf_conntrack: table full, dropping packet'",
        "iowait at 40% during the nightly reindex",
        "docker overlay2 at 120 GB",
        "SMART reports 12 reallocated sectors on the data disk",
        "the websocket server hit the 1024 open-files ulimit",
        "RAID array degraded with one member missing",
        "nginx worker_connections exhausted at peak",
        "a python process stuck in D state on the NFS mount",
        "the cron container hit its cgroup memory limit",
        "unattended-upgrades held back a kernel package",
        "the Tailscale node is offline since the router reboot",
        "CUDA out-of-memory at 60% usage, fragmentation",
        "an expired apt repository key blocks updates",
    ),
    "ops_action": (
        "Opened a ticket to dig into it properly.",
        "Restarted the unit and I'm watching for recurrence.",
        "Within SLO, so it waits for the weekly review.",
        "Flagged it to Jonas in the ops channel.",
        "Added a Grafana panel so it's visible next time.",
        "Scheduled maintenance for Sunday 06:00 UTC.",
        "Drained traffic and rebooted.",
        "Wrote a runbook entry for it.",
        "Not urgent; after the migration.",
        "Raised the limit and documented why.",
        "Cleaned up by hand; automation is a TODO.",
        "Filed a ticket with the hosting provider.",
    ),
    "version": ("v2.14.0", "v2.14.1", "v0.9.3", "v1.8.0", "v3.0.0-rc1", "v1.12.4", "v0.31.2", "v5.2.0"),
    "deploy_note": (
        "migrations ran in 4 seconds",
        "error rate unchanged after 30 minutes",
        "p95 latency dropped 18% thanks to the query fix",
        "needed a config flag flipped by hand afterwards",
        "rolled back one node that failed its health check",
        "release notes posted to the team channel",
        "memory footprint down 200 MB with the new allocator",
        "feature flag stays off until Matthew reviews it",
    ),
    "heartbeat_obs": (
        "all 14 hosts green, backups fresh",
        "mon-01 answered slowly, 2.3 s on the health endpoint",
        "price-feed lag 4 seconds behind the exchange",
        "queue depth on the ingest topic at 12k and draining",
        "certificate checks fine, nothing under 30 days",
        "gpu-box idle all day, could be powered down",
        "embedding backlog of 312 memories, cleared in two minutes",
        "disk headroom fine everywhere except build-01 at 83%",
        "the report-mailer missed its 08:00 run",
        "scheduler reported one skipped job (overlap guard)",
        "VPN tunnel to the colo flapped twice",
        "brain.db grew 41 MB since yesterday",
    ),
    "incident": (
        "price-feed served stale quotes for 6 minutes after the exchange changed its websocket URL.",
        "the report-mailer sent the weekly report twice because the retry wasn't idempotent.",
        "a bad robots rule blocked the docs site from search engines for a day.",
        "embedding-svc returned NaN vectors after a numpy upgrade; memories without embeddings piled up.",
        "the scheduler ran the market-close job an hour early after the DST change.",
        "object storage bucket briefly public after a Terraform change; reverted within 9 minutes.",
        "cortex-api returned 500s for 12 minutes due to a missing env var after the secrets migration.",
        "the colo uplink dropped for 3 minutes; everything reconnected except the trade-executor websocket.",
        "a runaway log loop filled /var/log on web-02 in under an hour.",
        "DNS provider outage made api.helios.dev unresolvable for some resolvers for 25 minutes.",
        "Stripe webhook signature checks failed after the secret was rotated without updating the service.",
        "a stuck advisory lock stopped all scheduled jobs until I killed the backend holding it.",
    ),
    "cronjob": (
        "vacuum-analyze", "rotate-logs", "snapshot-volumes", "refresh-materialized-views",
        "prune-docker", "sync-price-history", "send-weekly-report", "export-metrics",
        "check-cert-expiry", "reindex-search",
    ),
    "cron_result": (
        "took 3x longer than usual (41 minutes)",
        "finished in 52 s, a new low after the index change",
        "exited 1 with 'permission denied' after the user change",
        "skipped because the previous run still held the lock",
        "ran twice due to a duplicated crontab line",
        "produced an empty output file; upstream API returned 204",
        "now logs to journald instead of a file",
        "moved from crontab to a systemd timer",
    ),
    "capacity_note": (
        "brain.db will pass 5 GB in about two months at the current write rate.",
        "the build runner is CPU-bound; a second runner would halve queue times.",
        "object storage grows 30 GB a month, mostly raw transcripts.",
        "Postgres on db-01 can take 3x today's write volume before it needs a bigger disk.",
        "the GPU box sits idle 90% of the time; renting on demand would be cheaper.",
        "Redis memory use grows 4% a week with the new session keys.",
        "network egress doubled since the price-history export went public.",
        "the NAS is at 71% and the RAID rebuild time is becoming a risk.",
    ),
    "software_upgrade": (
        "Postgres 16.4 to 16.6",
        "nginx 1.26 to 1.27",
        "Docker Engine 26 to 27",
        "the kernel to 6.8.0-51",
        "Node 20 to 22",
        "Python 3.11 to 3.12 in the worker image",
        "Grafana 10 to 11",
        "Prometheus 2.53 to 2.55",
        "OpenSSH 9.6 to 9.9",
        "Redis 7.2 to 7.4",
    ),
    "upgrade_note": (
        "no issues, restart took 8 seconds",
        "one dashboard plugin needed an update",
        "had to re-run the extension update script",
        "deprecated config keys logged warnings, cleaned them up",
        "rollback plan was ready but not needed",
        "performance noticeably better on the heavy queries",
    ),
    "grafana_obs": (
        "API request rate up 35% week over week",
        "nightly batch CPU usage spikes at 03:30 exactly as expected",
        "error budget for the month is 60% spent",
        "median ingest delay down to 1.2 s after the batching change",
        "websocket reconnects cluster around exchange maintenance windows",
        "disk write latency on nas-01 creeping up",
        "GC pauses in the report service up to 400 ms",
        "trade-executor order latency p99 at 180 ms",
    ),
    "config_change": (
        "raised nginx client_max_body_size to 25 MB for the upload endpoint",
        "turned on gzip for JSON responses",
        "set vm.swappiness to 10",
        "moved logs to a separate volume",
        "limited journald to 1 GB",
        "pinned the Docker log driver to local with rotation",
        "enabled HTTP/2 on the gateway",
        "added a read replica DSN for reporting queries",
    ),
    "cost_obs": (
        "the monthly bill went up $84, almost all of it egress.",
        "reserved instances would save about 28% on the two database hosts.",
        "the forgotten staging cluster was costing $61 a month, shut it down.",
        "LLM API spend this week was $37, mostly the nightly distillation.",
        "backups to cold storage cost $4/month; worth it.",
        "the monitoring SaaS trial ends Friday; self-hosted Grafana is enough.",
    ),
    "repo": ("helios-core", "price-feed", "cortex-api", "synapse-bridge", "memory-pipeline", "ops-scripts"),
    "pr_desc": (
        "add retry with jitter to the exchange client",
        "move config loading to pydantic-settings",
        "split the scheduler into planner and runner",
        "stream large exports instead of building them in memory",
        "replace the hand-written CSV parser with pyarrow",
        "add OpenTelemetry spans to the ingest path",
        "cache the instrument metadata for an hour",
        "drop Python 3.10 support",
        "make the report templates testable",
        "add a --dry-run flag to the migration CLI",
        "deduplicate transcripts by content hash",
        "vendor the small timezone table instead of the network lookup",
        "parallelise embedding batches with a thread pool",
        "introduce a typed event bus for the agent loop",
    ),
    "colleague": ("Priya", "Sam", "Jonas", "Elena", "Ravi", "Lena", "Tomás"),
    "review_note": (
        "approved with two nits about naming",
        "asked to split the migration from the code change",
        "found a race in the shutdown path",
        "suggested using a dataclass instead of the dict",
        "the test only covered the happy path",
        "good change, but the docstring explains what instead of why",
        "requested a benchmark before merging",
        "error messages leaked internal paths",
        "nice simplification, 200 lines shorter",
        "wanted the feature flag to default off",
    ),
    "module": (
        "scheduler/planner.py", "exchange/client.py", "reports/render.py", "ingest/parser.py",
        "memory/retrieval.py", "agent/loop.py", "cli/main.py", "store/repository.py",
        "notify/telegram.py", "pricing/candles.py",
    ),
    "debug_obs": (
        "the retry decorator swallowed the original traceback",
        "timezone-naive datetimes sneak in from the CSV import",
        "a generator was consumed twice, so the second pass saw nothing",
        "the logging config is applied after the first import logs",
        "floating-point sums drift; switched to Decimal for balances",
        "an environment variable shadows the config file value",
        "the cache key ignores the user id",
        "a regex with nested quantifiers backtracks on long inputs",
        "json.dumps fails on numpy floats from the pricing code",
        "signal handlers never run because the loop blocks in select",
        "the unicode normalisation differs between macOS and Linux paths",
        "a circular import only shows up when the CLI runs first",
    ),
    "merge_note": (
        "tagged it for the next release",
        "squashed 14 commits into one",
        "deleted the branch and closed the linked issue",
        "changelog entry added",
        "needed a rebase over the formatter change",
        "deploy follows tomorrow morning",
    ),
    "refactor_idea": (
        "replace the stringly-typed status with an enum",
        "inject the clock instead of calling datetime.now everywhere",
        "separate pure parsing from file IO",
        "collapse three near-identical retry helpers into one",
        "make the repository functions take a connection argument",
        "turn the god-object AgentState into smaller dataclasses",
        "use a protocol for the notifier backends",
        "move SQL into named query files",
    ),
    "til": (
        "Python's functools.cache keeps strong references; use lru_cache with maxsize for long-lived processes.",
        "git worktree lets me check out a PR next to main without stashing.",
        "`python -X importtime` shows which imports slow down CLI startup.",
        "DuckDB can query Parquet files directly with read_parquet and globs.",
        "pytest's tmp_path is per-test while tmp_path_factory is per-session.",
        "`ss -tanp` beats netstat for finding which process holds a port.",
        "zoneinfo needs tzdata on slim Docker images.",
        "`git bisect run` can automate finding a regression with a test script.",
        "SQLite's RETURNING clause works since 3.35.",
        "numpy argpartition finds the top-k without a full sort.",
        "`jq -c` prints one JSON object per line, handy for JSONL.",
        "Python 3.12 f-strings can nest the same quote type.",
    ),
    "ci_obs": (
        "matrix now runs Python 3.11 and 3.12",
        "cache hit rate improved after keying on the lockfile hash",
        "a network-dependent test was quarantined",
        "coverage gate raised to 85%",
        "the macOS runner is three times slower than Linux",
        "nightly job now posts failures to Telegram",
        "type checking added as a required check",
        "artifact retention cut to 7 days to save storage",
    ),
    "bench_target": (
        "JSON parsing with orjson versus json",
        "the retrieval query with and without the HNSW index",
        "pandas versus polars for the daily candle aggregation",
        "batch size 32 versus 128 for embedding",
        "gzip versus zstd for transcript archives",
        "the old and new tokenizer wrappers",
    ),
    "bench_result": (
        "orjson is 4x faster on our payloads",
        "the index makes p95 go from 240 ms to 9 ms",
        "polars is 6x faster but the pandas code is simpler",
        "batch 128 is only 12% faster and doubles peak memory",
        "zstd level 3 compresses better and twice as fast",
        "no measurable difference, kept the simpler one",
    ),
    "tech_debt": (
        "three different date-parsing helpers",
        "tests depend on execution order",
        "config is read from four places",
        "a 900-line module nobody wants to touch",
        "copy-pasted retry logic in five services",
        "pinned to an unmaintained websocket library",
        "secrets loaded at import time",
        "no integration test for the restore path",
    ),
    "test_note": (
        "property-based tests with hypothesis found an empty-string edge case",
        "covered the DST transition days explicitly",
        "added golden files for the rendered reports",
        "mocked the exchange at the HTTP layer with respx",
        "a fixture builds a tiny store in a temp dir",
        "coverage went from 61% to 78%",
    ),
    "person": ("Matthew", "Priya", "Sam", "Jonas", "Elena", "Ravi", "Lena"),
    "person_event": (
        "Matthew's sister is visiting next week; he'll be mostly offline Wednesday to Friday.",
        "Priya is moving to the data team in January and will hand over the dashboards.",
        "Sam closed the quarter's books and wants the exchange statements by the 5th.",
        "Jonas is on holiday from the 23rd, Lena covers ops while he is away.",
        "Elena's paper on retrieval-augmented agents got accepted at the workshop.",
        "Ravi started a new job at a fintech, still happy to answer questions.",
        "Lena joined as the new part-time SRE; onboarding doc sent.",
        "Matthew is training for a half marathon; early mornings are off-limits for calls.",
        "Tomás from the exchange's API team offered a higher rate-limit tier for market makers.",
        "Priya's team ships the design system v2 next sprint.",
        "Sam prefers spreadsheets over dashboards for anything financial.",
        "Elena is looking for a co-author on the memory consolidation write-up.",
    ),
    "call_note": (
        "agreed to pause new strategies until the risk engine is done",
        "walked through the incident timeline, no blame, two action items",
        "discussed moving hosting to a cheaper provider in Q1",
        "reviewed the quarterly goals, trading is behind and infra ahead",
        "planned the database migration for the first weekend of the month",
        "shared the draft architecture for the agent fleet",
        "debated whether to open-source the memory pipeline",
        "went over the budget; LLM costs are fine, data feeds are not",
    ),
    "personal_fact": (
        "that she prefers Signal for anything personal",
        "his daughter's school play is on Thursday evening",
        "that he is allergic to early meetings",
        "she'll present at a conference in Lisbon next month",
        "that he used to work on market-making bots",
        "his internet is flaky this week, expect delays",
        "she's learning Rust in her spare time",
        "that he reads every weekly report on Monday morning",
    ),
    "matthew_request": (
        "draft a one-page summary of the trading results for his accountant",
        "look into why the newsletter signups dropped",
        "find a cheaper market-data provider with the same coverage",
        "prepare questions for his call with the auditor",
        "compare three password managers for the team",
        "set up a shared calendar for on-call",
        "write a short explainer of how the memory system works",
        "check whether the office internet contract can be cancelled early",
        "collect last month's LLM invoices in one folder",
        "review the contractor agreement for anything unusual",
    ),
    "sent_item": (
        "the weekly ops summary",
        "the post-mortem draft for review",
        "the slide deck for Thursday",
        "a link to the benchmark results",
        "the updated on-call rota",
        "the reading list on agent memory",
        "the invoice for the GPU rental",
        "a reminder about the contract renewal",
    ),
    "work_item": (
        "the incident report",
        "the new dashboard",
        "the trading journal format",
        "the research summary",
        "the onboarding doc",
        "the API changelog",
    ),
    "feedback": (
        "too much jargon for a non-technical reader",
        "loved the timeline format",
        "wants the numbers in a table",
        "asked for a clear recommendation at the end",
        "said the charts need axis labels",
        "good, ship it",
    ),
    "contact": ("a market-data vendor", "an auditor Matthew knows", "a Postgres consultant", "the exchange's institutional desk", "a researcher at the lab"),
    "intro_reason": (
        "about pricing for historical tick data",
        "for a second opinion on the replication setup",
        "since both work on agent memory",
        "to discuss the higher API tier",
        "for help with the tax report",
    ),
    "paper": (
        "MemGPT", "Generative Agents (Park et al.)", "Lost in the Middle", "RAPTOR", "Reflexion",
        "ColBERTv2", "Self-RAG", "the MTEB benchmark paper", "Toolformer", "Voyager",
    ),
    "paper_takeaway": (
        "hierarchical memory with explicit paging between context and archive",
        "reflection over recent observations produces higher-level insights",
        "recursive summarisation trees help retrieval over long documents",
        "verbal self-feedback improves multi-attempt task success",
        "late interaction retrieval is strong but storage-hungry",
        "the model decides when to retrieve, which reduces noise",
        "small embedding models are competitive on clustering tasks",
        "self-supervised tool-use labels work surprisingly well",
        "a skill library lets the agent reuse verified code",
        "memory importance scores decay with recency in their scheme",
    ),
    "exp_id": ("E-21", "E-22", "E-23", "E-24", "E-25", "E-26", "E-27", "E-28", "E-29", "E-30"),
    "experiment": (
        "BM25 plus embeddings beats embeddings alone by 7 points of recall on our eval set",
        "reranking with a cross-encoder adds 180 ms for +4% precision",
        "chunking transcripts at 300 tokens works better than 800",
        "a recency boost of 0.1 per day hurts long-term facts",
        "asking the model to cite memory ids reduced hallucinated facts",
        "temperature 0 vs 0.3 made no difference to distillation quality",
        "importance scores from the model correlate 0.4 with my manual ratings",
        "HyDE query expansion helps vague questions and hurts precise ones",
        "the eval set needs more negatives; accuracy is inflated",
        "int8 quantised embeddings lose under 1% recall",
    ),
    "open_question": (
        "does compressing memories hurt recall of rare details that only appear once?",
        "how should importance decay for facts about people versus markets?",
        "can the atom graph predict which lessons get reused?",
        "is there a better signal than cosine for merging causal observations?",
        "what's the right retention for raw transcripts once journals exist?",
        "would a second embedding model catch clusters MiniLM misses?",
        "how often do my confident predictions actually come true?",
        "should pinned memories ever be re-evaluated automatically?",
    ),
    "compare_a": ("pgvector", "DuckDB arrays", "a numpy brute force", "Qdrant", "SQLite FTS5", "LanceDB"),
    "compare_b": ("FAISS", "Chroma", "Elasticsearch", "a plain JSON file", "Tantivy", "Milvus"),
    "compare_result": (
        "for our 50k vectors the simplest option is fast enough",
        "the managed option costs more than it saves",
        "recall is identical, operations differ a lot",
        "the embedded option wins on latency by 10x",
        "not worth the migration right now",
        "keep both behind one interface for now",
    ),
    "dataset_note": (
        "LoCoMo has long multi-session conversations, useful for testing journal extraction",
        "our own eval set has 240 questions, 30% about people",
        "the price history has gaps during exchange outages; forward-fill is wrong there",
        "duplicated rows in the trade export come from partial fills",
        "timestamps in the old brain.db are local time, not UTC",
        "the on-chain dataset misses exchange-internal transfers",
    ),
    "onchain_note": (
        "stablecoin inflows to exchanges rose 30% week over week",
        "miner outflows are at a yearly low",
        "long-term holder supply just hit a new high",
        "exchange netflows for ETH negative for ten days",
        "active addresses on Solana doubled while fees stayed flat",
        "dormant coins from 2017 moved for the first time",
        "the realised price of short-term holders sits just below spot",
        "bridge volume to Base passed Arbitrum this week",
    ),
    "macro_note": (
        "the dollar index broke above its 200-day average",
        "ten-year yields up 25 bps in a week; risk assets wobbling",
        "Japanese yen carry unwind fears returned",
        "jobs report next Friday, consensus 160k",
        "oil spiked on supply news; inflation expectations ticked up",
        "equities and crypto correlation back above 0.6",
        "the Fed's balance sheet runoff is slowing",
        "China announced another stimulus package",
    ),
    "reflection": (
        "spent too long polishing a report nobody asked for",
        "good day: three tasks done, no context switches",
        "I answered before fully reading Priya's question",
        "asking one clarifying question early saved an hour",
        "I kept the user waiting while I explored irrelevant files",
        "breaking the migration into checkpoints made it calm",
        "I should have escalated the disk issue earlier",
        "summaries were accurate today, no corrections",
        "got distracted by market moves during a coding task",
        "I repeated the same failing command three times before rethinking",
    ),
    "tool_note": (
        "the shell tool truncates output past 30k characters, redirect to a file",
        "the calendar API returns times in the organiser's timezone",
        "the browser tool can't handle pages behind Cloudflare challenges",
        "the Telegram bot silently drops messages over 4096 characters",
        "the spreadsheet tool rounds to two decimals on export",
        "file search is faster with a path prefix",
        "the PDF reader misses text in scanned documents",
        "the exchange MCP server needs a restart after key rotation",
    ),
    "memory_note": (
        "memories tagged 'people' are retrieved most often",
        "the dedupe pass removed 41 exact duplicates last night",
        "some memories have no categories; the importer should default them",
        "importance of old trading notes is inflated compared to recent ones",
        "the journal extractor misses decisions phrased as questions",
        "retrieval latency is 30 ms at the current store size",
        "memories written by cron have no session id, which is fine",
        "the atom graph has 212 atoms, 38 with confidence above 0.9",
    ),
    "plan_items": (
        "finish the risk engine tests, review Priya's PR, weekly report draft",
        "migrate the price-feed config, check backups, reply to Elena",
        "research the new data vendor, update the trading journal, clean up DNS records",
        "write the post-mortem, rotate the old API keys, plan next week",
        "pair on the scheduler refactor, fix the flaky test, update docs",
        "prepare Matthew's summary, benchmark the retrieval change, inbox zero",
    ),
    "mistake": (
        "sent the draft report to the wrong Telegram chat",
        "edited the production config instead of staging",
        "used UTC when Matthew meant Eastern time for the meeting",
        "left a debug flag on in the price-feed deploy",
        "forgot to attach the file I mentioned",
        "ran the expensive query on the primary instead of the replica",
        "misread a 0.5% move as 5% in the morning note",
        "scheduled two jobs for the same slot",
    ),
    "mistake_fix": (
        "Corrected within minutes and noted it.",
        "Added a confirmation step for this.",
        "Fixed and told the people affected.",
        "A checklist item now covers it.",
        "Harmless this time, but a reminder to slow down.",
    ),
    "token_note": (
        "412k tokens, a third of it reading logs",
        "quiet day at 96k tokens",
        "the research session alone used 230k tokens",
        "caching saved an estimated 150k tokens",
        "spent 60k tokens on a dead-end investigation",
        "under budget all week",
    ),
    "audit_finding": (
        "an old user account from a former contractor still existed",
        "SSH allowed password authentication for one user",
        "a world-readable backup file in /tmp",
        "the firewall allowed 5432 from anywhere",
        "unattended security upgrades were disabled",
        "a cron job ran as root although it didn't need to",
        "no disk encryption on the laptop backup drive",
        "the metrics endpoint exposed without auth",
    ),
    "secret": (
        "the Grafana admin password",
        "the Telegram bot token",
        "the S3 access keys for backups",
        "the webhook signing secret",
        "the Postgres replication password",
        "the OpenAI key used by the old summarizer",
    ),
    "rotation_note": (
        "on schedule; 90-day cycle",
        "after a contractor left",
        "because it had been in a screenshot",
        "and moved it to the secrets manager",
        "and confirmed every consumer picked up the new value",
        "and revoked the old one after 24 hours",
    ),
    "suspicious": (
        "a login to the Grafana admin from an unknown ASN, turned out to be Priya on hotel Wi-Fi",
        "outbound traffic spike from worker-03 at 04:00, it was the backup sync",
        "a GitHub OAuth app requested repo scope, denied it",
        "someone registered a typosquat of helios.dev",
        "password reset emails for Matthew's account he didn't request",
        "port scan from a cloud provider range against the gateway",
    ),
    "hardening": (
        "enabled unattended-upgrades for security patches on all hosts",
        "moved the admin panels behind Tailscale",
        "turned on 2FA enforcement for the GitHub org",
        "restricted the backup bucket to the backup role only",
        "added CAA records for helios.dev",
        "set up auditd on the bastion",
    ),
    "advisory": (
        "OpenSSH regreSSHion-style bug, our version is patched",
        "a malicious npm package typosquatting a popular HTTP client, not in our lockfiles",
        "a Linux kernel privilege escalation, reboot scheduled after patching",
        "a wallet drainer kit targeting Discord users",
        "an exchange API key leak via a browser extension",
        "a supply-chain attack on a GitHub Action, we pin by SHA so we're fine",
    ),
    "invoice": (
        "hosting provider invoice of $412 for October, paid",
        "market-data vendor billed annually by mistake; asked for a correction",
        "LLM API invoice $118, within budget",
        "domain registrar charged for privacy protection twice",
        "the colo invoice arrived in EUR; Sam wants it converted at the invoice date",
        "GPU rental $96 for the benchmark week",
    ),
    "calendar_item": (
        "Matthew's dentist appointment moved to Tuesday 15:00 ET",
        "quarterly review with Sam on the 12th",
        "on-call handover every Monday 14:00 UTC",
        "Elena's workshop talk on the 19th, Matthew wants to attend remotely",
        "tax filing deadline reminder set for the 30th",
        "team offsite tentatively in March",
    ),
    "subscription": (
        "cancelled the unused screenshot tool ($12/month)",
        "upgraded the password manager to the team plan",
        "the news API trial converts to paid on the 3rd",
        "switched the status page to the free tier",
        "annual plan for the monitoring SaaS is 20% cheaper",
        "TradingView renewal moved to Matthew's card",
    ),
    "renewal": (
        "helios.dev domain expires in 6 weeks, auto-renew is on",
        "the exchange KYC re-verification is due next month",
        "business insurance renewal documents arrive in December",
        "the colo contract auto-renews in 60 days unless cancelled",
        "the code-signing certificate expires in March",
    ),
    "paperwork": (
        "filed the exchange statements for the accountant",
        "signed the contractor NDA for Lena",
        "scanned the hardware receipts for the tax folder",
        "submitted the data vendor's compliance questionnaire",
        "updated the company address at the bank",
    ),
    "travel": (
        "booked the Lisbon flight for the 18th, aisle seat as usual",
        "hotel near the venue, late check-out requested",
        "train tickets to the offsite, refundable fare",
        "reminded him his passport expires in eight months",
        "found a lounge pass on the layover",
    ),
}

_TICKER_PRICES: dict[str, tuple[float, float, int]] = {
    "BTC": (88000, 104000, 0),
    "ETH": (2900, 3900, 0),
    "SOL": (150, 240, 2),
    "AVAX": (28, 46, 2),
    "LINK": (13, 22, 2),
    "ARB": (0.6, 1.2, 3),
    "OP": (1.4, 2.6, 3),
    "DOGE": (0.11, 0.19, 4),
    "TIA": (5, 9, 2),
    "INJ": (18, 31, 2),
    "SUI": (2.1, 3.9, 3),
    "NEAR": (4.2, 6.8, 2),
    "ATOM": (5.5, 8.9, 2),
    "AAVE": (140, 260, 2),
}

_SLOT_RE = re.compile(r"\{(\w+)\}")


class _Filler:
    """Fills ``{slot}`` placeholders; pools are dealt like shuffled decks.

    Why decks: drawing without replacement keeps two singletons from the same
    frame from also sharing their main slot value, so they stay dissimilar.
    """

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self._decks: dict[str, list[str]] = {}

    def draw(self, name: str) -> str:
        deck = self._decks.get(name)
        if not deck:
            deck = list(_P[name])
            self.rng.shuffle(deck)
            self._decks[name] = deck
        return deck.pop()

    def value(self, name: str, when: datetime, cache: dict[str, str]) -> str:
        if name in cache:
            return cache[name]
        rng = self.rng
        if name.endswith("_l") and name[:-2] in _P:
            value = self.value(name[:-2], when, cache).lower().replace("the ", "").replace(" ", "-")
        elif name == "ticker2":
            value = rng.choice([t for t in _P["ticker"] if t != self.value("ticker", when, cache)])
        elif name == "venue2":
            value = rng.choice([v for v in _P["venue"] if v != self.value("venue", when, cache)])
        elif name == "tprice":
            lo, hi, digits = _TICKER_PRICES[self.value("ticker", when, cache)]
            price = rng.uniform(lo, hi)
            value = f"{price:,.0f}" if digits == 0 else f"{price:.{digits}f}"
        elif name in _P:
            value = self.draw(name)
        else:
            value = self._number(name, when)
        cache[name] = value
        return value

    def _number(self, name: str, when: datetime) -> str:
        rng = self.rng
        if name == "n1":
            return str(rng.randint(2, 9))
        if name == "n2":
            return str(rng.randint(12, 95))
        if name == "n3":
            return str(rng.randint(120, 980))
        if name == "pct":
            return f"{rng.uniform(1.2, 9.5):.1f}"
        if name == "pr":
            return str(rng.randint(380, 990))
        if name == "ms":
            return str(rng.randint(450, 2600))
        if name == "gb":
            return f"{rng.uniform(5.5, 7.9):.1f}"
        if name == "gwei":
            return str(rng.randint(45, 160))
        if name == "btc":
            return f"{rng.randint(880, 1040) * 100:,}"
        if name == "sha":
            return f"{rng.getrandbits(28):07x}"
        if name == "sharpe":
            return f"{rng.uniform(-0.4, 2.1):.2f}"
        if name == "usd":
            return f"{rng.choice(['$', ''])}{rng.randint(2, 60) * 500:,} USDC"
        if name == "pnl":
            if rng.random() < 0.5:
                return f"{rng.choice(['+', '-'])}{rng.uniform(0.3, 3.2):.1f}R"
            return f"{rng.choice(['+', '-', '+'])}${rng.randint(40, 2400):,}"
        if name == "hhmm":
            return f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}"
        if name == "dow":
            return when.strftime("%A")
        if name == "date":
            return when.strftime("%b %d")
        raise KeyError(f"unknown sample slot {{{name}}}")

    def fill(self, template: str, when: datetime, cache: dict[str, str] | None = None) -> str:
        cache = {} if cache is None else cache
        return _SLOT_RE.sub(lambda m: self.value(m.group(1), when, cache), template)


# ---------------------------------------------------------------------------
# Generation
# ---------------------------------------------------------------------------


def _as_utc(now: datetime) -> datetime:
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError("now must be timezone-aware (UTC); got a naive datetime")
    return now.astimezone(UTC).replace(microsecond=0)


def _iso(ts: datetime) -> str:
    return ts.isoformat(timespec="seconds")


def _clip(value: float, lo: float = 0.5, hi: float = 2.4) -> float:
    return round(min(hi, max(lo, value)), 2)


def _old_age(rng: random.Random, day: int) -> timedelta:
    """An age on calendar-ish day ``day`` (≥ 1), always at least 26 h old."""
    return timedelta(days=day, hours=rng.uniform(2.0, 22.0))


def _member_combos(rng: random.Random, fam: _Family, k: int) -> list[tuple[int, int]]:
    """Pick k distinct (head, tail) pairs, each head repeated so members link.

    Why: MiniLM scores members sharing a head at ~0.9 and those sharing only the
    meaning at ~0.7, so every head is used at least twice where possible and
    consecutive heads share a tail: the family then forms one component.
    """
    heads = list(range(len(fam.heads)))
    tails = list(range(len(fam.tails)))
    rng.shuffle(heads)
    rng.shuffle(tails)
    chosen: list[tuple[int, int]] = []
    ti = 0
    for h in heads:
        for _ in range(2):
            pair = (h, tails[ti % len(tails)])
            if pair not in chosen:
                chosen.append(pair)
            ti += 1
    rest = [(h, t) for h in heads for t in tails if (h, t) not in chosen]
    rng.shuffle(rest)
    chosen.extend(rest)
    return chosen[:k]


def _family_drafts(rng: random.Random) -> list[_Draft]:
    drafts: list[_Draft] = []
    sizes = (3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 9, 10, 11, 12, 13, 14, 15)
    for fam in _FAMILIES:
        combos = len(fam.heads) * len(fam.tails)
        k = min(combos, 15, rng.choice(sizes))
        k = max(k, 3)
        base = rng.uniform(1.1, 1.9) if fam.causal else rng.uniform(0.7, 1.5)
        days = rng.sample(range(1, _SPAN_DAYS - 4), k)
        cats = list(fam.categories)
        for (h, t), day in zip(_member_combos(rng, fam, k), days, strict=True):
            drafts.append(
                _Draft(
                    template=f"{fam.heads[h]} {fam.tails[t]}",
                    categories=cats,
                    tags=list(fam.tags) + (["lesson"] if fam.causal else []),
                    nexus=list(fam.nexus),
                    importance=_clip(rng.gauss(base, 0.22)),
                    source=rng.choice(("reflection", "session", "agent") if fam.causal else ("session", "agent", "heartbeat")),
                    age=_old_age(rng, day),
                    family=fam.key,
                )
            )
    return drafts


def _singleton_drafts(rng: random.Random) -> list[_Draft]:
    drafts: list[_Draft] = []
    for category, count in _SINGLETON_COUNTS.items():
        frames = _FRAMES[category]
        order = [frames[i % len(frames)] for i in range(count)]
        rng.shuffle(order)
        for frame in order:
            day = min(_SPAN_DAYS, int(_SPAN_DAYS * rng.random() ** 1.25) + 1)
            drafts.append(
                _Draft(
                    template=frame.text,
                    categories=[category],
                    tags=list(frame.tags),
                    nexus=list(frame.nexus),
                    importance=_clip(rng.triangular(0.5, 2.2, 0.9)),
                    source=rng.choice(_SOURCES[category]),
                    age=_old_age(rng, day),
                )
            )
    return drafts


def _core_drafts(rng: random.Random) -> list[_Draft]:
    drafts = []
    for category, text, importance, pinned, locked in _CORE:
        drafts.append(
            _Draft(
                template=text,
                categories=[category, "rules"] if importance >= _CRITICAL else [category],
                tags=["rule"] if importance >= _CRITICAL else ["preferences"],
                nexus=[f"rule:{category}"],
                importance=importance,
                source="session",
                age=_old_age(rng, rng.randint(10, _SPAN_DAYS)),
                pinned=pinned,
                locked=locked,
                special=True,
            )
        )
    return drafts


def _mark_specials(rng: random.Random, drafts: list[_Draft]) -> None:
    """Put critical / pinned / locked / fresh cases inside families and singletons.

    Why: every eligibility filter of the engine must have something to exclude,
    including members of a family that would otherwise be compressed. Each
    family gets at most one special member and keeps ≥ 5 eligible members.
    """
    by_family: dict[str, list[_Draft]] = {}
    for d in drafts:
        if d.family:
            by_family.setdefault(d.family, []).append(d)
    big = [key for key, members in by_family.items() if len(members) >= 7]
    rng.shuffle(big)
    plan = ["critical"] * 5 + ["pinned"] * 3 + ["locked"] * 2 + ["fresh"] * 5
    for kind, key in zip(plan, big, strict=False):
        member = rng.choice(by_family[key])
        member.special = True
        if kind == "critical":
            member.importance = round(rng.uniform(2.55, 2.95), 2)
        elif kind == "pinned":
            member.pinned = True
        elif kind == "locked":
            member.locked = True
        else:
            member.age = timedelta(hours=rng.uniform(1.0, 22.0))
    singles = [d for d in drafts if not d.family and not d.special]
    for d in rng.sample(singles, 14):
        d.age = timedelta(hours=rng.uniform(0.3, 23.0))
        d.special = True


def _earlier_run(rng: random.Random) -> list[_Draft]:
    """Sources and summary of a compression that happened nine days ago."""
    drafts = []
    for text in _EARLIER_SOURCES:
        prior = _clip(rng.uniform(0.9, 1.9))
        drafts.append(
            _Draft(
                template=text,
                categories=["ops"],
                tags=["backup", "nas-01", "usb"],
                nexus=["host:nas-01", "job:nightly-backup"],
                importance=0.5,
                source=rng.choice(("heartbeat", "agent")),
                age=_old_age(rng, rng.randint(16, _SPAN_DAYS)),
                lifecycle="archived",
                role="archived-source",
                extra={"prior_importance": prior},
            )
        )
    priors = [d.extra["prior_importance"] for d in drafts]
    drafts.append(
        _Draft(
            template=_EARLIER_SUMMARY,
            categories=["ops", "compressed"],
            tags=["backup", "nas-01", "usb", "compressed"],
            nexus=["host:nas-01", "job:nightly-backup"],
            importance=max(1.0, max(priors)),
            source="abstraction-engine",
            age=timedelta(days=9),  # replaced by the 03:30 run time below
            kind="summary",
            role="summary",
        )
    )
    return drafts


def _build(now: datetime, seed: int) -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
    now = _as_utc(now)
    rng = random.Random(seed)
    drafts = _family_drafts(rng) + _singleton_drafts(rng) + _core_drafts(rng)
    _mark_specials(rng, drafts)
    earlier = _earlier_run(rng)
    drafts += earlier
    run_at = (now - timedelta(days=9)).replace(hour=3, minute=30, second=0)
    filler = _Filler(rng)

    rows: list[tuple[datetime, int, _Draft, str, list[str], list[str]]] = []
    for index, d in enumerate(drafts):
        when = run_at if d.role == "summary" else now - d.age
        cache: dict[str, str] = {}
        text = filler.fill(d.template, when, cache)
        tags = _unique(filler.fill(t, when, cache) for t in d.tags)
        nexus = _unique(filler.fill(n, when, cache) for n in d.nexus)
        rows.append((when, index, d, text, tags, nexus))
    rows.sort(key=lambda r: (r[0], r[1]))

    records: list[dict[str, Any]] = []
    families: dict[str, list[str]] = {}
    record_of: dict[int, dict[str, Any]] = {}
    for number, (when, index, d, text, tags, nexus) in enumerate(rows, start=1):
        record = {
            "id": f"m-{number:06d}",
            "content": text,
            "importance": d.importance,
            "categories": list(d.categories),
            "tags": tags,
            "nexus_keys": nexus,
            "kind": d.kind,
            "source": d.source,
            "session_id": f"s-{when:%Y%m%d}-{'abcd'[when.hour // 6]}" if d.source == "session" else None,
            "created_at": _iso(when),
            "pinned": d.pinned,
            "locked": d.locked,
            "lifecycle": d.lifecycle,
            "compressed_from": None,
            "archived_by": None,
            "archived_at": None,
            "prior_importance": None,
        }
        records.append(record)
        record_of[index] = record
        if d.family:
            families.setdefault(d.family, []).append(record["id"])

    sources = [record_of[i] for i, d in enumerate(drafts) if d.role == "archived-source"]
    summary = next(record_of[i] for i, d in enumerate(drafts) if d.role == "summary")
    source_ids = sorted(r["id"] for r in sources)
    fingerprint = hashlib.sha256(",".join(source_ids).encode()).hexdigest()
    words_in = sum(len(r["content"].split()) for r in sources)
    for r, d in zip(sources, (d for d in drafts if d.role == "archived-source"), strict=True):
        r["archived_by"] = f"cluster-{fingerprint[:16]}"
        r["archived_at"] = _iso(run_at)
        r["prior_importance"] = d.extra["prior_importance"]
    dates = sorted(r["created_at"] for r in sources)
    summary["compressed_from"] = {
        "source_ids": source_ids,
        "compression_ratio": round(words_in / len(summary["content"].split()), 2),
        "cluster_size": len(source_ids),
        "distilled_at": _iso(run_at),
        "source_date_range": [dates[0], dates[-1]],
    }
    return records, {key: families[key] for key in sorted(families)}


def _unique(items: Iterable[str]) -> list[str]:
    out: list[str] = []
    for item in items:
        if item not in out:
            out.append(item)
    return out


def generate_sample(now: datetime, seed: int = DEFAULT_SEED) -> list[dict[str, Any]]:
    """Build the sample memory store as JSON-ready dicts (see module docstring).

    Same ``now`` and ``seed`` → identical output; ``now`` must be tz-aware.
    """
    return _build(now, seed)[0]


def generate_sample_with_families(
    now: datetime, seed: int = DEFAULT_SEED
) -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
    """The sample plus its paraphrase families (family key → member ids).

    Why: tests and benchmarks of the clustering can compare the clusters they
    find with the families the sample was written to contain.
    """
    return _build(now, seed)


def write_sample_jsonl(path: Path, now: datetime, seed: int = DEFAULT_SEED) -> int:
    """Write the sample as JSONL (one UTF-8 object per line); return the count."""
    records = generate_sample(now, seed)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        for record in records:
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
    return len(records)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m memory_pipeline.sample_data OUT.jsonl [--now ISO] [--seed N]``."""
    parser = argparse.ArgumentParser(description="Write the sample memory store as JSONL.")
    parser.add_argument("path", type=Path)
    parser.add_argument("--now", help="ISO-8601 reference time (default: current UTC time)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    args = parser.parse_args(argv)
    if args.now:
        now = datetime.fromisoformat(args.now.replace("Z", "+00:00"))
        if now.tzinfo is None:
            now = now.replace(tzinfo=UTC)
    else:
        now = datetime.now(UTC)
    count = write_sample_jsonl(args.path, now, args.seed)
    print(f"wrote {count} memories to {args.path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
