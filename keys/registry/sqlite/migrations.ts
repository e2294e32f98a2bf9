import type { DatabaseSync } from "node:sqlite";
import { REGISTRY_MIGRATIONS_TABLE, type Migration, type SchemaReport } from "../../../lib/migrations.ts";
import { migrateSqliteSchema } from "../../../lib/sqlite-migrations.ts";

/**
 * The key registry's SQLite schema, version by version (never edit a released one: add the next).
 *
 * - `keys`: one row per key (keys/registry/rows.ts maps it); the object-valued fields are JSON
 *   text; times are ms since the epoch. (created_at, id) orders and pages the list.
 * - `events`: seq is the rowid, given as max + 1 inside the writing transaction, and SQLite has
 *   one writer at a time: no gaps, committed in seq order.
 * - `idempotency`: the answer to a create per admin token and Idempotency-Key, until expires_at.
 * - `admin_tokens`: SHA-256 of each token, never the token; names and hashes unique.
 * - `webhooks`: subscriptions with their secret (needed to sign), delivery progress (cursor and
 *   retry state) and the delivery lease; `webhook_deliveries`: every attempt, paged by id.
 *   `events_by_key` finds a key's events to fold its record as of one.
 * - `usage_hourly`, `usage_daily`: a key's counts per hour / UTC day by outcome (keys/registry/usage.ts);
 *   `usage_reports` the report ids applied; `usage_bans` each key's last ban recorded (key.banned
 *   once per ban); `usage_thresholds` the usage.threshold events made per key, day and percent.
 * - `signup_counts`: self-serve sign-ups per client address (an IPv6 /64) and UTC day (keys/signups/).
 */
export const SQLITE_REGISTRY_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "keys, events, idempotency, admin tokens",
    sql: `
      CREATE TABLE keys (
        id            TEXT    PRIMARY KEY,
        name          TEXT    NOT NULL,
        owner_id      TEXT,
        metadata      TEXT    NOT NULL,
        plan          TEXT    NOT NULL,
        per_minute    INTEGER NOT NULL,
        per_day       INTEGER NOT NULL,
        scopes        TEXT    NOT NULL,
        allowed_cidrs TEXT    NOT NULL,
        created_at    INTEGER NOT NULL,
        expires_at    INTEGER,
        revoked_at    INTEGER,
        generation    INTEGER NOT NULL,
        grace_until   TEXT    NOT NULL,
        kid           TEXT    NOT NULL,
        last_used_at  INTEGER
      ) STRICT;
      CREATE INDEX keys_by_created ON keys (created_at, id);
      CREATE INDEX keys_by_owner ON keys (owner_id, created_at, id);
      CREATE TABLE events (
        seq     INTEGER PRIMARY KEY,
        at      INTEGER NOT NULL,
        actor   TEXT    NOT NULL,
        type    TEXT    NOT NULL,
        key_id  TEXT,
        changes TEXT    NOT NULL
      ) STRICT;
      CREATE TABLE idempotency (
        token_id     TEXT    NOT NULL,
        key          TEXT    NOT NULL,
        request_hash TEXT    NOT NULL,
        status       INTEGER NOT NULL,
        body         TEXT    NOT NULL,
        expires_at   INTEGER NOT NULL,
        PRIMARY KEY (token_id, key)
      ) STRICT;
      CREATE INDEX idempotency_by_expiry ON idempotency (expires_at);
      CREATE TABLE admin_tokens (
        id         TEXT    PRIMARY KEY,
        name       TEXT    NOT NULL UNIQUE,
        scopes     TEXT    NOT NULL,
        hash       TEXT    NOT NULL UNIQUE,
        created_at INTEGER NOT NULL,
        revoked_at INTEGER
      ) STRICT;
    `,
  },
  {
    version: 2,
    name: "usage history",
    sql: `
      CREATE TABLE usage_hourly (
        key_id    TEXT    NOT NULL,
        start     INTEGER NOT NULL,
        c2xx      INTEGER NOT NULL,
        c4xx      INTEGER NOT NULL,
        c5xx      INTEGER NOT NULL,
        limited   INTEGER NOT NULL,
        banned    INTEGER NOT NULL,
        forbidden INTEGER NOT NULL,
        PRIMARY KEY (key_id, start)
      ) STRICT;
      CREATE INDEX usage_hourly_by_start ON usage_hourly (start);
      CREATE TABLE usage_daily (
        key_id    TEXT    NOT NULL,
        start     INTEGER NOT NULL,
        c2xx      INTEGER NOT NULL,
        c4xx      INTEGER NOT NULL,
        c5xx      INTEGER NOT NULL,
        limited   INTEGER NOT NULL,
        banned    INTEGER NOT NULL,
        forbidden INTEGER NOT NULL,
        PRIMARY KEY (key_id, start)
      ) STRICT;
      CREATE INDEX usage_daily_by_start ON usage_daily (start);
      CREATE TABLE usage_reports (
        report_id TEXT    PRIMARY KEY,
        at        INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX usage_reports_by_at ON usage_reports (at);
      CREATE TABLE usage_bans (
        key_id TEXT    PRIMARY KEY,
        until  INTEGER NOT NULL
      ) STRICT;
      CREATE TABLE usage_thresholds (
        key_id  TEXT    NOT NULL,
        day     INTEGER NOT NULL,
        percent INTEGER NOT NULL,
        PRIMARY KEY (key_id, day, percent)
      ) STRICT;
    `,
  },
  {
    version: 3,
    name: "webhook subscriptions, delivery progress and attempts",
    sql: `
      CREATE TABLE webhooks (
        id               TEXT    PRIMARY KEY,
        url              TEXT    NOT NULL,
        events           TEXT    NOT NULL,
        secret           TEXT    NOT NULL,
        created_at       INTEGER NOT NULL,
        deleted_at       INTEGER,
        cursor           INTEGER NOT NULL,
        failures         INTEGER NOT NULL DEFAULT 0,
        first_attempt_at INTEGER,
        next_attempt_at  INTEGER,
        lease_owner      TEXT,
        lease_until      INTEGER
      ) STRICT;
      CREATE TABLE webhook_deliveries (
        id         INTEGER PRIMARY KEY,
        webhook_id TEXT    NOT NULL,
        event_seq  INTEGER NOT NULL,
        type       TEXT    NOT NULL,
        attempt    INTEGER NOT NULL,
        status     INTEGER,
        at         INTEGER NOT NULL,
        error      TEXT
      ) STRICT;
      CREATE INDEX webhook_deliveries_by_webhook ON webhook_deliveries (webhook_id, id);
      CREATE INDEX webhook_deliveries_by_at ON webhook_deliveries (at);
      CREATE INDEX events_by_key ON events (key_id, seq);
    `,
  },
  {
    version: 4,
    name: "sign-ups per client address and UTC day",
    sql: `
      CREATE TABLE signup_counts (
        address TEXT    NOT NULL,
        day     TEXT    NOT NULL,
        count   INTEGER NOT NULL,
        PRIMARY KEY (address, day)
      ) STRICT;
      CREATE INDEX signup_counts_by_day ON signup_counts (day);
    `,
  },
];

/** Brings the file to the latest version (lib/sqlite-migrations.ts); throws when it is newer than the code. */
export const migrateRegistrySqlite = (db: DatabaseSync, migrations = SQLITE_REGISTRY_MIGRATIONS): SchemaReport =>
  migrateSqliteSchema(db, migrations, undefined, REGISTRY_MIGRATIONS_TABLE);
