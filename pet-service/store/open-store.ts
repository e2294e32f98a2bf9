import type { Logger } from "../../lib/logger.ts";
import { withoutPasswords } from "../../lib/redact-url.ts";
import { isPostgresUrl } from "./pets-db-url.ts";
import type { PetServiceMetrics } from "../metrics.ts";
import type { PetStore } from "./pet-store.ts";
import { PostgresPetStore } from "./postgres/store.ts";
import { postgresTransferSource, postgresTransferTarget } from "./postgres/transfer.ts";
import { SqlitePetStore } from "./sqlite/store.ts";
import { sqliteTransferSource, sqliteTransferTarget } from "./sqlite/transfer.ts";
import type { TransferSource, TransferTarget } from "./transfer.ts";

/** PETS_DB for logs and messages: a URL's password (before the @ or as ?password=) is replaced by `***`. */
export function describePetsDb(petsDb: string): string {
  return isPostgresUrl(petsDb) ? withoutPasswords(petsDb) : petsDb;
}

export interface OpenStoreOptions {
  metrics?: PetServiceMetrics;
  logger?: Logger;
  /** PostgreSQL only: connections in the pool, at most. */
  poolSize?: number;
}

/** The store PETS_DB selects, open and migrated to the latest schema. */
export function openPetStore(petsDb: string, options: OpenStoreOptions = {}): Promise<PetStore> {
  const { metrics, logger, poolSize } = options;
  if (isPostgresUrl(petsDb)) {
    return PostgresPetStore.open(petsDb, { ...(metrics && { metrics }), ...(logger && { logger }), ...(poolSize && { poolSize }) });
  }
  return SqlitePetStore.open(petsDb, metrics ? { metrics } : {});
}

/** The reading end of `pets-db copy` on PETS_DB (its schema brought up to date by the caller). */
export function openTransferSource(petsDb: string): Promise<TransferSource> {
  return isPostgresUrl(petsDb) ? postgresTransferSource(petsDb) : sqliteTransferSource(petsDb);
}

/** The writing end of `pets-db copy` on PETS_DB (its schema brought up to date by the caller). */
export function openTransferTarget(petsDb: string): Promise<TransferTarget> {
  return isPostgresUrl(petsDb) ? postgresTransferTarget(petsDb) : sqliteTransferTarget(petsDb);
}
