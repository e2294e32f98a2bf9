import { describe, expect, it } from "vitest";
import { describePetsDb } from "../../../../pet-service/store/open-store.ts";

describe("PETS_DB as logs and messages show it", () => {
  it("masks the password of a postgres:// URL", () => {
    expect(describePetsDb("postgres://pets:s3cret@db:5432/pets")).toBe("postgres://pets:***@db:5432/pets");
  });

  // node-postgres (pg-connection-string) takes every query parameter as a setting, password
  // included, and prefers it to the one before the @.
  it("masks a password given as a query parameter too", () => {
    const shown = describePetsDb("postgres://pets@db:5432/pets?password=s3cret&sslmode=require");
    expect(shown).not.toContain("s3cret");
    expect(shown).toBe("postgres://pets@db:5432/pets?password=***&sslmode=require");
  });

  it("shows a SQLite path as it is", () => {
    expect(describePetsDb("data/pets.sqlite")).toBe("data/pets.sqlite");
  });
});
