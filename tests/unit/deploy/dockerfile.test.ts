import { describe, expect, it } from "vitest";
import { read, type Check } from "../../../testkit/deploy-check/facts.ts";
import { dockerChecks, type DockerInput } from "../../../testkit/deploy-check/docker-checks.ts";

// deploy/Dockerfile and its ignore file agree with the code, and the checks catch plausible mistakes.
const docker: DockerInput = { dockerfile: read("deploy/Dockerfile"), ignore: read("deploy/Dockerfile.dockerignore") };
const allProblems = <T>(checks: Record<string, Check<T>>, input: T) => Object.values(checks).flatMap((c) => c(input));

describe("Dockerfile agrees with the code", () => {
  it.each(Object.entries(dockerChecks))("%s", (_name, check) => expect(check(docker)).toEqual([]));
});

describe("the Dockerfile checks catch mistakes", () => {
  const dockerWith = (dockerfile: string, ignore = docker.ignore) => allProblems(dockerChecks, { dockerfile, ignore }).join("\n");
  it.each<[string, (d: string) => string, RegExp]>([
    ["a root USER at the end", (d) => `${d}\nUSER root\n`, /final USER root/],
    ["a single stage", (d) => d.replace(/FROM \$\{NODE_IMAGE\} AS runtime[\s\S]*/, ""), /multi-stage|runtime stage/],
    ["dev dependencies installed", (d) => d.replace("--omit=dev", ""), /--omit=dev/],
    ["a CMD through npm", (d) => d.replace(/^CMD .*$/m, 'CMD ["npm", "run", "start:gateway"]'), /CMD/],
    ["a source directory left out", (d) => d.replace(/^COPY lib .*$/m, ""), /import lib\//],
    ["a port not exposed", (d) => d.replace("EXPOSE 8080 8081 50051 9464", "EXPOSE 8080 8081"), /EXPOSE lacks PET_SERVICE_PORT/],
  ])("Dockerfile: %s", (_name, mutate, message) => expect(dockerWith(mutate(docker.dockerfile))).toMatch(message));

  it("Dockerfile.dockerignore: a COPY source it does not admit", () => {
    expect(dockerWith(docker.dockerfile, docker.ignore.replace("!proto\n", ""))).toMatch(/COPY proto is not allowed/);
  });
});
