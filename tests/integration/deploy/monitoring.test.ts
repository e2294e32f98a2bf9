import { execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml, stringify as toYaml } from "yaml";
import { createTestKeys, type TestKeys } from "../../../testkit/gateway.ts";
import { spawnGateway, type GatewayProcess } from "../../../testkit/gateway-process.ts";
import { spawnPetService, type SpawnedPetService } from "../../../testkit/pet-service.ts";
import { matches, parseExposition, promqlRefs, type Sample } from "../../../testkit/promql.ts";
import { startRedis, type PrivateRedis } from "../../../testkit/redis-server.ts";
import { freePort } from "../../../testkit/net.ts";
import { startOtlpReceiver, type OtlpReceiver } from "../../../testkit/otlp-receiver.ts";
import { until } from "../../../testkit/until.ts";

// deploy/monitoring as an operator loads it: promtool accepts and unit-tests the alert rules, and
// every metric, label and label value the dashboard and the rules select exists on the real
// /metrics of both processes. Names are read from the two files, never listed here.
const ROOT = path.resolve(import.meta.dirname, "../../..");
const MONITORING = path.join(ROOT, "deploy/monitoring");
const RULES_FILE = path.join(MONITORING, "alerts.yaml");
const DASHBOARD_FILE = path.join(MONITORING, "grafana-dashboard.json");

/** Labels Prometheus adds when it scrapes (job, instance; Kubernetes service discovery adds more). */
const TARGET_LABELS = new Set(["job", "instance", "namespace", "pod"]);

interface RuleFile {
  groups: { name: string; rules: { alert?: string; record?: string; expr: string }[] }[];
}
interface Panel {
  id: number;
  type: string;
  title: string;
  datasource?: { uid: string };
  gridPos: { x: number; y: number; w: number; h: number };
  targets?: { expr: string; datasource?: { uid: string } }[];
}
interface Dashboard {
  uid: string;
  title: string;
  panels: Panel[];
  templating: { list: { name: string; type: string; query: string }[] };
}

function promtool(args: string[]): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile("promtool", args, { cwd: MONITORING }, (err, stdout, stderr) => resolve({ code: err ? Number(err.code ?? 1) : 0, output: stdout + stderr }));
  });
}

let rules: RuleFile;
let dashboard: Dashboard;
/** Grafana's per-panel interval, replaced so promtool and the checks read plain PromQL. */
const plain = (expr: string) => expr.replaceAll("$__rate_interval", "5m");
const dashboardExprs = () => dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ where: `panel "${p.title}"`, expr: plain(t.expr) })));
const ruleExprs = () => rules.groups.flatMap((g) => g.rules.map((r) => ({ where: `rule ${r.alert ?? r.record}`, expr: r.expr })));

beforeAll(async () => {
  rules = parseYaml(await readFile(RULES_FILE, "utf8")) as RuleFile;
  dashboard = JSON.parse(await readFile(DASHBOARD_FILE, "utf8")) as Dashboard;
});

describe("deploy/monitoring/alerts.yaml", () => {
  it("passes `promtool check rules`", async () => {
    const result = await promtool(["check", "rules", RULES_FILE]);
    expect(result.output).toMatch(/SUCCESS: \d+ rules found/);
    expect(result.code).toBe(0);
  });

  it("has the alerts the issue asks for, each exercised by `promtool test rules` until it fires", async () => {
    const alerts = rules.groups.flatMap((g) => g.rules.map((r) => r.alert)).filter(Boolean);
    // One per condition: 5xx ratio, p99 budget, limiter fallback, Redis faults, pet service not ready, no traffic, key service unreachable, webhook deliveries failing.
    expect(alerts).toHaveLength(8);
    const result = await promtool(["test", "rules", "alerts.test.yaml"]);
    expect(result.output).toContain("SUCCESS");
    expect(result.code).toBe(0);

    const tests = parseYaml(await readFile(path.join(MONITORING, "alerts.test.yaml"), "utf8")) as {
      tests: { alert_rule_test: { alertname: string; exp_alerts: unknown[] }[] }[];
    };
    const cases = tests.tests.flatMap((t) => t.alert_rule_test);
    for (const alert of alerts) {
      expect(cases.some((c) => c.alertname === alert && c.exp_alerts.length > 0), `${alert} fires in a test`).toBe(true);
      expect(cases.some((c) => c.alertname === alert && c.exp_alerts.length === 0), `${alert} stays quiet in a test`).toBe(true);
    }
  });
});

