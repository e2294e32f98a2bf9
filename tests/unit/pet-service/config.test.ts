import { describe, expect, it } from "vitest";
import { ConfigError } from "../../../lib/config.ts";
import { loadConfig } from "../../../pet-service/config.ts";

/** Tracing with no OTEL_* set: no endpoint, so nothing is exported (lib/tracing/config.ts). */
const NO_EXPORT = { protocol: "http/protobuf", sampler: "parentbased_always_on", ratio: 1, batch: {} };

describe("pet-service config", () => {
  it("defaults to loopback:50051 and data/pets.sqlite, frozen", () => {
    const config = loadConfig({});
    expect(config).toEqual({ host: "127.0.0.1", port: 50051, petsDb: "data/pets.sqlite", poolSize: 10, tracing: NO_EXPORT });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it("reads every variable", () => {
    expect(loadConfig({ PET_SERVICE_HOST: "0.0.0.0", PET_SERVICE_PORT: "6000", PETS_DB: "/var/lib/pets/db.sqlite" })).toEqual({
      host: "0.0.0.0",
      port: 6000,
      petsDb: "/var/lib/pets/db.sqlite",
      poolSize: 10,
      tracing: NO_EXPORT,
    });
    expect(loadConfig({ PET_SERVICE_HOST: "::" }).host).toBe("::");
    expect(loadConfig({ PET_SERVICE_HOST: "pets.internal" }).host).toBe("pets.internal");
  });

  it.each([
    ["PET_SERVICE_PORT", "fifty"],
    ["PET_SERVICE_PORT", "65536"],
    ["PET_SERVICE_HOST", "not a host"],
    ["PET_SERVICE_HOST", "http://0.0.0.0"],
    ["METRICS_PORT", "metrics"],
    ["METRICS_PORT", "65536"],
    ["METRICS_PORT", "-1"],
    ["METRICS_PORT", "94.64"],
  ])("a bad %s (%j) is a ConfigError naming it", (variable, value) => {
    const load = () => loadConfig({ [variable]: value });
    expect(load).toThrowError(ConfigError);
    expect(load).toThrowError(new RegExp(`^invalid configuration: ${variable} .*${JSON.stringify(value).replace(/[./]/g, "\\$&")}`));
  });

  describe("METRICS_PORT", () => {
    it("is optional: unset or empty means no HTTP listener (no metricsPort)", () => {
      expect(loadConfig({})).not.toHaveProperty("metricsPort");
      expect(loadConfig({ METRICS_PORT: "" })).not.toHaveProperty("metricsPort");
    });

    it("is a port; 0 picks a free one", () => {
      expect(loadConfig({ METRICS_PORT: "9464" })).toEqual({ host: "127.0.0.1", port: 50051, petsDb: "data/pets.sqlite", poolSize: 10, metricsPort: 9464, tracing: NO_EXPORT });
      expect(loadConfig({ METRICS_PORT: "0" }).metricsPort).toBe(0);
      expect(Object.isFrozen(loadConfig({ METRICS_PORT: "9464" }))).toBe(true);
    });

    it.each([
      [{ METRICS_PORT: "50051" }, "50051"],
      [{ METRICS_PORT: "6000", PET_SERVICE_PORT: "6000" }, "6000"],
    ])("must differ from PET_SERVICE_PORT: %j", (env, got) => {
      const load = () => loadConfig(env);
      expect(load).toThrowError(ConfigError);
      expect(load).toThrowError(`invalid configuration: METRICS_PORT must differ from PET_SERVICE_PORT (got "${got}")`);
    });

    it("may be 0 alongside PET_SERVICE_PORT=0 (both pick free ports)", () => {
      expect(loadConfig({ METRICS_PORT: "0", PET_SERVICE_PORT: "0" })).toMatchObject({ port: 0, metricsPort: 0 });
    });

    it("reports a bad value on one line naming the variable", () => {
      let message = "";
      try {
        loadConfig({ METRICS_PORT: "nine" });
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message).toBe('invalid configuration: METRICS_PORT must be a port number (got "nine")');
    });
  });

  describe("PETS_DB", () => {
    it("is a SQLite path or a PostgreSQL URL (postgres:// or postgresql://)", () => {
      expect(loadConfig({ PETS_DB: "postgres://pets:secret@db:5432/pets" }).petsDb).toBe("postgres://pets:secret@db:5432/pets");
      expect(loadConfig({ PETS_DB: "postgresql://db/pets?sslmode=require" }).petsDb).toBe("postgresql://db/pets?sslmode=require");
      expect(loadConfig({ PETS_DB: "./pets.sqlite" }).petsDb).toBe("./pets.sqlite");
    });

    it.each(["mysql://db/pets", "file:///var/lib/pets.sqlite", "sqlite://pets.sqlite"])("refuses another URL scheme: %s", (value) => {
      expect(() => loadConfig({ PETS_DB: value })).toThrowError(/^invalid configuration: PETS_DB must be a SQLite file path or a postgres:\/\/ /);
    });

    it("PETS_DB_POOL_SIZE bounds the PostgreSQL pool: 1..1000, default 10", () => {
      expect(loadConfig({ PETS_DB_POOL_SIZE: "25" }).poolSize).toBe(25);
      for (const bad of ["0", "1001", "ten", "2.5", " ", "0x10", "1e2"]) expect(() => loadConfig({ PETS_DB_POOL_SIZE: bad })).toThrowError(/^invalid configuration: PETS_DB_POOL_SIZE /);
    });
  });

  describe("TLS (PET_SERVICE_TLS_*)", () => {
    it("is off without a certificate; TLS with the certificate and key; mTLS with a client CA too", () => {
      expect(loadConfig({})).not.toHaveProperty("tls");
      expect(loadConfig({ PET_SERVICE_TLS_CERT: "/tls/tls.crt", PET_SERVICE_TLS_KEY: "/tls/tls.key" }).tls).toEqual({
        cert: { variable: "PET_SERVICE_TLS_CERT", path: "/tls/tls.crt" },
        key: { variable: "PET_SERVICE_TLS_KEY", path: "/tls/tls.key" },
      });
      expect(loadConfig({ PET_SERVICE_TLS_CERT: "/tls/tls.crt", PET_SERVICE_TLS_KEY: "/tls/tls.key", PET_SERVICE_TLS_CLIENT_CA: "/tls/ca.crt" }).tls?.ca).toEqual({
        variable: "PET_SERVICE_TLS_CLIENT_CA",
        path: "/tls/ca.crt",
      });
    });

    it.each([
      ["PET_SERVICE_TLS_KEY", { PET_SERVICE_TLS_CERT: "/tls/tls.crt" }],
      ["PET_SERVICE_TLS_KEY", { PET_SERVICE_TLS_KEY: "/tls/tls.key" }],
      ["PET_SERVICE_TLS_CLIENT_CA", { PET_SERVICE_TLS_CLIENT_CA: "/tls/ca.crt" }],
    ])("refuses an incomplete set naming %s", (variable, env) => {
      expect(() => loadConfig(env)).toThrowError(new RegExp(`^invalid configuration: ${variable} `));
    });
  });
});
