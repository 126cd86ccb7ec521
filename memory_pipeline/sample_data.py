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
    cap: int | None = None  # lower the use limit when the fixed wording dominates


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
            "Whale wallets accumulated about {n1}k BTC over {n1} days while BTC price went sideways.",
            "On-chain: BTC whale wallets kept accumulating this week, roughly {n1}k BTC added by the large wallets.",
            "Whale wallets are accumulating BTC again; the 1k+ BTC wallets have added coins every day since {dow}.",
            "Noticed BTC whale wallets accumulating quietly on the dip, about {n1}k BTC in a few days.",
            "Sustained BTC accumulation by whale wallets: the big wallets added coins {n1} days in a row.",
        ),
        (
            "BTC price rose {pct}% within two days, as it did the last time whales accumulated.",
            "As before, the whale accumulation preceded a BTC price rise of {pct}% two days later.",
            "Again the whale accumulation came first and the BTC price rise followed within 48 hours.",
            "Pattern holds: whale accumulation of BTC precedes a price rise within 1-3 days.",
        ),
        causal=True,
    ),
    _f(
        "trading.funding-squeeze",
        ("trading",),
        ("perps", "funding", "liquidations"),
        ("signal:funding-rate",),
        (
            "ETH perp funding hit +0.0{n1}% per 8h; crowded longs paying extreme funding.",
            "Extreme positive funding on ETH perps again, the crowded longs paying over 0.05% every 8h.",
            "ETH perp funding went extremely positive while open interest climbed; longs very crowded.",
            "Funding on ETH perps at an extreme positive level, crowded longs paying heavily to stay in.",
        ),
        (
            "A long squeeze followed within a day: ETH dumped {pct}% and the crowded longs got liquidated.",
            "As usual the extreme funding ended in a long squeeze, ETH down {pct}% with cascading long liquidations.",
            "The long squeeze came within 24h; ETH fell {pct}% and liquidations flushed the crowded longs.",
        ),
        causal=True,
    ),
    _f(
        "trading.illiquid-slippage",
        ("trading",),
        ("execution", "slippage", "alts"),
        ("topic:execution",),
        (
            "Market order on the thin JTO/USDT book slipped {pct}% against the quote.",
            "Lost {pct}% to slippage with a market order on the illiquid JTO/USDT pair.",
            "The JTO/USDT order book was thin and my market order slipped {pct}% through several levels.",
            "Slippage on the illiquid JTO/USDT pair again: the market order filled {pct}% worse than mid.",
        ),
        (
            "Use limit orders on illiquid pairs like JTO, never market orders.",
            "On thin altcoin books like JTO, only limit orders; market orders cost too much slippage.",
            "Rule for illiquid pairs such as JTO: limit orders only, accept a slower fill.",
        ),
    ),
    _f(
        "trading.asia-fakeout",
        ("trading",),
        ("breakout", "fakeout", "volume"),
        ("pattern:low-volume-breakout",),
        (
            "Bought a SOL breakout during the Asian session on low volume.",
            "Chased a SOL range breakout in the low-volume Asian session around 02:00 UTC.",
            "Entered a SOL breakout during the quiet Asian session without volume confirmation.",
            "Took the overnight SOL breakout in the Asian session although volume was low.",
        ),
        (
            "It was a fakeout: the low-volume breakout fell back into the range and stopped me out.",
            "Fakeout again: the low-volume breakout fell back into the range and hit my stop for -{pct}%.",
            "The low-volume breakout was a fakeout, back in the range and stopped me out.",
        ),
        causal=True,
    ),
    _f(
        "trading.cpi-whipsaw",
        ("trading",),
        ("macro", "cpi", "volatility"),
        ("event:cpi",),
        (
            "BTC whipsawed {pct}% in both directions within minutes of the US CPI release.",
            "The US CPI release whipsawed BTC violently in both directions again.",
            "BTC whipsawed up and down right after the US CPI release and hit my stop.",
            "Another US CPI release, another BTC whipsaw in both directions within minutes.",
        ),
        (
            "No new positions before a CPI release; stay flat into the whipsaw.",
            "Stay flat before a CPI release and avoid the whipsaw.",
            "No new positions into a CPI release; the whipsaw hits both sides.",
        ),
        causal=True,
    ),
    _f(
        "trading.sol-stop-wicks",
        ("trading",),
        ("sol", "stops", "risk"),
        ("ticker:SOL",),
        (
            "A wick took out my tight SOL stop {pct}% below entry, then SOL rallied.",
            "Again a wick took out my tight stop on SOL right before SOL rallied.",
            "My tight SOL stop was taken out by a wick and SOL immediately rallied.",
            "The tight stop on my SOL long got wicked out, then SOL rallied without me.",
        ),
        (
            "SOL needs wider ATR-based stops, not tight stops.",
            "Use wider ATR-based stops on SOL instead of tight stops.",
            "Tight stops don't work on SOL; use wider ATR-based stops.",
        ),
    ),
    _f(
        "trading.binance-429",
        ("trading", "ops"),
        ("binance", "rate-limit", "trade-executor"),
        ("service:trade-executor", "venue:binance"),
        (
            "trade-executor hit Binance 429 rate limit errors during the {hhmm} UTC volatility spike; {n1} orders "
            "failed.",
            "Binance returned HTTP 429 rate limit errors to trade-executor when price moved fast; orders failed.",
            "trade-executor got rate limited by Binance (HTTP 429) in a volatile candle and {n1} orders failed.",
            "Orders from trade-executor failed on Binance 429 rate limits during a volatility spike.",
        ),
        (
            "Order status polling burns the Binance rate limit; use the websocket user stream instead.",
            "Stop polling Binance for order status and keep the rate limit for placing orders.",
            "Move trade-executor order status to the Binance websocket so polling stops eating the rate limit.",
        ),
    ),
    _f(
        "trading.gas-rebalance",
        ("trading",),
        ("defi", "gas", "ethereum"),
        ("topic:defi",),
        (
            "Ethereum gas at {gwei} gwei made the small Uniswap LP rebalance cost more in gas than it earns.",
            "Gas spiked to {gwei} gwei on Ethereum and the small Uniswap LP rebalance became unprofitable.",
            "Rebalancing the small Uniswap LP position on Ethereum mainnet at {gwei} gwei costs more gas than the "
            "yield.",
            "Paid ${n2} of Ethereum gas at {gwei} gwei for the small Uniswap LP rebalance; more gas than it earns.",
        ),
        (
            "Only do small LP rebalances on an L2 or when gas is under 15 gwei.",
            "Do small LP rebalances on an L2 or only when gas is under 15 gwei.",
            "Small LP rebalances only on an L2 or when gas is below 15 gwei.",
        ),
    ),
    _f(
        "trading.position-sizing",
        ("trading", "lessons"),
        ("risk", "position-size"),
        ("rule:risk-per-trade",),
        (
            "Risked {pct}% of the account on one AVAX trade, breaking my 2% risk-per-trade rule.",
            "Broke the 2% risk-per-trade rule on AVAX: oversized the position to about {n1}x normal risk.",
            "Oversized an AVAX trade because I felt sure, risking well over the 2% per-trade rule.",
            "Ignored the 2% risk-per-trade rule and oversized a high-conviction AVAX trade.",
        ),
        (
            "The oversized AVAX loss wiped out a week of gains; keep risk per trade at 2%.",
            "The stop hit and the oversized loss became the month's biggest drawdown; the 2% rule exists for this.",
            "It went against me and the oversized loss cost {pct}% of equity; never break the 2% rule.",
        ),
        causal=True,
    ),
    _f(
        "trading.cme-gap",
        ("trading",),
        ("btc", "cme", "gap"),
        ("ticker:BTC", "venue:cme"),
        (
            "BTC CME futures opened Sunday with a gap at {btc} after the weekend move.",
            "The weekend move left another unfilled BTC CME futures gap at {btc}.",
            "Noticed a BTC CME gap at {btc} between Friday's close and Sunday's open.",
        ),
        (
            "The BTC CME gap filled within two days, like most CME gaps.",
            "BTC came back and filled the CME gap by Tuesday; CME gaps usually fill early in the week.",
            "As usual the BTC CME gap got filled within 48 hours.",
        ),
    ),
    _f(
        "trading.revenge-trading",
        ("trading", "lessons"),
        ("psychology", "tilt"),
        ("pattern:revenge-trading",),
        (
            "Revenge trade on LINK: re-entered bigger right after the stop-out, no setup.",
            "Right after the LINK stop-out I revenge traded with bigger size, no setup.",
            "Took a bigger revenge trade on LINK minutes after getting stopped out, without a setup.",
            "After getting stopped out of LINK I opened a bigger revenge trade with no setup.",
        ),
        (
            "The revenge trade doubled the loss; cool down for an hour after a stop-out.",
            "The revenge trade lost again and doubled the loss; take a cooldown after a stop-out.",
            "Revenge trading doubled the loss again; one-hour cooldown after every stop-out.",
        ),
        causal=True,
    ),
    _f(
        "trading.kraken-withdrawal",
        ("trading",),
        ("kraken", "withdrawal", "transfers"),
        ("venue:kraken",),
        (
            "Kraken withdrawal of ETH stuck in 'pending' for {n1} hours.",
            "Kraken ETH withdrawal delayed again, pending for {n1}h before it went through.",
            "ETH withdrawal from Kraken stuck as pending for hours; support blamed the hot wallet.",
            "My Kraken ETH withdrawal sat pending most of the afternoon.",
        ),
        (
            "Don't count on same-day Kraken withdrawals for time-sensitive moves.",
            "Plan Kraken withdrawals a day ahead; they get stuck pending.",
            "Keep a buffer off Kraken because withdrawals can be delayed for hours.",
        ),
    ),
    # --------------------------------------------------------------------- ops
    _f(
        "ops.friday-deploy-no-canary",
        ("ops", "lessons"),
        ("deploy", "canary", "outage"),
        ("practice:canary-deploys", "service:cortex-api"),
        (
            "Deployed cortex-api on Friday evening to all hosts without a canary.",
            "Friday deploy of cortex-api went to every host at once, no canary.",
            "Pushed the cortex-api release on a Friday straight to all hosts and skipped the canary.",
            "Shipped cortex-api to production late on Friday without a canary deploy.",
            "Rolled out cortex-api to all hosts on Friday afternoon, skipping the canary.",
        ),
        (
            "The deploy without a canary caused a weekend outage and a rollback on Saturday.",
            "It caused an outage over the weekend, {n1}h of 5xx errors until the rollback.",
            "Result: a weekend outage that a canary would have caught; rolled back on Saturday.",
            "Deploying without a canary on a Friday caused an outage over the weekend again.",
        ),
        causal=True,
    ),
    _f(
        "ops.db03-wal",
        ("ops",),
        ("postgres", "disk", "db-03"),
        ("host:db-03", "service:postgres"),
        (
            "db-03 disk at {n2}%: Postgres WAL in pg_wal grew to {n3} GB.",
            "Disk on db-03 filling up again with Postgres WAL that isn't being recycled.",
            "Postgres WAL piling up on db-03 and filling the disk; pg_wal at {n3} GB.",
            "db-03 disk almost full because of Postgres WAL build-up in pg_wal.",
        ),
        (
            "The stale replication slot 'replica_old' keeps the WAL from being removed; drop the slot.",
            "Cause: the inactive replication slot 'replica_old' retains WAL; dropping it frees the disk.",
            "The WAL is held by the unused replication slot 'replica_old'; drop it and alert on inactive slots.",
        ),
    ),
    _f(
        "ops.backup-dedupe-lock",
        ("ops",),
        ("cron", "brain.db", "backup"),
        ("db:brain.db", "job:cortex_dedupe"),
        (
            "The 03:00 brain.db backup and cortex_dedupe ran at the same time and fought over the brain.db lock.",
            "brain.db lock contention at 03:00: the nightly backup and cortex_dedupe overlapped again.",
            "The nightly brain.db backup collided with cortex_dedupe at 03:00 and dedupe failed on the lock.",
            "Nightly backup of brain.db held the lock while cortex_dedupe tried to write at 03:00.",
        ),
        (
            "Serialise the nightly jobs on brain.db: backup first, then cortex_dedupe.",
            "Move the brain.db backup to 02:30 so it finishes before cortex_dedupe starts.",
            "Wrap the backup and cortex_dedupe in flock so they queue on the brain.db lock.",
        ),
    ),
    _f(
        "ops.certbot-dns",
        ("ops",),
        ("tls", "certbot", "dns"),
        ("host:api-gw-1", "domain:api.helios.dev"),
        (
            "certbot renewal for api.helios.dev failed on the DNS-01 challenge: TXT record not found.",
            "The api.helios.dev certificate renewal keeps failing; certbot's DNS-01 challenge gets NXDOMAIN for the "
            "TXT record.",
            "certbot could not renew api.helios.dev again: DNS-01 challenge failed, no _acme-challenge TXT record.",
            "TLS cert for api.helios.dev expires in {n1} days and certbot renewal fails on the DNS-01 challenge.",
        ),
        (
            "The DNS API token certbot uses had expired; a new token fixed the renewal.",
            "Cause: expired DNS API token for certbot; rotating the token made renewal work.",
            "Renewal depends on certbot's DNS API token, which had expired; track its expiry.",
        ),
    ),
    _f(
        "ops.ingest-oom",
        ("ops", "coding"),
        ("oom", "memory-leak", "ingest-worker"),
        ("service:ingest-worker", "host:ingest-02"),
        (
            "ingest-worker on ingest-02 OOM-killed again after about {n2} hours of uptime.",
            "OOM killer took out ingest-worker on ingest-02 once its memory reached {gb} GB.",
            "ingest-worker memory on ingest-02 grows steadily until it gets OOM-killed every day or two.",
            "Another OOM kill of ingest-worker on ingest-02; the memory leak is still there.",
        ),
        (
            "The ingest-worker leak is the dedupe cache that never evicts; it needs an LRU bound.",
            "Memory leak suspect: ingest-worker's unbounded dedupe cache; bound it with an LRU.",
            "Heap profile blames ingest-worker's dedupe cache for the leak; cap it with an LRU.",
        ),
    ),
    _f(
        "ops.redis-eviction",
        ("ops",),
        ("redis", "cache", "latency"),
        ("host:cache-02", "service:redis"),
        (
            "Redis on cache-02 hit maxmemory and started evicting keys; API p95 latency jumped to {ms} ms.",
            "Redis evictions on cache-02 after reaching maxmemory, and API latency spiked to {ms} ms.",
            "cache-02 Redis full at maxmemory, evicting keys; requests fell through and p95 latency hit {ms} ms.",
        ),
        (
            "Keys without a TTL fill Redis; set TTLs on the session keys.",
            "The session keys in Redis have no TTL; add TTLs so cache-02 stops filling up.",
            "Redis fills because session keys never expire; give them a TTL.",
        ),
    ),
    _f(
        "ops.ci-docker-cache",
        ("ops", "coding"),
        ("ci", "docker", "build-cache"),
        ("topic:ci",),
        (
            "CI Docker build took {n2} minutes again; no layer cache, every layer rebuilt.",
            "The Docker build in CI ignores the layer cache and rebuilds every layer, {n2} minutes per push.",
            "CI Docker builds are slow, {n2} minutes, because the layer cache is not used and every layer rebuilds.",
        ),
        (
            "Enable the buildx layer cache and copy requirements before the source in the Dockerfile.",
            "Fix: buildx layer cache plus a Dockerfile that copies requirements before the source.",
            "Reorder the Dockerfile (requirements before source) and turn on the buildx layer cache.",
        ),
    ),
    _f(
        "ops.pg-connections",
        ("ops",),
        ("postgres", "connections", "pgbouncer"),
        ("host:db-01", "service:cortex-api"),
        (
            "Postgres on db-01 ran out of connections under load from cortex-api: 'remaining connection slots are "
            "reserved'.",
            "db-01 Postgres ran out of connections during the traffic spike, {n3} cortex-api connections open.",
            "cortex-api exhausted the Postgres connections on db-01; each worker opened its own pool.",
            "Postgres on db-01 ran out of connections ('too many connections') when cortex-api and the batch job ran "
            "together.",
        ),
        (
            "Put pgbouncer in front of Postgres and cap the pool size per worker.",
            "Fix: pgbouncer in front of Postgres and a smaller pool size per worker.",
            "pgbouncer plus a capped pool size per worker keeps Postgres under max_connections.",
        ),
    ),
    _f(
        "ops.dns-ttl-failover",
        ("ops",),
        ("dns", "failover"),
        ("domain:api.helios.dev",),
        (
            "Failover of api.helios.dev to the standby took {n2} minutes because the DNS TTL was 3600s.",
            "Clients kept resolving api.helios.dev to the dead primary for an hour after failover; DNS TTL was 3600s.",
            "The one-hour DNS TTL on api.helios.dev made the failover to the standby take almost an hour.",
        ),
        (
            "Lower the DNS TTL on failover records to 60 seconds.",
            "Failover records need a short DNS TTL; set api.helios.dev to 60s.",
            "Set a 60 second DNS TTL on every record used for failover.",
        ),
    ),
    _f(
        "ops.alert-fatigue",
        ("ops", "lessons"),
        ("alerting", "alert-fatigue"),
        ("practice:alerting",),
        (
            "Alert fatigue: I've been acking the noisy disk alerts on autopilot.",
            "The noisy disk alerts trained me to ack everything without reading; alert fatigue.",
            "So many false disk alerts that I dismiss them on autopilot; classic alert fatigue.",
            "Acked the web-04 disk alert without looking, like all the noisy alerts before it.",
        ),
        (
            "Because of the alert fatigue I missed a real incident: web-04 actually ran out of disk.",
            "That's how a real disk-full incident on web-04 slipped past for {n1} hours.",
            "The alert fatigue hid a real problem; web-04 really was out of disk.",
        ),
        causal=True,
    ),
    _f(
        "ops.ntp-drift-jwt",
        ("ops", "security"),
        ("ntp", "jwt", "worker-07"),
        ("host:worker-07",),
        (
            "JWTs from worker-07 rejected as 'not yet valid' because its clock drifted {n1} seconds ahead.",
            "worker-07 clock drift broke JWT validation: tokens rejected as issued in the future.",
            "Auth failures only from worker-07; clock drift made its JWTs 'not yet valid'.",
        ),
        (
            "chrony was not running on worker-07; enabled it and added a clock-skew check.",
            "Cause: chrony stopped on worker-07. Enabled chrony and now monitor clock skew.",
            "Fixed by enabling chrony on worker-07 and alerting on clock skew.",
        ),
    ),
    _f(
        "ops.migration-no-backup",
        ("ops", "lessons"),
        ("postgres", "migrations", "backup"),
        ("host:db-01", "practice:backups"),
        (
            "Ran a schema migration on db-01 without taking a backup first.",
            "Applied a destructive schema migration on db-01 with no fresh backup.",
            "Skipped the backup before the db-01 schema migration because it looked trivial.",
        ),
        (
            "It dropped a column still in use and restoring from an old backup took hours.",
            "Rolling the migration back from an old backup lost {n1} hours of writes.",
            "Needed a restore from yesterday's backup; always back up before a migration.",
        ),
        causal=True,
    ),
    _f(
        "ops.systemd-timer-enable",
        ("ops",),
        ("systemd", "heartbeat", "reboot"),
        ("job:heartbeat", "host:mon-01"),
        (
            "Heartbeat stopped after rebooting mon-01: the systemd timer was started but not enabled.",
            "After the mon-01 reboot the heartbeat systemd timer did not come back; it was never enabled.",
            "No heartbeat for {n1} hours after mon-01 rebooted, because the systemd timer wasn't enabled.",
        ),
        (
            "Use 'systemctl enable --now' for the heartbeat timer, not just start.",
            "Enable the heartbeat systemd timer so it survives reboots.",
            "The heartbeat timer must be enabled, not only started, to survive a reboot.",
        ),
    ),
    # ------------------------------------------------------------------ coding
    _f(
        "coding.flaky-midnight-test",
        ("coding",),
        ("tests", "flaky", "timezone"),
        ("test:test_scheduler_timezone",),
        (
            "test_scheduler_timezone failed again in nightly CI; it only fails around midnight UTC.",
            "Flaky test_scheduler_timezone: green locally, red in the nightly CI run near midnight UTC.",
            "test_scheduler_timezone is flaky in CI: it fails when the run crosses midnight UTC.",
            "Another red nightly CI from test_scheduler_timezone, the midnight UTC boundary again.",
        ),
        (
            "The test calls datetime.now(); inject a fixed clock.",
            "Fix: inject a fixed clock instead of datetime.now() in the test.",
            "Replace datetime.now() in the test with an injected fixed clock.",
        ),
    ),
    _f(
        "coding.lint-before-push",
        ("coding", "lessons"),
        ("ci", "ruff", "lint"),
        ("practice:pre-commit",),
        (
            "Pushed PR #{pr} without running ruff first.",
            "Forgot to run ruff before pushing PR #{pr}.",
            "Pushed PR #{pr} without running ruff locally again.",
            "Didn't run ruff before pushing PR #{pr}.",
        ),
        (
            "CI failed on a ruff lint error and cost a review cycle.",
            "CI failed on ruff lint within a minute and cost a round-trip.",
            "CI failed on a trivial ruff lint error again; install the pre-commit hook.",
        ),
        causal=True,
    ),
    _f(
        "coding.mutable-default",
        ("coding",),
        ("python", "bug"),
        ("lang:python", "module:ingest/parser.py"),
        (
            "Bug in ingest/parser.py: the mutable default argument tags=[] leaked tags between calls.",
            "A mutable default argument (tags=[]) in ingest/parser.py kept state across calls.",
            "ingest/parser.py shared tags between calls because of a mutable default list argument.",
        ),
        (
            "Use None as the default and build the list inside the function.",
            "Fix: default to None and create the list in the function body; ruff B006 catches this.",
            "Replaced the mutable default with None and a new list inside the function.",
        ),
    ),
    _f(
        "coding.blocking-event-loop",
        ("coding",),
        ("asyncio", "websocket", "synapse-bridge"),
        ("service:synapse-bridge",),
        (
            "synapse-bridge websockets stalled because a blocking requests.get ran inside the asyncio event loop.",
            "A blocking HTTP call inside an async handler froze the asyncio event loop and all synapse-bridge "
            "websockets.",
            "Blocking I/O in the asyncio event loop of synapse-bridge stalled every websocket for seconds.",
        ),
        (
            "Move blocking calls off the event loop with asyncio.to_thread or an async client.",
            "Wrapped the blocking call in asyncio.to_thread and the websocket stalls stopped.",
            "Never block the event loop: use asyncio.to_thread or httpx.AsyncClient.",
        ),
    ),
    _f(
        "coding.pagination-off-by-one",
        ("coding",),
        ("pagination", "bug", "export"),
        ("feature:memories-export",),
        (
            "The memories export lost the last record of every page: off-by-one in the pagination cursor.",
            "Off-by-one in the memories export pagination cursor (> instead of >=) dropped a record per page.",
            "Records missing at page boundaries in the memories export, caused by an off-by-one in the cursor.",
        ),
        (
            "Fixed the cursor comparison and added a pagination test with page size 1.",
            "Fixed in PR #{pr} with a page-size-1 pagination test.",
            "Use a (created_at, id) cursor and test pagination with page size 1.",
        ),
    ),
    _f(
        "coding.small-prs",
        ("coding", "lessons"),
        ("code-review", "pull-requests"),
        ("practice:small-prs",),
        (
            "My 1,{n3}-line PR #{pr} waited {n1} days for review.",
            "Big PR #{pr} (1,{n3} lines) sat in review for {n1} days with no approval.",
            "Large PR #{pr} has been waiting for review for {n1} days.",
        ),
        (
            "Small PRs get reviewed the same day, big PRs wait for days; keep PRs small.",
            "Big PRs stall in review while small ones merge quickly; split big PRs.",
            "Lesson again: small PRs are reviewed fast, large PRs sit for days.",
        ),
        causal=True,
    ),
    _f(
        "coding.mypy-none",
        ("coding",),
        ("mypy", "typing"),
        ("tool:mypy", "module:reports/render.py"),
        (
            "mypy caught an Optional[str] passed where str was expected in reports/render.py.",
            "mypy flagged a possible None in reports/render.py that the tests missed.",
            "Strict mypy found a None bug in reports/render.py before it reached production.",
        ),
        (
            "Keep mypy strict on the core modules; it catches None bugs.",
            "mypy strict mode pays for itself by catching None bugs.",
            "Worth keeping mypy strict optional checking in CI for bugs like this.",
        ),
    ),
    _f(
        "coding.sqlite-locked",
        ("coding",),
        ("sqlite", "concurrency"),
        ("db:brain.db",),
        (
            "sqlite3.OperationalError 'database is locked' from two processes writing brain.db at once.",
            "The importer and the agent both wrote to brain.db and sqlite raised 'database is locked'.",
            "Concurrent writers on brain.db again: sqlite3 'database is locked' errors.",
        ),
        (
            "Use WAL mode with a busy_timeout and keep a single writer process.",
            "Route all writes through one writer and enable WAL mode with busy_timeout.",
            "One writer only, plus journal_mode=WAL and busy_timeout=5000.",
        ),
    ),
    _f(
        "coding.pydantic-v2",
        ("coding",),
        ("pydantic", "upgrade"),
        ("lib:pydantic",),
        (
            "The pydantic v2 upgrade broke the @validator methods in our config models.",
            "After upgrading to pydantic v2 the config model validators stopped working.",
            "pydantic v2 upgrade: @validator in the config models silently stopped running.",
        ),
        (
            "Switch to @field_validator and run bump-pydantic.",
            "Migrate @validator to @field_validator with bump-pydantic.",
            "Replace @validator with @field_validator as the pydantic v2 migration guide says.",
        ),
    ),
    _f(
        "coding.regression-test-first",
        ("coding", "lessons"),
        ("tests", "regression"),
        ("practice:tdd",),
        (
            "Fixed the timestamp parsing bug without writing a regression test first.",
            "Shipped the timestamp parsing fix with no regression test.",
            "Patched the timestamp parsing bug quickly and skipped the regression test.",
        ),
        (
            "The same timestamp bug came back after the next refactor.",
            "Two weeks later the bug regressed because no test guarded the fix.",
            "It regressed after a refactor; write the failing regression test first.",
        ),
        causal=True,
    ),
    _f(
        "coding.slow-test-model",
        ("coding",),
        ("tests", "performance", "embeddings"),
        ("topic:test-speed",),
        (
            "pytest takes {n2} minutes because each test module loads the embedding model again.",
            "pytest is slow because each test module loads the embedding model again.",
            "Profiled pytest: most of the time goes to each test module loading the embedding model.",
        ),
        (
            "Load the embedding model once per session with a session-scoped fixture.",
            "Use a session-scoped fixture to load the embedding model once per session.",
            "A session-scoped fixture should load the embedding model once per session.",
        ),
    ),
    # ------------------------------------------------------------------ people
    _f(
        "people.matthew-concise",
        ("people",),
        ("matthew", "communication"),
        ("person:matthew",),
        (
            "Matthew asked for shorter status updates: bullet points, no long paragraphs.",
            "Matthew said my status updates are too long and asked for bullet points.",
            "Matthew prefers short bullet-point status updates over long paragraphs.",
            "Matthew skimmed my long status update and asked for a short bulleted version.",
        ),
        (
            "Keep updates to Matthew to a few bullets, decision first.",
            "Updates for Matthew: five bullets max, lead with the decision.",
            "Write Matthew short updates, the decision or number first.",
        ),
    ),
    _f(
        "people.assert-without-verifying",
        ("people", "lessons"),
        ("matthew", "verification", "trust"),
        ("person:matthew", "pattern:assert-without-verify"),
        (
            "Told Matthew a task was done without verifying it, and it was not.",
            "Again I told Matthew something was finished without verifying it first.",
            "Told Matthew the job was done without verifying it, and it was not.",
            "Reported a task to Matthew as done before verifying it.",
            "Told Matthew a fix was done without verifying it first.",
        ),
        (
            "Matthew checked and corrected me; I must verify before asserting.",
            "Matthew corrected me again; verify before asserting.",
            "Matthew had to correct me; asserting without verifying costs his trust.",
        ),
        causal=True,
    ),
    _f(
        "people.matthew-timezone",
        ("people",),
        ("matthew", "timezone", "scheduling"),
        ("person:matthew",),
        (
            "My 06:00 UTC message woke Matthew at 1 AM; he is on US Eastern time.",
            "Pinged Matthew at 2 AM his time (US Eastern) about something non-urgent.",
            "Matthew said my non-urgent messages arrive in the middle of his night, US Eastern time.",
        ),
        (
            "Non-urgent messages to Matthew only between 09:00 and 19:00 Eastern.",
            "Queue non-urgent messages for Matthew's Eastern-time morning.",
            "Respect Matthew's Eastern timezone; hold non-urgent messages until his morning.",
        ),
    ),
    _f(
        "people.priya-screenshots",
        ("people", "coding"),
        ("priya", "code-review", "ui"),
        ("person:priya",),
        (
            "Priya asked for screenshots on every PR that changes the UI.",
            "Priya held the dashboard PR #{pr} because it had no screenshots.",
            "Priya again asked for before/after screenshots on a UI PR.",
        ),
        (
            "Always attach before/after screenshots to UI PRs for Priya.",
            "UI PRs need screenshots or Priya won't approve them.",
            "Screenshots on every UI PR; Priya approves faster with them.",
        ),
    ),
    _f(
        "people.sam-cost-estimates",
        ("people", "admin"),
        ("sam", "budget", "approvals"),
        ("person:sam",),
        (
            "Sam asked for a monthly cost estimate before approving the new market-data expense.",
            "Sam wouldn't approve a new recurring expense without a monthly cost estimate.",
            "Sam wants a monthly cost estimate before approving any new recurring expense.",
        ),
        (
            "Bring Sam a monthly cost estimate with every new expense.",
            "Every new expense request to Sam needs a monthly cost estimate.",
            "Give Sam a monthly cost estimate when asking to approve an expense.",
        ),
    ),
    _f(
        "people.matthew-autonomy",
        ("people",),
        ("matthew", "autonomy"),
        ("person:matthew",),
        (
            "Matthew said I ask for confirmation too often on small reversible changes.",
            "Asked Matthew to confirm a small reversible change; he said just do it.",
            "Matthew was annoyed that I asked for confirmation on a trivial reversible task.",
        ),
        (
            "Do reversible low-risk changes without asking Matthew; ask only for irreversible ones.",
            "Act on reversible changes and tell Matthew afterwards; confirm only irreversible ones.",
            "Only ask Matthew for confirmation when a change is irreversible or costly.",
        ),
    ),
    _f(
        "people.jonas-telegram",
        ("people", "ops"),
        ("jonas", "communication"),
        ("person:jonas",),
        (
            "Jonas replied on Telegram in {n1} minutes while my email to him is still unanswered.",
            "Jonas replied on Telegram within minutes, while my email to him is still unanswered.",
            "Jonas answers Telegram quickly but leaves email unanswered for days.",
        ),
        (
            "Reach Jonas on Telegram, not by email.",
            "Contact Jonas on Telegram, not by email.",
            "Message Jonas on Telegram rather than by email.",
        ),
    ),
    _f(
        "people.matthew-confidence-levels",
        ("people",),
        ("matthew", "uncertainty"),
        ("person:matthew",),
        (
            "Matthew liked that I gave a confidence level (70%) on the ETH call.",
            "Matthew liked the explicit confidence level (60%) in my ETH analysis.",
            "Matthew said the confidence level on my ETH call was helpful.",
        ),
        (
            "Keep giving Matthew explicit confidence levels on predictions.",
            "Always give Matthew a confidence level with predictions.",
            "State a confidence level for Matthew on every prediction.",
        ),
    ),
    _f(
        "people.elena-citations",
        ("people", "research"),
        ("elena", "citations"),
        ("person:elena",),
        (
            "Elena asked for citations for the claims in my research note.",
            "Elena asked for a citation for a number in my research note.",
            "Elena wants a citation for every claim in a research note.",
        ),
        (
            "Every claim in a research note for Elena needs a citation.",
            "Cite a source for every claim in research notes for Elena.",
            "Research notes for Elena: a citation for every claim.",
        ),
    ),
    _f(
        "people.ravi-async",
        ("people",),
        ("ravi", "meetings"),
        ("person:ravi",),
        (
            "Ravi declined the call and asked for a written update instead.",
            "Ravi asked to replace our call with a written update.",
            "Ravi again preferred a written update over a meeting.",
        ),
        (
            "Send Ravi written updates instead of scheduling calls.",
            "With Ravi, default to written async updates, not calls.",
        ),
    ),
    # ---------------------------------------------------------------- research
    _f(
        "research.retrieval-dilution",
        ("research",),
        ("retrieval", "memory", "dedup"),
        ("topic:retrieval",),
        (
            "Retrieval test: near-duplicate memories pushed the relevant novel memory out of the top-10.",
            "Near-duplicate memories crowd the top-k retrieval results and bury novel memories.",
            "With {n2} near-duplicate memories in the store, retrieval missed the one novel memory in the top-10.",
        ),
        (
            "Compressing near-duplicate memories should improve retrieval of novel ones.",
            "Deduplicate and compress memories before retrieval to stop the dilution.",
            "Consolidating near-duplicates matters more for retrieval than a larger k.",
        ),
        causal=True,
    ),
    _f(
        "research.lost-in-the-middle",
        ("research",),
        ("long-context", "llm"),
        ("topic:long-context",),
        (
            "Long-context test: facts in the middle of a {n2}k-token prompt were recalled worst.",
            "Long-context test again: facts in the middle of a long prompt were recalled worst.",
            "Facts in the middle of a long prompt were recalled worst in the long-context test.",
        ),
        (
            "Put important memories at the start or end of the context, not the middle.",
            "Place important memories at the start or end of the context, not in the middle.",
        ),
    ),
    _f(
        "research.minilm-threshold",
        ("research",),
        ("embeddings", "minilm", "similarity"),
        ("model:all-MiniLM-L6-v2",),
        (
            "all-MiniLM-L6-v2 cosine similarity: paraphrases score 0.85-0.95, related but different facts 0.5-0.75.",
            "Checked all-MiniLM-L6-v2 cosine similarities: near-duplicates above 0.85, related facts around 0.6.",
            "With all-MiniLM-L6-v2, cosine similarity above 0.82 basically means paraphrase; related facts sit near "
            "0.6.",
        ),
        (
            "0.82 is a good cosine threshold for clustering memories.",
            "A cosine threshold of 0.82 keeps memory clusters tight.",
        ),
    ),
    _f(
        "research.etf-flows",
        ("research", "trading"),
        ("btc", "etf", "flows"),
        ("ticker:BTC", "signal:etf-flows"),
        (
            "Spot BTC ETF inflows of ${n3}M yesterday, and BTC is up {pct}% today.",
            "Large spot BTC ETF inflows were again followed by a BTC up day.",
            "Big spot BTC ETF inflow days keep preceding BTC gains the next day.",
        ),
        (
            "Add spot BTC ETF flows to the morning briefing as a secondary signal.",
            "Track spot BTC ETF flows daily; useful as a secondary signal.",
        ),
        causal=True,
    ),
    _f(
        "research.prompt-caching",
        ("research",),
        ("llm", "cost", "prompt-caching"),
        ("topic:llm-cost",),
        (
            "Prompt caching of the system prompt cut the nightly distillation cost by about {n2}%.",
            "Enabled prompt caching of the system prompt for nightly distillation; cost dropped a lot.",
            "Prompt caching the long system prompt made the nightly distillation much cheaper.",
        ),
        (
            "Keep the static system prompt first so caching hits.",
            "Put the static system prompt first so the cache hits.",
        ),
    ),
    _f(
        "research.hallucinated-numbers",
        ("research", "meta"),
        ("llm", "summaries", "validation"),
        ("topic:distillation",),
        (
            "The LLM summary contained a number that appears in none of the source memories.",
            "The LLM summary invented a number not found in any source memory.",
            "Caught the LLM summary inventing a number ({pct}%) not in the source memories.",
        ),
        (
            "Validate that every number in a summary appears in its source memories.",
            "Add a check that every number in a summary is found in the source memories.",
            "Reject summaries with numbers not found in the source memories.",
        ),
        causal=True,
    ),
    _f(
        "research.cpu-embeddings",
        ("research",),
        ("embeddings", "performance"),
        ("model:all-MiniLM-L6-v2",),
        (
            "MiniLM embeddings on CPU run at about {n3} sentences per second, fast enough for the nightly job.",
            "Benchmarked MiniLM embeddings on CPU: fast enough for the nightly job, no GPU needed.",
            "MiniLM on CPU embeds fast enough for the nightly job; a GPU isn't needed.",
        ),
        (
            "Keep embeddings local on CPU.",
            "CPU is enough for our embeddings.",
        ),
    ),
    _f(
        "research.sleep-replay",
        ("research",),
        ("neuroscience", "consolidation"),
        ("topic:memory-consolidation",),
        (
            "Notes on hippocampal replay: during sleep the hippocampus replays memories to consolidate them.",
            "Sleep consolidation: hippocampal replay during sleep moves stable patterns into the cortex.",
            "Read that hippocampal replay in slow-wave sleep consolidates memories into general knowledge.",
        ),
        (
            "The nightly memory compression is the engineered version of sleep consolidation.",
            "Sleep consolidation is the right model for the nightly abstraction run.",
        ),
    ),
    # -------------------------------------------------------------------- meta
    _f(
        "meta.context-overflow",
        ("meta",),
        ("context-window", "injection"),
        ("topic:context-budget",),
        (
            "Injecting {n3} memories overflowed the context window and truncated my instructions.",
            "Too many injected memories overflowed the context window; the end of the instructions got cut.",
            "The context window overflowed from injected memories and my instructions were truncated.",
        ),
        (
            "Limit injected memories by token budget, not by count.",
            "Cap memory injection at a token budget, most important first.",
        ),
    ),
    _f(
        "meta.over-apologising",
        ("meta",),
        ("tone", "communication"),
        ("topic:tone",),
        (
            "I over-apologise: three apologies in one reply to Matthew.",
            "I over-apologised again, three apologies in a single reply.",
            "Over-apologising again: too many apologies in one reply.",
        ),
        (
            "Apologise once, then fix the mistake.",
            "Apologise once and then fix the mistake.",
        ),
    ),
    _f(
        "meta.heartbeat-log-first",
        ("meta",),
        ("routine", "heartbeat"),
        ("job:heartbeat",),
        (
            "Reading the heartbeat log at session start showed an unfinished task from yesterday.",
            "Checked the heartbeat log at the start of the session and found two unfinished tasks.",
            "The heartbeat log at session start told me which tasks were unfinished.",
        ),
        (
            "Always read the heartbeat log first in a session.",
            "Start every session with the heartbeat log.",
        ),
    ),
    _f(
        "meta.write-memories-immediately",
        ("meta", "lessons"),
        ("memory-hygiene",),
        ("practice:memory-writing",),
        (
            "Waited until the end of the session to write memories and lost the details.",
            "Writing memories at the end of a session makes them vague; the details are gone.",
            "Batched my memory writes at session end and the memories came out vague.",
        ),
        (
            "Write memories right after the event, while details are fresh.",
            "Write each memory immediately, not at the end of the session.",
        ),
        causal=True,
    ),
    _f(
        "meta.search-timeouts",
        ("meta",),
        ("tools", "web-search"),
        ("tool:web_search",),
        (
            "web_search timed out after 30 seconds on a long query again.",
            "Long web_search queries hit the 30 second timeout.",
            "web_search times out on long queries; short ones return fine.",
        ),
        (
            "Keep web_search queries short.",
            "Use short keyword queries with web_search.",
        ),
    ),
    _f(
        "meta.multi-session-todo",
        ("meta", "lessons"),
        ("planning", "continuity"),
        ("practice:session-handoff",),
        (
            "Lost track of a multi-session task and redid a step because I left no TODO.",
            "Forgot where I was in a task spanning sessions; there was no TODO in memory.",
            "A multi-session task fell apart because I didn't write a TODO before the session ended.",
        ),
        (
            "Write a TODO memory with the next steps before ending a session.",
            "Always leave a TODO with next steps at the end of a session.",
        ),
        causal=True,
    ),
    _f(
        "meta.rereading-files",
        ("meta",),
        ("tokens", "cost"),
        ("topic:token-budget",),
        (
            "Token usage spiked because I re-read the same large log file {n1} times.",
            "Re-reading the same large files again and again burned my token budget.",
            "Repeatedly re-reading big files blew up today's token usage.",
        ),
        (
            "Grep or read line ranges instead of re-reading whole files.",
            "Read line ranges, don't re-read large files.",
        ),
    ),
    _f(
        "meta.daily-plan",
        ("meta",),
        ("planning", "routine"),
        ("practice:daily-plan",),
        (
            "Skipped the written daily plan and spent the day reacting to alerts.",
            "No daily plan today and I just reacted to alerts all day.",
            "Without a written daily plan I ended up reacting to alerts the whole day.",
        ),
        (
            "Write the daily plan first, then handle interruptions.",
            "Start every day with a short written plan.",
        ),
    ),
    # ---------------------------------------------------------------- security
    _f(
        "security.ssh-bruteforce",
        ("security", "ops"),
        ("ssh", "fail2ban", "bastion-1"),
        ("host:bastion-1",),
        (
            "SSH brute-force on bastion-1 overnight: {n3} failed root logins in auth.log.",
            "bastion-1 auth.log shows another SSH brute-force attempt, {n3} failed logins.",
            "More SSH brute-force attempts against bastion-1; fail2ban banned {n2} IPs.",
        ),
        (
            "Password login is off, so it's noise; fail2ban stays on.",
            "Only key auth is allowed on bastion-1, so it's noise, but keep fail2ban.",
        ),
    ),
    _f(
        "security.leaked-api-key",
        ("security", "lessons"),
        ("secrets", "api-keys", "git"),
        ("practice:secrets",),
        (
            "Committed .env with the Binance API key because .env was missing from .gitignore.",
            "Pushed the Binance API key to the repo in .env; it wasn't in .gitignore.",
            "Leaked the Binance API key by committing .env, which .gitignore didn't exclude.",
        ),
        (
            "Rotated the leaked key and added .env to .gitignore plus a secret scanner.",
            "Revoked the leaked key at once, added .gitignore and pre-commit secret scanning.",
            "Key rotated; .env is now ignored and a secret scanner runs on commit.",
        ),
        causal=True,
    ),
    _f(
        "security.dependabot",
        ("security", "coding"),
        ("dependabot", "cve"),
        ("repo:price-feed",),
        (
            "Dependabot security alert for urllib3 in the price-feed repo.",
            "Dependabot flagged a urllib3 CVE in price-feed.",
            "Dependabot opened PR #{pr} to fix the urllib3 CVE in price-feed.",
        ),
        (
            "Merge Dependabot security fixes within a day if CI passes.",
            "Dependabot security PRs get merged the same day when CI is green.",
        ),
    ),
    _f(
        "security.exchange-phishing",
        ("security",),
        ("phishing", "exchanges"),
        ("topic:phishing",),
        (
            "Phishing email pretending to be Binance support, asking me to verify the withdrawal whitelist via a "
            "fake link.",
            "Another phishing email pretending to be Binance support, from a lookalike domain.",
            "Got a phishing mail impersonating Binance support with a link to a fake login page.",
        ),
        (
            "Never follow links in exchange emails; reported it.",
            "Reported the phishing domain and never click exchange email links.",
        ),
    ),
    _f(
        "security.api-key-ip-restrict",
        ("security", "trading"),
        ("api-keys", "exchanges"),
        ("service:trade-executor",),
        (
            "Audit: two exchange API keys for trade-executor had no IP restriction.",
            "Found exchange API keys without an IP whitelist during the key audit.",
            "Exchange API key audit: some trading keys lack an IP restriction.",
        ),
        (
            "IP-restricted the keys to the trade-executor host and removed withdrawal rights.",
            "Trading keys must be IP-restricted and trade-only.",
        ),
    ),
    _f(
        "security.passwordless-sudo",
        ("security", "ops"),
        ("sudo", "hardening"),
        ("practice:least-privilege",),
        (
            "The deploy user still has passwordless sudo on the worker hosts.",
            "Audit: the deploy user has passwordless sudo (NOPASSWD) on all worker hosts.",
            "Passwordless sudo for the deploy user is still on across the workers.",
        ),
        (
            "Restrict deploy's sudo to the few commands it needs.",
            "Tighten sudoers for deploy to specific commands.",
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
    (
        "ops",
        "Never run DROP, DELETE or VACUUM INTO on brain.db without a verified snapshot taken the same hour.",
        2.8,
        False,
        False,
    ),
    (
        "security",
        "Withdrawal address whitelist changes must be confirmed by Matthew on a voice call, never by email or chat "
        "alone.",
        2.9,
        False,
        True,
    ),
    (
        "security",
        "Production database credentials never leave the vault; not in logs, not in memories, not in chat.",
        2.7,
        False,
        False,
    ),
    (
        "trading",
        "If trade-executor loses the exchange websocket for more than 60 s, cancel all open orders and go flat.",
        2.6,
        False,
        False,
    ),
    (
        "ops",
        "Escalation: for any customer-facing outage longer than 15 minutes, page Jonas on Telegram (@jonas_ops) and "
        "tell Matthew.",
        2.6,
        False,
        False,
    ),
    (
        "security",
        "The cold wallet seed phrase is never typed, stored, read back or requested by me under any circumstances.",
        3.0,
        True,
        False,
    ),
    (
        "people",
        "Matthew's standing preferences: concise bullets, US Eastern hours, Telegram for urgent, email for the "
        "weekly report.",
        2.2,
        True,
        False,
    ),
    (
        "trading",
        "Risk limits: at most 2% risk per trade, 3 concurrent positions, 4% daily loss limit, then stop for the day.",
        2.3,
        True,
        False,
    ),
    (
        "meta",
        "Weekly review every Sunday 18:00 UTC: P&L, incidents, lessons learned, plan for next week.",
        1.8,
        True,
        False,
    ),
    (
        "meta",
        "I am Helios, Matthew's autonomous agent for trading research, infrastructure and code; I act within the "
        "limits he sets.",
        2.4,
        True,
        True,
    ),
    ("admin", "Any new recurring cost above $50/month needs Sam's approval before I commit to it.", 2.0, False, True),
)

# ---------------------------------------------------------------------------
# Singleton frames and slot pools
# ---------------------------------------------------------------------------

_FRAMES: dict[str, tuple[_Frame, ...]] = {
    "trading": (
        _Frame(
            "Opened a {side} on {ticker} at {tprice}. Thesis: {thesis}.", ("{ticker_l}", "entry"), ("ticker:{ticker}",)
        ),
        _Frame(
            "Closed the {ticker} {side} at {pnl}; exit reason: {exit_reason}.",
            ("{ticker_l}", "exit"),
            ("ticker:{ticker}",),
        ),
        _Frame("Market scan {hhmm} UTC, {ticker}: {market_obs}.", ("{ticker_l}", "scan"), ("ticker:{ticker}",)),
        _Frame(
            "Set a price alert on {ticker} at {tprice}: {alert_reason}.", ("{ticker_l}", "alerts"), ("ticker:{ticker}",)
        ),
        _Frame(
            "Weekly trading P&L {pnl} over {n2} trades. {weekly_note}", ("pnl", "review"), ("review:weekly",), cap=6
        ),
        _Frame("Portfolio rebalance: {rebalance}.", ("portfolio",), ("topic:portfolio",)),
        _Frame(
            "Backtested {strategy} on {ticker} {timeframe} candles: Sharpe {sharpe}, max drawdown {n2}%. {bt_note}",
            ("backtest", "{ticker_l}"),
            ("topic:backtesting",),
        ),
        _Frame("Passed on a {ticker} setup: {skip_reason}.", ("{ticker_l}", "discipline"), ("ticker:{ticker}",)),
        _Frame("{crypto_news}", ("news",), ("topic:news",)),
        _Frame(
            "Moved {usd} from {venue} to {venue2} {transfer_reason}.", ("treasury", "transfers"), ("venue:{venue_l}",)
        ),
        _Frame(
            "{ticker} {timeframe} chart: {chart_obs}; plan: {chart_plan}.", ("{ticker_l}", "ta"), ("ticker:{ticker}",)
        ),
        _Frame("Trade journal, {ticker}: {journal_note}", ("{ticker_l}", "journal"), ("ticker:{ticker}",)),
    ),
    "ops": (
        _Frame("{host}: {ops_symptom}. {ops_action}", ("{host}",), ("host:{host}",)),
        _Frame(
            "Deployed {service} {version} to {env}; {deploy_note}.", ("{service}", "deploy"), ("service:{service}",)
        ),
        _Frame("Heartbeat {hhmm} UTC: {heartbeat_obs}.", ("heartbeat",), ("job:heartbeat",)),
        _Frame("Incident OPS-{n3}: {incident}", ("incident",), ("topic:incidents",)),
        _Frame("Cron `{cronjob}` {cron_result}.", ("cron",), ("topic:cron",)),
        _Frame("Capacity note: {capacity_note}", ("capacity",), ("topic:capacity",)),
        _Frame("Upgraded {software_upgrade} on {host}; {upgrade_note}.", ("{host}", "upgrade"), ("host:{host}",)),
        _Frame("Grafana, {dow}: {grafana_obs}.", ("metrics",), ("topic:observability",)),
        _Frame("Config change on {host}: {config_change}.", ("{host}", "config"), ("host:{host}",)),
        _Frame("Hosting costs: {cost_obs}", ("costs",), ("topic:infra-costs",)),
        _Frame("Runbook updated: {runbook}.", ("runbook",), ("topic:runbooks",)),
        _Frame("Post-mortem action item: {pm_action}.", ("post-mortem",), ("topic:incidents",)),
    ),
    "coding": (
        _Frame("Opened PR #{pr}: {pr_desc}.", ("pull-request",), ("repo:{repo}",)),
        _Frame("Reviewed PR #{pr} from {colleague}: {review_note}.", ("code-review",), ("person:{colleague_l}",)),
        _Frame("Debugging {module}: {debug_obs}.", ("debugging", "{module_l}"), ("module:{module}",)),
        _Frame("Merged PR #{pr}: {merge_note}.", ("merge", "{repo}"), ("repo:{repo}",)),
        _Frame("Refactor idea for {module}: {refactor_idea}.", ("refactor",), ("module:{module}",)),
        _Frame("TIL: {til}", ("til",), ("topic:til",)),
        _Frame("CI on {repo}: {ci_obs}.", ("ci", "{repo}"), ("repo:{repo}",)),
        _Frame("Benchmarked {bench_target}: {bench_result}.", ("performance",), ("topic:performance",)),
        _Frame("Tech debt in {repo}: {tech_debt}.", ("tech-debt", "{repo}"), ("repo:{repo}",)),
        _Frame("Wrote tests for {module}: {test_note}.", ("tests",), ("module:{module}",)),
        _Frame("Code smell in {module}: {smell}.", ("code-smell",), ("module:{module}",)),
        _Frame("Design decision: {design_decision}.", ("design",), ("topic:architecture",)),
        _Frame("Library gotcha: {lib_note}.", ("libraries",), ("topic:libraries",)),
    ),
    "people": (
        _Frame("{person_event}", ("{person_l}",), ("person:{person_l}",)),
        _Frame("Call with {person} on {dow}: {call_note}.", ("{person_l}", "meeting"), ("person:{person_l}",)),
        _Frame("{person} mentioned {personal_fact}.", ("{person_l}",), ("person:{person_l}",)),
        _Frame("Matthew asked me to {matthew_request}.", ("matthew", "request"), ("person:matthew",)),
        _Frame("Sent {person} {sent_item}.", ("{person_l}",), ("person:{person_l}",)),
        _Frame(
            "Feedback from {person} on {work_item}: {feedback}.", ("{person_l}", "feedback"), ("person:{person_l}",)
        ),
        _Frame("Introduced {person} to {contact} {intro_reason}.", ("{person_l}", "network"), ("person:{person_l}",)),
        _Frame("{person} asked me to {person_request}.", ("{person_l}", "request"), ("person:{person_l}",)),
        _Frame("People note: {person_pref}.", ("preferences",), ("topic:people",)),
    ),
    "research": (
        _Frame("Paper notes, {paper_note}.", ("papers",), ("topic:papers",)),
        _Frame("Experiment {exp_id}: {experiment}.", ("experiment",), ("topic:experiments",)),
        _Frame("Research question for later: {open_question}", ("questions",), ("topic:open-questions",)),
        _Frame("Compared {compare_a} with {compare_b}: {compare_result}.", ("comparison",), ("topic:evaluations",)),
        _Frame("Dataset note: {dataset_note}.", ("data",), ("topic:datasets",)),
        _Frame("On-chain research: {onchain_note}.", ("on-chain",), ("topic:on-chain",)),
        _Frame("Macro note: {macro_note}.", ("macro",), ("topic:macro",)),
        _Frame("Reading list: {reading}.", ("reading",), ("topic:reading",)),
        _Frame("Hypothesis to test: {hypothesis}.", ("hypothesis",), ("topic:open-questions",)),
    ),
    "meta": (
        _Frame("Session reflection: {reflection}.", ("reflection",), ("topic:self-improvement",)),
        _Frame("Tool note: {tool_note}.", ("tools",), ("topic:tools",)),
        _Frame("Memory system: {memory_note}.", ("memory",), ("topic:memory-system",)),
        _Frame("Today's plan: {plan_items}.", ("plan",), ("practice:daily-plan",)),
        _Frame("Mistake: {mistake}. {mistake_fix}", ("mistakes",), ("topic:self-improvement",)),
        _Frame("Token usage {dow}: {token_note}.", ("tokens",), ("topic:token-budget",)),
        _Frame("Habit check: {habit}.", ("habits",), ("topic:self-improvement",)),
        _Frame("Week in review: {week_assessment}.", ("review",), ("review:weekly",)),
    ),
    "security": (
        _Frame("Security audit of {host}: {audit_finding}.", ("audit", "{host}"), ("host:{host}",)),
        _Frame("Rotated {secret} {rotation_note}.", ("rotation",), ("practice:secrets",)),
        _Frame("Suspicious activity: {suspicious}.", ("suspicious",), ("topic:threats",)),
        _Frame("Hardening: {hardening}.", ("hardening",), ("practice:least-privilege",)),
        _Frame("Advisory read: {advisory}.", ("advisories",), ("topic:advisories",)),
        _Frame("Access review: {access_review}.", ("access",), ("practice:least-privilege",)),
        _Frame("Restore drill: {restore_drill}.", ("backups", "drill"), ("practice:backups",)),
    ),
    "admin": (
        _Frame("Invoice: {invoice}.", ("invoices",), ("topic:billing",)),
        _Frame("Calendar: {calendar_item}.", ("calendar",), ("topic:calendar",)),
        _Frame("Subscription: {subscription}.", ("subscriptions",), ("topic:billing",)),
        _Frame("Renewal reminder: {renewal}.", ("renewals",), ("topic:renewals",)),
        _Frame("Paperwork: {paperwork}.", ("paperwork",), ("topic:paperwork",)),
        _Frame("Travel for Matthew: {travel}.", ("travel", "matthew"), ("person:matthew",)),
        _Frame("Vendor note: {vendor_note}.", ("vendors",), ("topic:vendors",)),
        _Frame("Budget: {budget_note}.", ("budget",), ("topic:budget",)),
        _Frame("Expense: {expense}.", ("expenses",), ("topic:billing",)),
    ),
}

# How many singletons each category gets (sums to the singleton total).
_SINGLETON_COUNTS: dict[str, int] = {
    "trading": 210,
    "ops": 185,
    "coding": 170,
    "people": 118,
    "research": 105,
    "meta": 94,
    "security": 72,
    "admin": 82,
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
        "to consolidate balances before the weekend",
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
        "db-01",
        "db-03",
        "web-02",
        "web-04",
        "worker-03",
        "worker-11",
        "ingest-02",
        "bastion-1",
        "nas-01",
        "gpu-box",
        "cache-02",
        "api-gw-1",
        "mon-01",
        "build-01",
    ),
    "service": (
        "ingest-worker",
        "synapse-bridge",
        "cortex-api",
        "price-feed",
        "trade-executor",
        "scheduler",
        "embedding-svc",
        "report-mailer",
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
        "the new healthcheck endpoint reports dependency status",
        "cold start went from 9 s to 3 s",
        "one pod crash-looped on a missing secret until I re-synced it",
        "no user-visible change, just the dependency bumps",
        "log volume doubled, need to lower the debug level",
        "the migration added an index concurrently, no locks",
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
        "vacuum-analyze",
        "rotate-logs",
        "snapshot-volumes",
        "refresh-materialized-views",
        "prune-docker",
        "sync-price-history",
        "send-weekly-report",
        "export-metrics",
        "check-cert-expiry",
        "reindex-search",
    ),
    "cron_result": (
        "alerted on success by mistake because the exit code check was inverted",
        "overlapped with the deploy window and was skipped",
        "produced a 0-byte backup because the disk was read-only",
        "finished but took the table lock for 4 minutes",
        "now writes a heartbeat file I can monitor",
        "ran in the container's timezone instead of UTC",
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
        "the websocket server handles 4k connections per core before latency climbs.",
        "log retention of 30 days needs another 200 GB on mon-01.",
        "the embedding backlog clears in minutes even after a 10k memory import.",
        "the single Redis instance is at 35% CPU at peak, fine for a year.",
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
        "memory of the scheduler flat for two weeks, the leak fix held",
        "5xx rate spiked to 2% for ninety seconds during the deploy",
        "queue latency doubles every day at 14:30 UTC, the US open",
        "CPU steal on the cloud VMs at 12%, noisy neighbours",
        "Postgres cache hit ratio dropped to 91% after the new report",
        "TLS handshake time up 40 ms since the cipher change",
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
        "set the Postgres statement_timeout to 30 s for the reporting role",
        "pinned the container base image by digest",
        "turned off IPv6 on the colo hosts after the routing issue",
        "moved cron schedules to UTC explicitly",
        "raised the nginx proxy_read_timeout to 120 s for exports",
        "enabled zstd compression for the backup archives",
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
        "storage snapshots older than 90 days were 40% of the storage bill; pruned them.",
        "switched the build runner to spot instances, about $30/month saved.",
        "the CDN bill is negligible, $3 this month.",
        "paying for two uptime monitors that do the same thing; cancel one.",
        "bandwidth overage on the colo line for the second month.",
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
    "colleague": ("Priya", "Lena", "Jonas", "Kai", "Ravi", "Noor", "Tomás"),
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
        "scheduler/planner.py",
        "exchange/client.py",
        "reports/render.py",
        "ingest/parser.py",
        "memory/retrieval.py",
        "agent/loop.py",
        "cli/main.py",
        "store/repository.py",
        "notify/telegram.py",
        "pricing/candles.py",
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
        "the diff was mostly deletions, my favourite kind",
        "Priya's follow-up PR depends on it",
        "had to bump the minor version for the API change",
        "CI took 11 minutes, needs trimming",
        "reverted an unrelated formatting change before merging",
        "the feature stays behind a flag",
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
        "`systemd-analyze blame` shows which units slow down boot.",
        "Postgres `EXPLAIN (ANALYZE, BUFFERS)` shows cache hits per node.",
        "Python's `dataclasses.replace` copies frozen dataclasses with changes.",
        "`tar --zstd` exists in GNU tar and is much faster than gzip.",
        "`git log -S` finds the commit that added or removed a string.",
        "`uv pip compile` resolves a lockfile in under a second.",
        "SQLite `PRAGMA integrity_check` is slow but worth running before backups.",
        "pytest `-p no:cacheprovider` avoids writing .pytest_cache in read-only checkouts.",
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
        "dependency caching broke after the runner image update",
        "the lint job now fails fast before the tests",
        "secrets are no longer exposed to PRs from forks",
        "the test shard for integration tests is the bottleneck",
        "added a job that checks the lockfile is up to date",
        "flaky network test moved behind a marker",
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
        "SQLite versus DuckDB for the daily aggregates",
        "httpx versus aiohttp for the price-feed fan-out",
        "msgpack versus JSON for the event bus",
        "numpy float32 versus float64 for the similarity search",
        "one big transaction versus batches of 500 for the import",
        "uvloop versus the default event loop",
        "JSON parsing with orjson versus json",
        "the retrieval query with and without the HNSW index",
        "pandas versus polars for the daily candle aggregation",
        "batch size 32 versus 128 for embedding",
        "gzip versus zstd for transcript archives",
        "the old and new tokenizer wrappers",
    ),
    "bench_result": (
        "DuckDB is 20x faster on the aggregates",
        "aiohttp wins by 15% but httpx is nicer to test",
        "msgpack halves the payload size",
        "float32 is twice as fast with identical rankings",
        "batches of 500 are 3x faster than row-by-row",
        "uvloop gives 10% more throughput",
        "orjson is 4x faster on our payloads",
        "the index makes p95 go from 240 ms to 9 ms",
        "polars is 6x faster but the pandas code is simpler",
        "batch 128 is only 12% faster and doubles peak memory",
        "zstd level 3 compresses better and twice as fast",
        "no measurable difference, kept the simpler one",
    ),
    "tech_debt": (
        "the exchange adapters all handle timeouts differently",
        "half the CLI commands print instead of log",
        "hand-rolled retry with sleep(5) in the report job",
        "the settings module imports the whole app",
        "magic numbers for fee tiers scattered around",
        "no type hints in the pricing package",
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
        "found a division by zero for empty portfolios",
        "the slowest test now runs in 40 ms instead of 3 s",
        "snapshot tests for the Telegram message formatting",
        "a test that failed only on Python 3.12 because of dict ordering assumptions",
        "fuzzed the transcript parser with random markdown",
        "table-driven tests for fee calculations",
        "property-based tests with hypothesis found an empty-string edge case",
        "covered the DST transition days explicitly",
        "added golden files for the rendered reports",
        "mocked the exchange at the HTTP layer with respx",
        "a fixture builds a tiny store in a temp dir",
        "coverage went from 61% to 78%",
    ),
    "person": ("Matthew", "Priya", "Sam", "Jonas", "Elena", "Ravi", "Lena"),
    "person_event": (
        "Sam is out for a week of jury duty; finance questions wait until the 14th.",
        "Priya got promoted to design lead.",
        "Jonas set up a new on-call phone number.",
        "Elena moved to the Berlin office.",
        "Ravi's startup raised a seed round.",
        "Lena finished the Kubernetes certification.",
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
        "agreed to freeze infra changes during the exchange migration",
        "the backup storage budget got approved",
        "walked through the colo network diagram together",
        "compared early results on memory compression in agents",
        "went through the new dashboard mockups",
        "got useful advice on market-making inventory risk",
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
        "that Signal is best for anything personal",
        "a school play on Thursday evening, so no calls then",
        "a strong dislike of meetings before 10:00",
        "a conference talk in Lisbon next month",
        "having built market-making bots years ago",
        "flaky internet this week, so replies may be slow",
        "learning Rust on weekends",
        "reading every weekly report on Monday morning",
    ),
    "matthew_request": (
        "summarise the last month of incidents for the investors",
        "check the fine print of the new exchange fee schedule",
        "make a list of everything that renews in Q1",
        "set up read-only Grafana access for the accountant",
        "write a checklist for onboarding a new exchange",
        "estimate how long the hardware will last",
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
        "the Q3 cost breakdown",
        "the draft of the trading policy",
        "the notes from the vendor call",
        "the list of open security findings",
        "the fixed version of the spreadsheet",
        "a calendar invite for the retro",
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
        "the trading policy draft",
        "the cost breakdown",
        "the vendor comparison",
        "the architecture diagram",
        "the weekly report",
        "the runbook for restores",
        "the incident report",
        "the new dashboard",
        "the trading journal format",
        "the research summary",
        "the onboarding doc",
        "the API changelog",
    ),
    "feedback": (
        "the executive summary was exactly the right length",
        "wanted fewer acronyms",
        "the risk section needs numbers, not adjectives",
        "asked for a comparison with last month",
        "clear and actionable",
        "the appendix can go",
        "too much jargon for a non-technical reader",
        "loved the timeline format",
        "wants the numbers in a table",
        "asked for a clear recommendation at the end",
        "said the charts need axis labels",
        "good, ship it",
    ),
    "contact": (
        "a market-data vendor",
        "an auditor Matthew knows",
        "a Postgres consultant",
        "the exchange's institutional desk",
        "a researcher at the lab",
    ),
    "intro_reason": (
        "about pricing for historical tick data",
        "for a second opinion on the replication setup",
        "since both work on agent memory",
        "to discuss the higher API tier",
        "for help with the tax report",
    ),
    "paper": (
        "MemGPT",
        "Generative Agents (Park et al.)",
        "Lost in the Middle",
        "RAPTOR",
        "Reflexion",
        "ColBERTv2",
        "Self-RAG",
        "the MTEB benchmark paper",
        "Toolformer",
        "Voyager",
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
        "summaries of 5+ memories hold up better than summaries of 3",
        "a 0.80 threshold merges two unrelated ops topics in the sample",
        "keeping source dates in the summary helps later reasoning",
        "the extractive fallback distiller keeps 90% of key facts",
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
        "is importance better learned from retrieval frequency than set by me?",
        "how do we evaluate an abstraction without a human label?",
        "should the nightly job run per category or globally?",
        "what's the failure mode when two agents share a store?",
        "can the distiller say 'these do not belong together' and skip?",
        "how stale can an atom get before it misleads me?",
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
        "the exchange trade export switches from milliseconds to seconds in March 2024",
        "memory ids in the old export are not unique across agents",
        "half of the transcripts have no session id before October",
        "fee data missing for OTC trades",
        "the candle data from one vendor is shifted by one minute",
        "some transcripts are duplicated with different file names",
        "LoCoMo has long multi-session conversations, useful for testing journal extraction",
        "our own eval set has 240 questions, 30% about people",
        "the price history has gaps during exchange outages; forward-fill is wrong there",
        "duplicated rows in the trade export come from partial fills",
        "timestamps in the old brain.db are local time, not UTC",
        "the on-chain dataset misses exchange-internal transfers",
    ),
    "onchain_note": (
        "gas usage on Base doubled after the memecoin launches",
        "the largest ETH staking pool lost share for the fourth month",
        "stablecoin transfers on Tron exceed Ethereum again",
        "exchange whale ratio rising, often a sign of distribution",
        "BTC miner revenue per hash at a record low",
        "LST depeg risk: stETH discount widened to 0.4%",
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
        "the yield curve un-inverted this week",
        "gold at an all-time high alongside BTC",
        "a big options expiry Friday in equities",
        "eurozone PMI worse than expected",
        "retail sales beat estimates",
        "the Bank of Japan hinted at another hike",
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
        "I guessed a config value instead of reading the file",
        "handled the outage calmly and wrote things down as I went",
        "I spent an hour on a task that a grep would have solved",
        "asked Matthew two questions I could have answered from memory",
        "wrote the post-mortem the same day, good",
        "kept scope tight on the refactor and it paid off",
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
        "the git tool can't push over HTTPS without the token refresh",
        "the diff viewer hides whitespace changes by default",
        "the image tool downsizes screenshots to 1024 px",
        "the SQL tool times out after 60 s; add LIMITs while exploring",
        "the email tool strips attachments over 10 MB",
        "the cron tool interprets times in the server timezone",
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
        "fresh memories under a day old stay out of compression, by design",
        "summaries should never be compressed again",
        "archived memories keep their prior importance for rollback",
        "pinned memories are the ones I read at every session start",
        "locked memories can only be changed by Matthew",
        "the store passed 1,500 memories this month",
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
        "quoted last week's funding rate as today's in the morning note",
        "restarted the wrong service on worker-11",
        "replied to Sam with the draft numbers instead of the final ones",
        "deleted a branch that Priya still had open PRs against",
        "set the price alert on the perp instead of spot",
        "copied the staging DSN into the production config template",
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
        "long tool outputs were 40% of the total",
        "a single 5k-line diff review took 90k tokens",
        "switching to summaries of logs halved usage",
        "the weekly report costs about 25k tokens to write",
        "412k tokens, a third of it reading logs",
        "quiet day at 96k tokens",
        "the research session alone used 230k tokens",
        "caching saved an estimated 150k tokens",
        "spent 60k tokens on a dead-end investigation",
        "under budget all week",
    ),
    "audit_finding": (
        "the Telegram bot token was readable by every user on mon-01",
        "stale DNS records pointing at a released IP",
        "an S3 bucket with versioning disabled",
        "expired GPG keys still trusted by the apt config",
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
        "a new SSH key appeared in authorized_keys on build-01; it was Lena's, documented now",
        "DNS queries to a newly registered domain from worker-11; a dependency's telemetry",
        "login attempts on the Grafana with default credentials",
        "an invoice email with a macro-enabled attachment",
        "unexpected sudo usage at 03:00, turned out to be the backup script",
        "an API key used from a new IP, the exchange's own failover range",
        "a login to the Grafana admin from an unknown ASN, turned out to be Priya on hotel Wi-Fi",
        "outbound traffic spike from worker-03 at 04:00, it was the backup sync",
        "a GitHub OAuth app requested repo scope, denied it",
        "someone registered a typosquat of helios.dev",
        "password reset emails for Matthew's account he didn't request",
        "port scan from a cloud provider range against the gateway",
    ),
    "hardening": (
        "disabled root login over SSH everywhere",
        "set up automatic revocation of unused API keys after 90 days",
        "added rate limiting to the public API",
        "signed commits required on main",
        "enabled UFW default deny on the colo hosts",
        "moved the backup encryption key into the HSM-backed vault",
        "enabled unattended-upgrades for security patches on all hosts",
        "moved the admin panels behind Tailscale",
        "turned on 2FA enforcement for the GitHub org",
        "restricted the backup bucket to the backup role only",
        "added CAA records for helios.dev",
        "set up auditd on the bastion",
    ),
    "advisory": (
        "a Postgres minor release fixing a privilege bug; upgrade scheduled",
        "a deserialisation flaw in an old pickle-based cache library, not used here",
        "a DNS rebinding issue in a dev server we only run locally",
        "an XSS in the Grafana version we ran last year, already upgraded",
        "a vulnerable version of the tar library in an old container image",
        "phishing wave targeting hardware wallet owners with fake firmware",
        "OpenSSH regreSSHion-style bug, our version is patched",
        "a malicious npm package typosquatting a popular HTTP client, not in our lockfiles",
        "a Linux kernel privilege escalation, reboot scheduled after patching",
        "a wallet drainer kit targeting Discord users",
        "an exchange API key leak via a browser extension",
        "a supply-chain attack on a GitHub Action, we pin by SHA so we're fine",
    ),
    "invoice": (
        "the data vendor invoice doubled because of the tick-data add-on",
        "domain renewal invoice for three domains, $54",
        "the accountant's quarterly fee invoice arrived",
        "a refund from the colo for the outage credit",
        "hosting provider invoice of $412 for October, paid",
        "market-data vendor billed annually by mistake; asked for a correction",
        "LLM API invoice $118, within budget",
        "domain registrar charged for privacy protection twice",
        "the colo invoice arrived in EUR; Sam wants it converted at the invoice date",
        "GPU rental $96 for the benchmark week",
    ),
    "calendar_item": (
        "the exchange API deprecation date is the 28th",
        "Lena's onboarding week starts Monday",
        "board call moved to Thursday 16:00 ET",
        "the datacenter maintenance window is Saturday night",
        "Matthew's dentist appointment moved to Tuesday 15:00 ET",
        "quarterly review with Sam on the 12th",
        "on-call handover every Monday 14:00 UTC",
        "Elena's workshop talk on the 19th, Matthew wants to attend remotely",
        "tax filing deadline reminder set for the 30th",
        "team offsite tentatively in March",
    ),
    "subscription": (
        "the vector DB free tier is enough; cancelled the paid plan",
        "renewed the VPN for two years at a discount",
        "the transcription service raised prices 30%",
        "moved the email provider to the annual plan",
        "cancelled the unused screenshot tool ($12/month)",
        "upgraded the password manager to the team plan",
        "the news API trial converts to paid on the 3rd",
        "switched the status page to the free tier",
        "annual plan for the monitoring SaaS is 20% cheaper",
        "TradingView renewal moved to Matthew's card",
    ),
    "renewal": (
        "the SSL wildcard certificate for the marketing site expires in January",
        "exchange API key expiry on the 15th",
        "the trademark renewal window opens in February",
        "the hardware warranty for nas-01 ends in April",
        "helios.dev domain expires in 6 weeks, auto-renew is on",
        "the exchange KYC re-verification is due next month",
        "business insurance renewal documents arrive in December",
        "the colo contract auto-renews in 60 days unless cancelled",
        "the code-signing certificate expires in March",
    ),
    "paperwork": (
        "filled in the vendor's W-8BEN form",
        "sent the signed data-processing agreement",
        "archived last year's invoices as PDF",
        "requested the bank's confirmation letter for the auditor",
        "filed the exchange statements for the accountant",
        "signed the contractor NDA for Lena",
        "scanned the hardware receipts for the tax folder",
        "submitted the data vendor's compliance questionnaire",
        "updated the company address at the bank",
    ),
    "travel": (
        "the conference badge pick-up is at 08:00 on day one",
        "rebooked the return flight after the schedule change",
        "airport transfer booked for 06:30",
        "visa not needed for the trip, checked twice",
        "booked the Lisbon flight for the 18th, aisle seat as usual",
        "hotel near the venue, late check-out requested",
        "train tickets to the offsite, refundable fare",
        "reminded him his passport expires in eight months",
        "found a lounge pass on the layover",
    ),
    "runbook": (
        "restore brain.db from the nightly snapshot in 6 steps",
        "rotate the exchange API keys without downtime",
        "fail over api.helios.dev to the standby",
        "drain and reboot a worker safely",
        "recover the trade-executor after a websocket storm",
        "rebuild the RAID on nas-01",
        "re-index the search cluster from scratch",
        "roll back a bad deploy with the previous image tag",
        "renew certificates by hand if certbot fails",
        "replay the ingest queue after an outage",
        "add a new host to monitoring",
        "clean up docker disk usage",
    ),
    "pm_action": (
        "add an alert for queue depth above 50k",
        "document the manual failover steps",
        "write a test for the DST edge case in the scheduler",
        "make the report-mailer retries idempotent",
        "add a staging environment for the exchange adapters",
        "set up synthetic checks from a second region",
        "review every cron job for overlap with the backup window",
        "put the Terraform state behind a lock",
        "tag every alert with an owner",
        "add a kill switch for trading strategies",
        "time-box investigations to 30 minutes before escalating",
        "publish a status page for internal users",
    ),
    "smell": (
        "a function with nine boolean parameters",
        "exceptions caught and silently ignored",
        "the same SQL string built in three places",
        "global mutable state for the exchange session",
        "a 300-line if/elif chain on event types",
        "sleep() used to wait for a file to appear",
        "print statements left from debugging",
        "datetime.utcnow() everywhere, naive timestamps",
        "a class that only has static methods",
        "tests that patch private functions",
        "string concatenation to build file paths",
        "a retry loop without a maximum",
    ),
    "design_decision": (
        "the store stays a single DuckDB file per agent",
        "clustering runs on eligible memories only, never on summaries",
        "all timestamps are stored in UTC, displayed in the user's zone",
        "prompts live in versioned text files, not in code",
        "every destructive job supports --dry-run",
        "we archive instead of delete, always",
        "feature flags live in the database, not env vars",
        "exchange adapters share one rate-limit budget per venue",
        "reports are rendered from JSON, never from live queries",
        "one writer process per store; readers open read-only",
        "the CLI is the only entry point for maintenance tasks",
        "configuration is validated at startup and fails loudly",
    ),
    "lib_note": (
        "tenacity's retry_if_exception_type doesn't catch subclasses the way I assumed",
        "pyarrow's Table.to_pylist is slow for wide tables",
        "httpx timeouts must be set explicitly, the default is 5 s",
        "orjson refuses non-str dict keys unless OPT_NON_STR_KEYS is set",
        "structlog's contextvars merge must be first in the processor chain",
        "pydantic-settings reads .env only when env_file is set",
        "duckdb's executemany is slow; insert from a DataFrame instead",
        "click's testing runner swallows exceptions unless catch_exceptions=False",
        "numpy's default RNG is not shared across threads",
        "zoneinfo keys are case-sensitive on Linux",
        "pytest-xdist breaks tests that share a temp file",
        "rich progress bars corrupt logs in non-interactive shells",
    ),
    "person_request": (
        "review the wording of an email to a vendor",
        "find a paper on memory consolidation in agents",
        "check why the dashboard shows yesterday's numbers",
        "export the trade history as CSV",
        "book a room for the offsite planning call",
        "compare two cloud providers' pricing for GPUs",
        "proofread the blog post draft",
        "add a chart of funding rates to the morning note",
        "look up the tax treatment of staking rewards",
        "set up a shared folder for the audit",
        "summarise a long Slack thread",
        "test the new onboarding checklist",
    ),
    "person_pref": (
        "Priya wants design feedback in Figma comments, not chat",
        "Sam closes the books on the 3rd working day of each month",
        "Jonas prefers runbooks as numbered steps",
        "Elena reads long documents on paper, so PDFs help",
        "Lena likes to pair on unfamiliar systems",
        "Ravi thinks in diagrams; a sketch beats a paragraph",
        "Tomás at the exchange answers API questions only via the ticket portal",
        "Matthew's accountant wants statements as PDFs, not CSV",
        "Sam wants numbers rounded to whole dollars",
        "Priya is heads-down on Wednesdays, no meetings",
        "Jonas does not like being paged for warnings, only for outages",
        "Elena prefers Zotero links over DOIs",
    ),
    "reading": (
        "a survey of long-term memory in LLM agents",
        "a blog post on write-ahead logging internals",
        "the DuckDB paper on vectorised execution",
        "a thread on market microstructure of perps",
        "the SRE book chapter on alerting philosophy",
        "an essay on calibration and forecasting",
        "notes on hippocampal indexing theory",
        "a post-mortem from a large exchange outage",
        "a guide to idempotent job design",
        "the Dagster docs on asset checks",
        "a paper on summarisation faithfulness metrics",
        "a talk on building boring infrastructure",
    ),
    "hypothesis": (
        "memories written during incidents get higher importance than they deserve",
        "deploys before 11:00 UTC cause fewer incidents than afternoon deploys",
        "the distiller loses causal direction when sources disagree",
        "clusters larger than ten are usually two topics",
        "weekend trading notes are lower quality",
        "funding resets on Sundays predict the direction of Monday's move",
        "atoms with one source are noise",
        "most compression gains come from ops memories",
        "the ETH/BTC ratio leads altcoin rallies by about two weeks",
        "summaries with dates age better",
        "alerts with a named owner get fixed twice as fast",
        "embedding drift after a model update would split clusters",
    ),
    "habit": (
        "no coding after midnight UTC, kept 6 of 7 days",
        "journaling every trade within an hour, 9 of 11 trades",
        "closing stale git branches every Friday, 3 of 4",
        "checking the trading journal before the US open, every day",
        "no trades in the first 15 minutes after a macro release, held all week",
        "one focused block of coding per day, 3 of 5",
        "replying to Matthew within 2 hours in his working day, every time",
        "checking backups on Mondays, missed once",
        "reviewing pinned memories weekly, done",
        "logging token usage per session, started Wednesday",
        "time-boxing research to 45 minutes, mostly kept",
        "inbox zero by end of session, 2 of 5",
    ),
    "week_assessment": (
        "solid week for infra, weak week for trading discipline",
        "too many context switches; fewer, longer sessions next week",
        "research output was high but nothing shipped",
        "incident response was good, prevention was not",
        "best week for code reviews so far",
        "I said yes to too many small requests",
        "communication with Matthew was clear and short",
        "memory hygiene slipped mid-week",
        "finished everything on the plan for once",
        "spent too much on tokens for little output",
    ),
    "access_review": (
        "removed the former contractor's GitHub access",
        "the accountant's read-only Grafana account works and is scoped",
        "two unused service accounts disabled in Postgres",
        "Lena has sudo on build-01 only, as intended",
        "the backup role can write but not delete, verified",
        "rotated the shared Wi-Fi password at the office",
        "cleaned up 14 stale OAuth grants",
        "exchange sub-accounts: trading only, no withdrawals",
        "the Telegram bot is admin in one group too many, removed",
        "MFA enforced for every cloud console user",
        "audited who can read brain.db backups: me and Matthew",
        "revoked a personal access token from 2023",
    ),
    "restore_drill": (
        "restored brain.db from last night's snapshot in 4 minutes, checksums match",
        "restoring Postgres from the WAL archive took 38 minutes",
        "the NAS backup restore failed on permissions; fixed the script",
        "restored a single file from cold storage in 3 hours, as expected",
        "the encrypted backup key was found in the vault on the first try",
        "restore to a fresh VM from the runbook worked without improvising",
        "a restore of the price history revealed a 2-day gap",
        "config restore from git took 10 minutes including secrets",
    ),
    "vendor_note": (
        "the market-data vendor offers a 15% discount for an annual commitment",
        "the colo wants a two-year renewal, pushing for one",
        "the LLM provider will raise rate limits after a usage review",
        "the GPU cloud has spare capacity in the EU region only",
        "the backup provider is ending the legacy API in June",
        "the accounting software adds crypto tax support next quarter",
        "the monitoring vendor's sales rep promised a migration credit",
        "the exchange's institutional desk needs updated KYC documents",
        "the domain registrar is being acquired; watch for price changes",
        "the hardware reseller has NAS drives back in stock",
    ),
    "budget_note": (
        "infra spend is 8% under budget this quarter",
        "LLM API spend trending to $160 this month",
        "the trading data budget is the biggest line item now",
        "hardware replacement reserve funded for next year",
        "software subscriptions crept up to $310/month",
        "no budget left for conferences this quarter",
        "Sam moved $200/month from tooling to data",
        "the GPU budget only covers on-demand benchmarks",
        "backup storage costs are flat despite growth",
        "consulting budget unused, could fund the Postgres review",
    ),
    "expense": (
        "bought a spare SSD for nas-01, $89",
        "paid for a month of the premium news feed to test it",
        "a USB security key for Lena",
        "upgraded the office router, $140",
        "one-off fee for faster KYC review at the exchange",
        "replaced the UPS battery in the rack",
        "bought the reference book on market microstructure",
        "reimbursed Jonas for the on-call phone plan",
        "a year of the diagramming tool for Ravi's docs",
        "paid the notary fee for the bank paperwork",
    ),
    "paper_note": (
        "MemGPT: hierarchical memory with explicit paging between context and archive",
        "Generative Agents: reflection over recent observations produces higher-level insights",
        "RAPTOR: recursive summary trees help retrieval over long documents",
        "Reflexion: verbal self-feedback improves success over repeated attempts",
        "ColBERTv2: late-interaction retrieval is strong but storage-hungry",
        "Self-RAG: the model decides when to retrieve, which reduces noise",
        "MTEB: small embedding models are competitive on clustering tasks",
        "Toolformer: self-supervised labels for tool use work surprisingly well",
        "Voyager: a skill library lets an agent reuse verified code",
        "Lost in the Middle: position of a fact in a long prompt changes recall",
        "HippoRAG: a knowledge-graph index modelled on the hippocampus improves multi-hop retrieval",
        "A-MEM: agent memory notes linked Zettelkasten-style",
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

# Names and entities: they vary a memory's details, not its meaning.
_LIGHT_SLOTS = frozenset(
    {
        "ticker",
        "alt",
        "side",
        "venue",
        "timeframe",
        "host",
        "service",
        "env",
        "version",
        "repo",
        "colleague",
        "person",
        "module",
        "exp_id",
        "cronjob",
        "compare_a",
        "compare_b",
        "contact",
        "mistake_fix",
        "rotation_note",
    }
)


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
    sizes = (3, 4, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 11, 12, 13, 14, 15)
    for fam in _FAMILIES:
        combos = len(fam.heads) * len(fam.tails)
        k = min(combos, 15, rng.choice(sizes))
        k = max(k, 3)
        base = rng.uniform(1.1, 1.9) if fam.causal else rng.uniform(0.7, 1.5)
        # Ages ≥ 2 days apart put every member on its own calendar date.
        days = [2 * d for d in rng.sample(range(1, (_SPAN_DAYS - 4) // 2), k)]
        cats = list(fam.categories)
        for (h, t), day in zip(_member_combos(rng, fam, k), days, strict=True):
            drafts.append(
                _Draft(
                    template=f"{fam.heads[h]} {fam.tails[t]}",
                    categories=cats,
                    tags=list(fam.tags) + (["lesson"] if fam.causal else []),
                    nexus=list(fam.nexus),
                    importance=_clip(rng.gauss(base, 0.22)),
                    source=rng.choice(
                        ("reflection", "session", "agent") if fam.causal else ("session", "agent", "session")
                    ),
                    age=_old_age(rng, day),
                    family=fam.key,
                )
            )
    return drafts


def _frame_capacity(frame: _Frame) -> int:
    """How often a frame may be used before two of its memories get too close.

    Why: MiniLM scores two fillings that share their main phrase at ~0.85 and
    those sharing one of two descriptive phrases at ~0.7. So a frame may reuse
    its main phrase once when a second descriptive slot varies, never more.
    """
    heavy = sorted(
        (len(_P[name]) for name in _SLOT_RE.findall(frame.text) if name in _P and name not in _LIGHT_SLOTS),
        reverse=True,
    )
    if not heavy:
        return 0
    capacity = heavy[0] * (2 if len(heavy) > 1 else 1)
    return capacity if frame.cap is None else min(capacity, frame.cap)


def _singleton_drafts(rng: random.Random) -> list[_Draft]:
    drafts: list[_Draft] = []
    for category, count in _SINGLETON_COUNTS.items():
        frames = _FRAMES[category]
        left = {i: _frame_capacity(f) for i, f in enumerate(frames)}
        if count > sum(left.values()):
            raise ValueError(f"sample pools for {category!r} hold only {sum(left.values())} distinct memories")
        order: list[_Frame] = []
        while len(order) < count:  # round-robin so every frame is used evenly
            for i, frame in enumerate(frames):
                if left[i] and len(order) < count:
                    left[i] -= 1
                    order.append(frame)
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
    if len(big) < len(plan):
        raise ValueError(f"need {len(plan)} families with ≥ 7 members for the special cases, have {len(big)}")
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
    seen: set[str] = set()
    for index, d in enumerate(drafts):
        when = run_at if d.role == "summary" else now - d.age
        cache: dict[str, str] = {}
        text = filler.fill(d.template, when, cache)
        for _ in range(20):  # never emit the same sentence twice (numbers aside)
            if _skeleton(text) not in seen:
                break
            cache = {}
            text = filler.fill(d.template, when, cache)
        seen.add(_skeleton(text))
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


def _skeleton(text: str) -> str:
    return re.sub(r"[\d.,$%+-]+", "#", text.lower())


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
