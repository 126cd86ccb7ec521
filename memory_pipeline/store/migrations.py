"""Versioned, idempotent schema migrations. Append only: never edit a released migration."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    statements: tuple[str, ...]


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "memories, embeddings, compression_log, atoms",
        (
            """
            CREATE TABLE IF NOT EXISTS memories (
                id               VARCHAR PRIMARY KEY,
                content          VARCHAR NOT NULL,
                importance       DOUBLE NOT NULL,
                categories       VARCHAR[] NOT NULL,
                tags             VARCHAR[] NOT NULL,
                nexus_keys       VARCHAR[] NOT NULL,
                kind             VARCHAR NOT NULL,
                source           VARCHAR,
                session_id       VARCHAR,
                created_at       TIMESTAMP NOT NULL,
                token_count      INTEGER NOT NULL,
                pinned           BOOLEAN NOT NULL,
                locked           BOOLEAN NOT NULL,
                lifecycle        VARCHAR NOT NULL,
                compressed_from  JSON,
                archived_by      VARCHAR,
                archived_at      TIMESTAMP,
                prior_importance DOUBLE,
                created_by_run   VARCHAR
            )
            """,
            """
            CREATE TABLE IF NOT EXISTS embeddings (
                memory_id  VARCHAR NOT NULL,
                model      VARCHAR NOT NULL,
                dim        INTEGER NOT NULL,
                vector     FLOAT[] NOT NULL,
                created_at TIMESTAMP NOT NULL,
                PRIMARY KEY (memory_id, model)
            )
            """,
            """
            CREATE TABLE IF NOT EXISTS compression_log (
                id                   VARCHAR PRIMARY KEY,
                cluster_fingerprint  VARCHAR NOT NULL,
                cluster_id           VARCHAR NOT NULL,
                compressed_memory_id VARCHAR,
                status               VARCHAR NOT NULL,
                reason               VARCHAR,
                member_count         INTEGER NOT NULL,
                compression_ratio    DOUBLE,
                run_id               VARCHAR NOT NULL,
                created_at           TIMESTAMP NOT NULL
            )
            """,
            "CREATE INDEX IF NOT EXISTS idx_compression_log_fingerprint ON compression_log(cluster_fingerprint)",
            "CREATE INDEX IF NOT EXISTS idx_compression_log_run ON compression_log(run_id)",
            """
            CREATE TABLE IF NOT EXISTS atoms (
                id           VARCHAR PRIMARY KEY,
                subject      VARCHAR NOT NULL,
                action       VARCHAR NOT NULL,
                outcome      VARCHAR NOT NULL,
                consequences VARCHAR NOT NULL,
                confidence   DOUBLE NOT NULL,
                origin       VARCHAR NOT NULL,
                created_at   TIMESTAMP NOT NULL,
                updated_at   TIMESTAMP NOT NULL
            )
            """,
            """
            CREATE TABLE IF NOT EXISTS atom_sources (
                atom_id          VARCHAR NOT NULL,
                memory_id        VARCHAR NOT NULL,
                run_id           VARCHAR NOT NULL,
                action           VARCHAR NOT NULL,
                confidence_delta DOUBLE NOT NULL,
                created_at       TIMESTAMP NOT NULL
            )
            """,
            """
            CREATE TABLE IF NOT EXISTS consolidation_runs (
                run_id      VARCHAR PRIMARY KEY,
                started_at  TIMESTAMP NOT NULL,
                finished_at TIMESTAMP,
                verdict     VARCHAR,
                report      JSON
            )
            """,
        ),
    ),
    Migration(
        2,
        "run lease, per-run archive provenance, atom status",
        (
            """
            CREATE TABLE IF NOT EXISTS leases (
                name        VARCHAR PRIMARY KEY,
                holder      VARCHAR NOT NULL,
                pid         INTEGER NOT NULL,
                host        VARCHAR NOT NULL,
                acquired_at TIMESTAMP NOT NULL,
                expires_at  TIMESTAMP NOT NULL
            )
            """,
            "ALTER TABLE memories ADD COLUMN IF NOT EXISTS archived_by_run VARCHAR",
            "ALTER TABLE atoms ADD COLUMN IF NOT EXISTS status VARCHAR DEFAULT 'active'",
        ),
    ),
    Migration(
        4,
        "threshold graph of the eligible set, for incremental clustering",
        (
            # One row per graph: what it was built for. Nodes and edges carry no index (bulk-written,
            # read whole); a node is a memory id plus a checksum of its vector, an edge two node numbers a < b.
            """
            CREATE TABLE IF NOT EXISTS cluster_graph (
                name       VARCHAR PRIMARY KEY,
                model      VARCHAR NOT NULL,
                threshold  DOUBLE NOT NULL,
                dim        INTEGER NOT NULL,
                node_count BIGINT NOT NULL,
                edge_count BIGINT NOT NULL,
                next_node  BIGINT NOT NULL,
                generation BIGINT NOT NULL,
                mode       VARCHAR NOT NULL,
                run_id     VARCHAR,
                updated_at TIMESTAMP NOT NULL
            )
            """,
            """
            CREATE TABLE IF NOT EXISTS cluster_graph_nodes (
                node      BIGINT NOT NULL,
                memory_id VARCHAR NOT NULL,
                checksum  UBIGINT NOT NULL
            )
            """,
            "CREATE TABLE IF NOT EXISTS cluster_graph_edges (a BIGINT NOT NULL, b BIGINT NOT NULL)",
        ),
    ),
    # Version ranges per domain, so domains append without colliding: journals 10–19, graph-preserving
    # compaction 20–29, rollups 30–39, tiered compaction 40–49. Applied in this tuple's order.
    Migration(
        10,
        "sessions parsed from transcripts (journals); rollups and recall read them",
        (
            """
            CREATE TABLE IF NOT EXISTS sessions (
                session_id   VARCHAR PRIMARY KEY,
                day          DATE NOT NULL,
                started_at   TIMESTAMP NOT NULL,
                ended_at     TIMESTAMP NOT NULL,
                title        VARCHAR NOT NULL,
                slug         VARCHAR NOT NULL,
                path         VARCHAR NOT NULL,
                participants VARCHAR[] NOT NULL,
                tags         VARCHAR[] NOT NULL,
                turn_count   INTEGER NOT NULL,
                text         VARCHAR NOT NULL,
                salience     DOUBLE,
                frontmatter  JSON NOT NULL,
                parsed_at    TIMESTAMP NOT NULL
            )
            """,
            "CREATE INDEX IF NOT EXISTS idx_sessions_day ON sessions(day)",
        ),
    ),
    Migration(
        20,
        "graph-preserving compaction: usage decay, human_authored, rolled-up keys, tombstones, outbox, hubs",
        (
            "ALTER TABLE memories ADD COLUMN IF NOT EXISTS human_authored BOOLEAN DEFAULT false",
            "ALTER TABLE memories ADD COLUMN IF NOT EXISTS included_count_total BIGINT DEFAULT 0",
            # decayed inclusions as of usage_day (the last day bucket applied): × 0.95 per day, + 1 per inclusion
            "ALTER TABLE memories ADD COLUMN IF NOT EXISTS included_count_decay DOUBLE DEFAULT 0",
            "ALTER TABLE memories ADD COLUMN IF NOT EXISTS usage_day DATE",
            "ALTER TABLE memories ADD COLUMN IF NOT EXISTS rolled_up_tags VARCHAR[]",
            "ALTER TABLE memories ADD COLUMN IF NOT EXISTS rolled_up_nexus_keys VARCHAR[]",
            "ALTER TABLE memories ADD COLUMN IF NOT EXISTS summary_of VARCHAR[]",
            """
            CREATE TABLE IF NOT EXISTS usage_events (
                event_id    VARCHAR NOT NULL,
                memory_id   VARCHAR NOT NULL,
                day         DATE NOT NULL,
                count       INTEGER NOT NULL,
                source      VARCHAR,
                recorded_at TIMESTAMP NOT NULL
            )
            """,
            "CREATE INDEX IF NOT EXISTS idx_usage_events_id ON usage_events(event_id)",
            """
            CREATE TABLE IF NOT EXISTS tombstones (
                memory_id              VARCHAR NOT NULL,
                replaced_by_summary_id VARCHAR NOT NULL,
                cluster_id             VARCHAR NOT NULL,
                run_id                 VARCHAR NOT NULL,
                archived_at            TIMESTAMP NOT NULL,
                tags                   VARCHAR[] NOT NULL,
                nexus_keys             VARCHAR[] NOT NULL
            )
            """,
            "CREATE INDEX IF NOT EXISTS idx_tombstones_memory ON tombstones(memory_id)",
            # follow-up actions for external indexes; id is the idempotency key the index dedupes on
            """
            CREATE TABLE IF NOT EXISTS outbox (
                id          VARCHAR NOT NULL,
                index_name  VARCHAR NOT NULL,
                action      VARCHAR NOT NULL,
                target_id   VARCHAR NOT NULL,
                payload     JSON,
                status      VARCHAR NOT NULL,
                run_id      VARCHAR NOT NULL,
                created_at  TIMESTAMP NOT NULL,
                claimed_by  VARCHAR,
                claimed_at  TIMESTAMP,
                attempts    INTEGER NOT NULL DEFAULT 0,
                done_at     TIMESTAMP,
                last_error  VARCHAR
            )
            """,
            """
            CREATE TABLE IF NOT EXISTS graph_hubs (
                run_id      VARCHAR NOT NULL,
                memory_id   VARCHAR NOT NULL,
                centrality  INTEGER NOT NULL,
                hot_keys    VARCHAR[] NOT NULL,
                action      VARCHAR NOT NULL,
                recorded_at TIMESTAMP NOT NULL
            )
            """,
        ),
    ),
    Migration(
        30,
        "rollups: compression_meta per session (its fixed ordinal), Core and Sphere rows",
        (
            """
            CREATE TABLE IF NOT EXISTS compression_meta (
                session_id  VARCHAR PRIMARY KEY,
                ordinal     BIGINT NOT NULL UNIQUE,
                session_seq INTEGER NOT NULL,
                core_seq    INTEGER NOT NULL,
                sphere_seq  INTEGER NOT NULL,
                core_id     VARCHAR NOT NULL,
                sphere_id   VARCHAR NOT NULL,
                late        BOOLEAN NOT NULL,
                assigned_at TIMESTAMP NOT NULL
            )
            """,
            """
            CREATE TABLE IF NOT EXISTS rollup_cores (
                core_id            VARCHAR PRIMARY KEY,
                sphere_seq         INTEGER NOT NULL,
                core_seq           INTEGER NOT NULL,
                path               VARCHAR NOT NULL,
                timestamp_start    TIMESTAMP NOT NULL,
                timestamp_end      TIMESTAMP NOT NULL,
                session_count      INTEGER NOT NULL,
                source_sessions    VARCHAR[] NOT NULL,
                compression_method VARCHAR NOT NULL,
                document           JSON NOT NULL,
                built_at           TIMESTAMP NOT NULL
            )
            """,
            """
            CREATE TABLE IF NOT EXISTS rollup_spheres (
                sphere_id          VARCHAR PRIMARY KEY,
                sphere_seq         INTEGER NOT NULL,
                path               VARCHAR NOT NULL,
                timestamp_start    TIMESTAMP NOT NULL,
                timestamp_end      TIMESTAMP NOT NULL,
                core_count         INTEGER NOT NULL,
                session_count      INTEGER NOT NULL,
                source_cores       VARCHAR[] NOT NULL,
                compression_method VARCHAR NOT NULL,
                document           JSON NOT NULL,
                built_at           TIMESTAMP NOT NULL
            )
            """,
        ),
    ),
    Migration(
        5,
        "embeddings: how each vector came to be (computed | plugin | imported | mean_of_members)",
        (
            "ALTER TABLE embeddings ADD COLUMN IF NOT EXISTS source VARCHAR",
            # before this column only the two built-in models were computed by the pipeline itself
            """UPDATE embeddings SET source = CASE WHEN model IN ('sentence-transformers/all-MiniLM-L6-v2',
               'hashing-bow-256') THEN 'computed' ELSE 'imported' END WHERE source IS NULL""",
        ),
    ),
    Migration(
        11,
        "journals: when an extracted memory was superseded by a re-extraction (lifecycle 'superseded')",
        ("ALTER TABLE memories ADD COLUMN IF NOT EXISTS superseded_at TIMESTAMP",),
    ),
    Migration(
        21,
        "graph: tombstones reverted by a rollback (never deleted); what a dedupe archive added to its kept twin",
        (
            "ALTER TABLE tombstones ADD COLUMN IF NOT EXISTS reverted_at TIMESTAMP",
            "ALTER TABLE tombstones ADD COLUMN IF NOT EXISTS reverted_by VARCHAR",
            # exact dedupe carries the archived twin's tags/keys to the kept one; a rollback takes back these
            "ALTER TABLE tombstones ADD COLUMN IF NOT EXISTS added_tags VARCHAR[]",
            "ALTER TABLE tombstones ADD COLUMN IF NOT EXISTS added_nexus_keys VARCHAR[]",
        ),
    ),
    Migration(
        37,
        "agents' writes: why a memory was forgotten (its tombstone, run_id 'forget')",
        ("ALTER TABLE tombstones ADD COLUMN IF NOT EXISTS reason VARCHAR",),
    ),
    Migration(
        31,
        "search: the change log of memories whose readability or ranking metadata changed (the index's cursor)",
        (
            "CREATE SEQUENCE IF NOT EXISTS memory_change_seq START 1",
            """
            CREATE TABLE IF NOT EXISTS memory_changes (
                seq       BIGINT NOT NULL DEFAULT nextval('memory_change_seq'),
                memory_id VARCHAR NOT NULL,
                changed_at TIMESTAMP NOT NULL
            )
            """,
        ),
    ),
    Migration(
        38,
        "facts: validity — a memory superseded by a later value of the same fact, until when, and the log of "
        "supersessions (a night's, undone by its rollback; an operator's undo)",
        (
            "ALTER TABLE memories ADD COLUMN IF NOT EXISTS superseded_by VARCHAR",
            "ALTER TABLE memories ADD COLUMN IF NOT EXISTS valid_until TIMESTAMP",
            # the last time the memory was stated (a re-stated memory is current again); NULL: its created_at
            "ALTER TABLE memories ADD COLUMN IF NOT EXISTS stated_at TIMESTAMP",
            """
            CREATE TABLE IF NOT EXISTS supersessions (
                memory_id     VARCHAR NOT NULL,
                superseded_by VARCHAR NOT NULL,
                valid_until   TIMESTAMP NOT NULL,
                fact_key      VARCHAR NOT NULL,
                run_id        VARCHAR NOT NULL,
                made_at       TIMESTAMP NOT NULL,
                reverted_at   TIMESTAMP,
                reverted_by   VARCHAR
            )
            """,
        ),
    ),
)
