/**
 * The image deploy/Dockerfile builds (FROM the local node base through NODE_IMAGE): what runs in
 * it and what is not in it.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { podman, ROOT, setup } from "./podman.ts";

const IMAGE = "localhost/pet-store-api:local";
const inImage = async (script: string, user = "node") =>
  (await podman(["run", "--rm", "--network", "none", "--user", user, IMAGE, "sh", "-c", script])).stdout.trim();

describe.skipIf(setup().skip !== null)("the image built from deploy/Dockerfile", () => {
  it("reports its size", async () => {
    const bytes = Number((await podman(["image", "inspect", "--format", "{{.Size}}", IMAGE])).stdout.trim());
    console.log(`deploy test: ${IMAGE} is ${(bytes / 1e6).toFixed(0)} MB`);
    expect(bytes).toBeGreaterThan(0);
  });

  it("runs node as uid/gid 1000 under tini as PID 1 by default", async () => {
    const config = JSON.parse((await podman(["image", "inspect", "--format", "{{json .Config}}", IMAGE])).stdout) as {
      User: string;
      Entrypoint: string[];
      Cmd: string[];
    };
    expect(config.User).toBe("node");
    expect(config.Entrypoint).toEqual(["/usr/bin/tini", "--"]);
    expect(config.Cmd).toEqual(["node", "gateway/main.ts"]);
    // The default user, not --user: what a container of this image gets.
    const out = (await podman(["run", "--rm", "--network", "none", IMAGE, "sh", "-c", 'id -u; id -g; tr "\\0" " " </proc/1/cmdline'])).stdout;
    expect(out.split("\n").slice(0, 3)).toEqual(["1000", "1000", expect.stringMatching(/^\/usr\/bin\/tini -- sh -c/)]);
  });

  it("runs the Node version package.json pins, and its node:sqlite opens a database", async () => {
    const pinned = (JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as { dependencies: Record<string, string> }).dependencies.node;
    const out = await inImage(`node --version && node -e "const { DatabaseSync } = require('node:sqlite'); console.log(new DatabaseSync(':memory:').prepare('SELECT 1 AS one').get().one)"`);
    expect(out.split("\n")).toEqual([`v${pinned}`, "1"]);
  });

  it("has no compiler, no npm cache, no registry node package and no key material", async () => {
    const out = await inImage(
      [
        "for c in gcc g++ cc c++ make python3; do command -v $c; done",
        "dpkg-query -W -f '${Package}\\n' | grep -E '^(gcc|g\\+\\+|cpp|make|python3)(-[0-9.]+)?$'",
        "find / -xdev \\( -name _cacache -o -path /root/.npm -o -path /home/node/.npm -o -path '*/node-gyp/*/include' \\) -print",
        "ls -d /app/node_modules/node /app/node_modules/.bin/node /app/keys/private 2>/dev/null",
        "find /app -name '*.pem' -not -path '/app/node_modules/*'",
        "true",
      ].join("; "),
      "0",
    );
    expect(out).toBe("");
  });
});
