import { describe, expect, it } from "vitest";
import { loadGatewayConfig, petServiceTlsFiles } from "../../../gateway/config.ts";

describe("gateway configuration", () => {
  it("has the documented defaults", () => {
    expect(loadGatewayConfig({})).toMatchObject({
      GATEWAY_PORT: 8080,
      PET_SERVICE_ADDR: "127.0.0.1:50051",
      KEYS_URL: "http://127.0.0.1:8081",
      BAN_AFTER: 20,
      BAN_SECONDS: 900,
      TRUST_PROXY: false,
      HEADERS_TIMEOUT_MS: 10_000,
      REQUEST_TIMEOUT_MS: 30_000,
      REDIS_COMMAND_TIMEOUT_MS: 2000,
      SIGNUP: "off",
    });
    expect(loadGatewayConfig({}).REDIS_URL).toBeUndefined();
    // The gateway needs no KEYS_DIR: the key service serves its public keys and the change feed.
    expect(loadGatewayConfig({}).KEYS_DIR).toBeUndefined();
    expect(loadGatewayConfig({}).KEYS_SERVICE_TOKEN).toBeUndefined();
  });

  it.each(["redis://127.0.0.1:6379", "rediss://user:pw@cache:6380/2", "redis+cluster://h1:7000,h2:7001", "redis+sentinel://s1:26379,s2:26379/mymaster"])(
    "accepts REDIS_URL=%s",
    (url) => {
      expect(loadGatewayConfig({ REDIS_URL: url }).REDIS_URL).toBe(url);
    },
  );

  it.each([
    ["GATEWAY_PORT", "http"],
    ["GATEWAY_PORT", "99999"],
    ["REDIS_URL", "localhost:6379"],
    ["REDIS_URL", "redis+sentinel://s1:26379"],
    ["BAN_AFTER", "0"],
    ["KEYS_URL", "127.0.0.1:8081"],
    ["KEYS_URL", "ftp://keys:8081"],
    ["BAN_SECONDS", "-5"],
    ["SIGNUP", "on"],
    ["PET_SERVICE_ADDR", "no-port"],
    ["PET_SERVICE_ADDR", "http://pet-service:50051"],
    ["PET_SERVICE_ADDR", "dns:///pet-service"],
    ["PET_SERVICE_ADDR", "ipv4:10.0.0.1:50051,pet-service:50051"],
    ["PET_SERVICE_ADDR", "pet-service:50051,other:50051"],
    ["PET_SERVICE_TIMEOUT_MS", "soon"],
    ["REDIS_COMMAND_TIMEOUT_MS", "0"],
    ["REDIS_COMMAND_TIMEOUT_MS", "0.5"],
    ["REDIS_COMMAND_TIMEOUT_MS", "500ms"],
    ["REDIS_COMMAND_TIMEOUT_MS", "120000"], // over a minute
    ["HEADERS_TIMEOUT_MS", "0"],
    ["REQUEST_TIMEOUT_MS", "5000"], // shorter than the default headers timeout
    // Not true/false, a hop count or addresses/subnets: Express would throw only when the app is built.
    ["GATEWAY_PORT", " "],
    ["BODY_LIMIT_BYTES", "0x4000"],
    ["SHUTDOWN_DELAY_MS", " "],
    ["TRUST_PROXY", "yes"],
    ["TRUST_PROXY", "TRUE"],
    ["TRUST_PROXY", "10.0.0.0/8, proxy.internal"],
    ["STORE_UPSTREAM_URL", "ftp://store.internal/"],
    ["CATEGORIES_UPSTREAM_URL", "mailto:ops@example.com"],
  ])("refuses %s=%s with one line naming the variable", (name, value) => {
    expect(() => loadGatewayConfig({ [name]: value })).toThrowError(new RegExp(`^invalid configuration: ${name} `));
  });

  it.each([
    "pet-service:50051",
    "127.0.0.1:50051",
    "[::1]:50051",
    "dns:///pet-service-headless.pets.svc.cluster.local:50051",
    "dns:pet-service:50051",
    "ipv4:127.0.0.1:50051,127.0.0.1:50052",
    "ipv6:[::1]:50051,[::1]:50052",
    "unix:/run/pets.sock",
  ])("accepts the gRPC target PET_SERVICE_ADDR=%s", (target) => {
    expect(loadGatewayConfig({ PET_SERVICE_ADDR: target }).PET_SERVICE_ADDR).toBe(target);
  });

  it("reads TRUST_PROXY as a boolean, a hop count or an address list", () => {
    expect(loadGatewayConfig({ TRUST_PROXY: "true" }).TRUST_PROXY).toBe(true);
    expect(loadGatewayConfig({ TRUST_PROXY: "2" }).TRUST_PROXY).toBe(2);
    expect(loadGatewayConfig({ TRUST_PROXY: "loopback, 10.0.0.0/8" }).TRUST_PROXY).toBe("loopback, 10.0.0.0/8");
  });

  describe("TLS to the pet service", () => {
    it("is off (plaintext) without PET_SERVICE_TLS_*; on with the CA alone (server TLS) or with a client certificate too (mTLS)", () => {
      expect(petServiceTlsFiles(loadGatewayConfig({}))).toBeUndefined();
      expect(petServiceTlsFiles(loadGatewayConfig({ PET_SERVICE_TLS_CA: "/tls/ca.crt" }))).toEqual({ ca: { variable: "PET_SERVICE_TLS_CA", path: "/tls/ca.crt" } });
      expect(
        petServiceTlsFiles(loadGatewayConfig({ PET_SERVICE_TLS_CA: "/tls/ca.crt", PET_SERVICE_TLS_CLIENT_CERT: "/tls/tls.crt", PET_SERVICE_TLS_CLIENT_KEY: "/tls/tls.key" })),
      ).toEqual({
        ca: { variable: "PET_SERVICE_TLS_CA", path: "/tls/ca.crt" },
        cert: { variable: "PET_SERVICE_TLS_CLIENT_CERT", path: "/tls/tls.crt" },
        key: { variable: "PET_SERVICE_TLS_CLIENT_KEY", path: "/tls/tls.key" },
      });
    });

    it.each([{ PET_SERVICE_TLS_CLIENT_CERT: "/tls/tls.crt" }, { PET_SERVICE_TLS_CLIENT_KEY: "/tls/tls.key" }])("needs the client certificate and key together: %j", (env) => {
      expect(() => loadGatewayConfig(env)).toThrowError(/^invalid configuration: PET_SERVICE_TLS_CLIENT_KEY and PET_SERVICE_TLS_CLIENT_CERT must be set together/);
    });
  });
});