describe("deploy/monitoring/prometheus.yml", () => {
  it("passes `promtool check config` (with the rule file it loads) and scrapes compose's services on their ports", async () => {
    const result = await promtool(["check", "config", "prometheus.yml"]);
    expect(result.output).toMatch(/SUCCESS: prometheus.yml is valid/);
    expect(result.code).toBe(0);

    const config = parseYaml(await readFile(path.join(MONITORING, "prometheus.yml"), "utf8")) as {
      rule_files: string[];
      scrape_configs: { job_name: string; static_configs?: { targets: string[] }[]; dns_sd_configs?: { names: string[]; port: number }[] }[];
    };
    expect(config.rule_files).toEqual(["alerts.yaml"]);
    const compose = parseYaml(await readFile(path.join(ROOT, "deploy/compose.yaml"), "utf8"), { merge: true }) as {
      services: Record<string, { environment?: Record<string, string> }>;
    };
    // The port each compose service serves /metrics on: the gateway's HTTP port, the pet service's METRICS_PORT, the key service's KEYS_PORT.
    const metricsPort = (service: string) => {
      const env = compose.services[service]?.environment ?? {};
      return env.GATEWAY_PORT ?? env.METRICS_PORT ?? env.KEYS_PORT;
    };
    // Static targets, and DNS names (every replica of a compose service) with their port.
    const targets = config.scrape_configs.flatMap((job) => [
      ...(job.static_configs ?? []).flatMap((c) => c.targets),
      ...(job.dns_sd_configs ?? []).flatMap((c) => c.names.map((name) => `${name}:${c.port}`)),
    ]);
    expect(targets.length).toBe(4);
    for (const target of targets) {
      const [service, port] = target.split(":");
      expect(metricsPort(service!), target).toBe(port);
    }
  });
});

