import type pg from "pg";
import { REGISTRY_MIGRATIONS_TABLE, type Migration, type SchemaReport } from "../../../lib/migrations.ts";
import { migratePostgresSchema } from "../../../lib/postgres-migrations.ts";

/**
 * The key registry's PostgreSQL schema, version by version (never edit a released one: add the
 * next). As the SQLite one (../sqlite/migrations.ts), with `json` columns (kept as written, key
 * order included) and bigint times in ms. `event_counter` is one row holding the last seq: every
 * writing transaction increments it, which takes its row lock until COMMIT, so writers on any
 * replica are serialised and events get seqs without gaps and become visible in seq order.
 * Version 2: the usage history's tables, as SQLite's; version 3: the webhooks' tables, as SQLite's.
 * KEYS_DB may share a database with PETS_DB: no table names collide, and the versions live in
 * `key_registry_migrations`.
 */
export const POSTGRES_REGISTRY_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "keys, events, idempotency, admin tokens",
    sql: `
      CREATE TABLE keys (
        id            text    PRIMARY KEY,
        name          text    NOT NULL,
        owner_id      text,
        metadata      json    NOT NULL,
        plan          text    NOT NULL,
        per_minute    bigint  NOT NULL,
        per_day       bigint  NOT NULL,
        scopes        json    NOT NULL,
        allowed_cidrs json    NOT NULL,
        created_at    bigint  NOT NULL,
        expires_at    bigint,
        revoked_at    bigint,
        generation    integer NOT NULL,
        grace_until   json    NOT NULL,
        kid           text    NOT NULL,
        last_used_at  bigint
      );
      CREATE INDEX keys_by_created ON keys (created_at, id);
      CREATE INDEX keys_by_owner ON keys (owner_id, created_at, id);
      CREATE TABLE events (
        seq     bigint PRIMARY KEY,
        at      bigint NOT NULL,
        actor   text   NOT NULL,
        type    text   NOT NULL,
        key_id  text,
        changes json   NOT NULL
      );
      CREATE TABLE event_counter (
        one boolean PRIMARY KEY DEFAULT true CHECK (one),
        seq bigint  NOT NULL
      );
      INSERT INTO event_counter (seq) VALUES (0);
      CREATE TABLE idempotency (
        token_id     text    NOT NULL,
        key          text    NOT NULL,
        request_hash text    NOT NULL,
        status       integer NOT NULL,
        body         text    NOT NULL,
        expires_at   bigint  NOT NULL,
        PRIMARY KEY (token_id, key)
      );
      CREATE INDEX idempotency_by_expiry ON idempotency (expires_at);
      CREATE TABLE admin_tokens (
        id         text   PRIMARY KEY,
        name       text   NOT NULL UNIQUE,
        scopes     json   NOT NULL,
        hash       text   NOT NULL UNIQUE,
        created_at bigint NOT NULL,
        revoked_at bigint
      );
    `,
  },
  {
    version: 2,
    name: "usage history",
    sql: `
      CREATE TABLE usage_hourly (
        key_id    text   NOT NULL,
        start     bigint NOT NULL,
        c2xx      bigint NOT NULL,
        c4xx      bigint NOT NULL,
        c5xx      bigint NOT NULL,
        limited   bigint NOT NULL,
        banned    bigint NOT NULL,
        forbidden bigint NOT NULL,
        PRIMARY KEY (key_id, start)
      );
      CREATE INDEX usage_hourly_by_start ON usage_hourly (start);
      CREATE TABLE usage_daily (
        key_id    text   NOT NULL,
        start     bigint NOT NULL,
        c2xx      bigint NOT NULL,
        c4xx      bigint NOT NULL,
        c5xx      bigint NOT NULL,
        limited   bigint NOT NULL,
        banned    bigint NOT NULL,
        forbidden bigint NOT NULL,
        PRIMARY KEY (key_id, start)
      );
      CREATE INDEX usage_daily_by_start ON usage_daily (start);
      CREATE TABLE usage_reports (
        report_id text   PRIMARY KEY,
        at        bigint NOT NULL
      );
      CREATE INDEX usage_reports_by_at ON usage_reports (at);
      CREATE TABLE usage_bans (
        key_id text   PRIMARY KEY,
        until  bigint NOT NULL
      );
      CREATE TABLE usage_thresholds (
        key_id  text    NOT NULL,
        day     bigint  NOT NULL,
        percent integer NOT NULL,
        PRIMARY KEY (key_id, day, percent)
      );
    `,
  },
  {
    version: 3,
    name: "webhook subscriptions, delivery progress and attempts",
    sql: `
      CREATE TABLE webhooks (
        id               text    PRIMARY KEY,
        url              text    NOT NULL,
        events           json    NOT NULL,
        secret           text    NOT NULL,
        created_at       bigint  NOT NULL,
        deleted_at       bigint,
        cursor           bigint  NOT NULL,
        failures         integer NOT NULL DEFAULT 0,
        first_attempt_at bigint,
        next_attempt_at  bigint,
        lease_owner      text,
        lease_until      bigint
      );
      CREATE TABLE webhook_deliveries (
        id         bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        webhook_id text    NOT NULL,
        event_seq  bigint  NOT NULL,
        type       text    NOT NULL,
        attempt    integer NOT NULL,
        status     integer,
        at         bigint  NOT NULL,
        error      text
      );
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
        address text    NOT NULL,
        day     text    NOT NULL,
        count   integer NOT NULL,
        PRIMARY KEY (address, day)
      );
      CREATE INDEX signup_counts_by_day ON signup_counts (day);
    `,
  },
];

/** The registry's advisory lock for migrations: "keys" in ASCII (the pet store's is "pets"). */
const MIGRATION_LOCK = 0x6b657973;

export const migrateRegistryPostgres = (pool: pg.Pool, migrations = POSTGRES_REGISTRY_MIGRATIONS): Promise<SchemaReport> =>
  migratePostgresSchema(pool, migrations, MIGRATION_LOCK, REGISTRY_MIGRATIONS_TABLE);
