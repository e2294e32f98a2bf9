import { describe, expect, it } from "vitest";
import { ConfigError } from "../../../lib/config.js";
import { loadConfig } from "../../../pet-service/config.js";

describe("pet-service config", () => {
  it("defaults to loopback:50051 and data/pets.sqlite, frozen", () => {
    const config = loadConfig({});
    expect(config).toEqual({ host: "127.0.0.1", port: 50051, dbPath: "data/pets.sqlite" });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it("reads every variable", () => {
    expect(loadConfig({ PET_SERVICE_HOST: "0.0.0.0", PET_SERVICE_PORT: "6000", PETS_DB: "/var/lib/pets/db.sqlite" })).toEqual({
      host: "0.0.0.0",
      port: 6000,
      dbPath: "/var/lib/pets/db.sqlite",
    });
    expect(loadConfig({ PET_SERVICE_HOST: "::" }).host).toBe("::");
    expect(loadConfig({ PET_SERVICE_HOST: "pets.internal" }).host).toBe("pets.internal");
  });

  it.each([
    ["PET_SERVICE_PORT", "fifty"],
    ["PET_SERVICE_PORT", "65536"],
    ["PET_SERVICE_HOST", "not a host"],
    ["PET_SERVICE_HOST", "http://0.0.0.0"],
  ])("a bad %s (%j) is a ConfigError naming it", (variable, value) => {
    const load = () => loadConfig({ [variable]: value });
    expect(load).toThrowError(ConfigError);
    expect(load).toThrowError(new RegExp(`^invalid configuration: ${variable} .*${JSON.stringify(value).replace(/[./]/g, "\\$&")}`));
  });
});