describe("deploy/monitoring/grafana-dashboard.json", () => {
  it("is a dashboard of unique, non-overlapping panels, each querying the chosen Prometheus data source", () => {
    expect(dashboard.uid).toBe("pet-store-api");
    expect(dashboard.templating.list).toContainEqual(expect.objectContaining({ name: "datasource", type: "datasource", query: "prometheus" }));
    const ids = dashboard.panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    const cells = new Map<string, string>();
    for (const panel of dashboard.panels) {
      for (let x = panel.gridPos.x; x < panel.gridPos.x + panel.gridPos.w; x++) {
        for (let y = panel.gridPos.y; y < panel.gridPos.y + panel.gridPos.h; y++) {
          const taken = cells.get(`${x},${y}`);
          expect(taken, `"${panel.title}" overlaps "${taken}"`).toBeUndefined();
          cells.set(`${x},${y}`, panel.title);
        }
      }
      expect(panel.gridPos.x + panel.gridPos.w).toBeLessThanOrEqual(24);
      if (panel.type === "row") continue;
      expect(panel.targets?.length, panel.title).toBeGreaterThan(0);
      expect(panel.datasource?.uid).toBe("${datasource}");
      for (const target of panel.targets ?? []) expect(target.datasource?.uid ?? panel.datasource?.uid).toBe("${datasource}");
    }
  });

  it("covers the processes: HTTP, limiter, Redis, gRPC client, pet-service calls and database latency, usage reporting, webhook delivery", () => {
    const metrics = new Set(dashboardExprs().flatMap(({ expr }) => promqlRefs(expr).selectors.map((s) => s.metric)));
    const prefixes = [...metrics].map((m) => m.split("_").slice(0, 2).join("_"));
    for (const area of ["gateway_http", "gateway_limiter", "gateway_redis", "gateway_grpc", "pet_service", "process_cpu", "gateway_usage", "keys_usage", "keys_webhook"]) {
      expect(prefixes, area).toContain(area);
    }
  });

  it("has only valid PromQL (promtool checks each query as a recording rule)", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "petstore-dashboard-"));
    try {
      const file = path.join(dir, "dashboard-queries.yaml");
      const queries = dashboardExprs();
      expect(queries.length).toBeGreaterThan(10);
      await writeFile(file, toYaml({ groups: [{ name: "dashboard", rules: queries.map(({ expr }, i) => ({ record: `dashboard:query_${i}`, expr })) }] }));
      const result = await promtool(["check", "rules", file]);
      expect(result.output).toContain(`SUCCESS: ${queries.length} rules found`);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("every metric the dashboard and the alerts use, on the real processes' /metrics (gateway, pet service, key service)", () => {
  let redis: PrivateRedis;
  let keys: TestKeys;
  let pets: SpawnedPetService;
  let gateway: GatewayProcess;
  let samples: Sample[];

  beforeAll(async () => {
    redis = await startRedis();
    keys = await createTestKeys();
    pets = await spawnPetService({ env: { METRICS_PORT: "0" } });
    gateway = await spawnGateway({ PET_SERVICE_ADDR: pets.address, ...keys.gatewayEnv, REDIS_URL: redis.url, LOG_LEVEL: "warn" });

    // Traffic a real day has: creates, lists, fetches, client errors, and then a pet-service
    // outage (503), so the series the panels and alerts select exist with their labels.
    const key = await keys.issue({ plan: "free" });
    const api = (p: string, init: RequestInit = {}, auth = true) =>
      fetch(`${gateway.url}/v1${p}`, { ...init, headers: { ...(auth ? { Authorization: `Bearer ${key}` } : {}), "Content-Type": "application/json", ...init.headers } });
    const created = await api("/pets", { method: "POST", body: JSON.stringify({ name: "Metric Cat", categoryId: 1 }) });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: number };
    expect((await api("/pets?status=available")).status).toBe(200);
    expect((await api("/pets")).status).toBe(200);
    expect((await api(`/pets/${id}`)).status).toBe(200);
    expect((await api("/pets/987654321")).status).toBe(404);
    expect((await api("/pets", { method: "POST", body: "{}" })).status).toBe(400);
    expect((await api("/pets", {}, false)).status).toBe(401);

    const petMetrics = await (await fetch(`http://127.0.0.1:${pets.metricsPort}/metrics`)).text();
    // The gateway reports that traffic's usage (at most a second later) and the key service applies it.
    const keysMetrics = async () => (await fetch(`${keys.service.url}/metrics`)).text();
    await until("the usage report is applied", async () => /^keys_usage_reports_total\{outcome="applied"\} [1-9]/m.test(await keysMetrics()));
    await pets.kill("SIGKILL");
    expect((await api("/pets")).status).toBe(503);
    const gatewayMetrics = await (await fetch(`${gateway.url}/metrics`)).text();
    samples = [...parseExposition(gatewayMetrics), ...parseExposition(petMetrics), ...parseExposition(await keysMetrics())];
  }, 120_000); // three real processes on a shared machine: a generous hang guard

  afterAll(async () => {
    gateway?.child.kill("SIGTERM");
    await gateway?.exited;
    await pets?.stop();
    await redis?.stop();
    await keys?.remove();
  });

  it("finds each selected series with the labels and label values the query asks for", () => {
    const exprs = [...dashboardExprs(), ...ruleExprs()];
    const problems: string[] = [];
    let checked = 0;
    for (const { where, expr } of exprs) {
      const refs = promqlRefs(expr);
      if (refs.selectors.length === 0) problems.push(`${where}: no metric found in ${expr}`);
      const selected: Sample[] = [];
      for (const { metric, matchers } of refs.selectors) {
        checked++;
        const family = samples.filter((s) => s.name === metric);
        if (family.length === 0) {
          problems.push(`${where}: ${metric} is on no process's /metrics`);
          continue;
        }
        const own = matchers.filter((m) => !TARGET_LABELS.has(m.label));
        for (const m of own) if (!family.some((s) => m.label in s.labels)) problems.push(`${where}: ${metric} has no label ${m.label}`);
        const hits = family.filter((s) => own.every((m) => matches(s, m)));
        if (hits.length === 0) problems.push(`${where}: no series of ${metric} matches ${JSON.stringify(own)}`);
        selected.push(...family);
      }
      for (const label of refs.groupingLabels) {
        if (!TARGET_LABELS.has(label) && !selected.some((s) => label in s.labels)) problems.push(`${where}: groups by ${label}, which none of its series has`);
      }
    }
    expect(problems).toEqual([]);
    expect(checked).toBeGreaterThanOrEqual(exprs.length);
  });

  it("shows what the alerts watch as it happened: the pet service down (serving 0), Redis healthy (no faults, no fallback)", () => {
    const value = (name: string) => samples.filter((s) => s.name === name).map((s) => s.value);
    expect(value("gateway_pet_service_serving")).toEqual([0]);
    expect(value("gateway_limiter_fallback_active")).toEqual([0]);
    expect(value("gateway_redis_faults_total")).toEqual([0]);
    const serverErrors = samples.filter((s) => s.name === "gateway_http_requests_total" && s.labels.status === "503");
    expect(serverErrors.map((s) => [s.labels.route, s.value])).toEqual([["/v1/pets", 1]]);
  });
});

describe("deploy/monitoring/prometheus.yml's jobs in a real Prometheus", () => {
  // Both processes with tracing on (so requests are sampled), and Prometheus (Debian's) running the
  // file's jobs with their targets pointed at them, a 1 s interval and exemplar storage on, as the
  // file's header says to run it.
  let receiver: OtlpReceiver;
  let keys: TestKeys;
  let pets: SpawnedPetService;
  let gateway: GatewayProcess;
  let dir: string;
  let prometheus: ReturnType<typeof spawn> | undefined;
  let api: string;

  beforeAll(async () => {
    [receiver, keys, dir] = await Promise.all([startOtlpReceiver(), createTestKeys(), mkdtemp(path.join(os.tmpdir(), "petstore-prometheus-"))]);
    const otel = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url };
    pets = await spawnPetService({ env: { METRICS_PORT: "0", ...otel } });
    gateway = await spawnGateway({ PET_SERVICE_ADDR: pets.address, ...keys.gatewayEnv, LOG_LEVEL: "warn", ...otel });

    const config = parseYaml(await readFile(path.join(MONITORING, "prometheus.yml"), "utf8")) as {
      global: Record<string, unknown>;
      rule_files?: string[];
      scrape_configs: { job_name: string; static_configs?: unknown; dns_sd_configs?: unknown }[];
    };
    const targets: Record<string, string> = { gateway: new URL(gateway.url).host, "pet-service": `127.0.0.1:${pets.metricsPort}`, "key-service": new URL(keys.service.url).host };
    delete config.rule_files;
    config.global.scrape_interval = "1s";
    for (const job of config.scrape_configs) {
      delete job.dns_sd_configs;
      job.static_configs = [{ targets: [targets[job.job_name]] }];
    }
    await writeFile(path.join(dir, "prometheus.yml"), toYaml(config));
    const port = await freePort();
    api = `http://127.0.0.1:${port}/api/v1`;
    prometheus = spawn(
      "prometheus",
      [`--config.file=${path.join(dir, "prometheus.yml")}`, `--storage.tsdb.path=${path.join(dir, "data")}`, `--web.listen-address=127.0.0.1:${port}`, "--enable-feature=exemplar-storage"],
      { stdio: "ignore" },
    );
    await until("Prometheus is ready", async () => (await fetch(`http://127.0.0.1:${port}/-/ready`).catch(() => undefined))?.status === 200, 30_000, 200);
  }, 90_000);

  afterAll(async () => {
    prometheus?.kill("SIGKILL");
    gateway?.child.kill("SIGTERM");
    await gateway?.exited;
    await pets?.stop();
    await receiver?.close();
    await keys?.remove();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("scrapes OpenMetrics and stores the trace_id exemplars of both processes' latency histograms", async () => {
    const traceId = randomBytes(16).toString("hex");
    const res = await fetch(`${gateway.url}/v1/pets`, {
      headers: { Authorization: `Bearer ${await keys.issue()}`, traceparent: `00-${traceId}-${randomBytes(8).toString("hex")}-01` },
    });
    expect(res.status).toBe(200);
    const exemplarsOf = async (metric: string) => {
      const now = Date.now() / 1000;
      const body = (await (await fetch(`${api}/query_exemplars?query=${metric}&start=${now - 300}&end=${now + 60}`)).json()) as {
        data: { seriesLabels: Record<string, string>; exemplars: { labels: Record<string, string> }[] }[];
      };
      return body.data.flatMap((series) => series.exemplars.map((e) => e.labels.trace_id));
    };
    for (const metric of ["gateway_http_request_duration_seconds_bucket", "gateway_grpc_client_duration_seconds_bucket", "pet_service_grpc_server_duration_seconds_bucket"]) {
      await until(`Prometheus holds the request's exemplar of ${metric}`, async () => (await exemplarsOf(metric)).includes(traceId), 20_000, 250);
    }
    // The Prometheus-format names still resolve (counters keep _total in the OpenMetrics scrape).
    const up = (await (await fetch(`${api}/query?query=gateway_http_requests_total`)).json()) as { data: { result: unknown[] } };
    expect(up.data.result.length).toBeGreaterThan(0);
  });
});
