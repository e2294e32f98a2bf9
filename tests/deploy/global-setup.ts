/**
 * `npm run test:deploy`, before any test: podman and its helpers installed when missing
 * (deploy/podman/install.sh), a probe that podman can run a container at all, then every image
 * built or reused (deploy/podman/images.sh; times and sizes printed).
 *
 * Only when podman cannot run a container at all (no permission to install it or to make
 * namespaces, say) is the whole run skipped, with one banner line. Any later failure fails.
 */
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { TestProject } from "vitest/node";
import { ROOT, type DeploySetup } from "./podman.ts";

const run = (cmd: string, args: string[], env: Record<string, string> = {}) =>
  spawnSync(cmd, args, { cwd: ROOT, env: { ...process.env, ...env }, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
const lastLine = (text: string) => text.trim().split("\n").filter((l) => !/level=warning/.test(l)).at(-1) ?? "";

/** A root file system holding only /bin/true and the libraries it loads. */
function probeRootfs(): string {
  const dir = mkdtempSync(path.join(tmpdir(), "pet-store-podman-probe-"));
  const libs = run("ldd", ["/bin/true"]).stdout.matchAll(/(\/\S+)/g);
  for (const file of ["/bin/true", ...[...libs].map((m) => m[1]!)]) {
    mkdirSync(path.join(dir, path.dirname(file)), { recursive: true });
    copyFileSync(file, path.join(dir, file));
  }
  return dir;
}

function podmanEnv(): Record<string, string> {
  const out = run("bash", ["-c", '. deploy/podman/env.sh && printf "%s\\n%s\\n%s" "$CONTAINERS_CONF" "$CONTAINERS_STORAGE_CONF" "$PET_STORE_PODMAN_DIR"']);
  if (out.status !== 0) throw new Error(`deploy/podman/env.sh failed: ${out.stderr}`);
  const [conf, storage, dir] = out.stdout.split("\n");
  return { CONTAINERS_CONF: conf!, CONTAINERS_STORAGE_CONF: storage!, PET_STORE_PODMAN_DIR: dir! };
}

function whyPodmanCannotRun(): string | null {
  const install = run("bash", ["deploy/podman/install.sh"]);
  if (install.status !== 0) return `podman is not installed and cannot be (${lastLine(install.stderr)})`;
  const env = podmanEnv();
  const info = run("podman", ["info"], env);
  if (info.status !== 0) return `podman info fails (${lastLine(info.stderr)})`;
  const rootfs = probeRootfs();
  try {
    const probe = run("podman", ["run", "--rm", "--network", "none", "--rootfs", rootfs, "/bin/true"], env);
    if (probe.status !== 0) return `podman cannot start a container (${lastLine(probe.stderr)})`;
  } finally {
    rmSync(rootfs, { recursive: true, force: true });
  }
  return null;
}

export default function globalSetup(project: TestProject) {
  const skip = whyPodmanCannotRun();
  if (skip) {
    console.warn(`\n*** test:deploy SKIPPED: ${skip}. Nothing was built or run. ***\n`);
    project.provide("deploy", { skip, env: {} } satisfies DeploySetup);
    return;
  }
  const env = podmanEnv();
  const started = Date.now();
  const images = spawnSync("bash", ["deploy/podman/images.sh"], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ["ignore", "inherit", "inherit"] });
  if (images.status !== 0) throw new Error(`deploy/podman/images.sh exited ${images.status}`);
  const sizes = run("podman", ["images", "--format", "{{.Repository}}:{{.Tag}}\t{{.Size}}", "--filter", "dangling=false"], env).stdout.trim();
  console.log(`deploy test: images ready in ${Math.round((Date.now() - started) / 1000)} s (store ${env.PET_STORE_PODMAN_DIR})\n${sizes}`);
  project.provide("deploy", { skip: null, env } satisfies DeploySetup);
}
