import { readFileSync } from "node:fs";
import { afterAll, expect } from "vitest";
import { adminRequest, type AdminAnswer, type RunningKeyService } from "./key-service.ts";
import { createOpenApiValidator, type OpenApiDocument } from "./openapi-validator.ts";

/** The key service's admin API description. */
export const adminOpenApiDocument = JSON.parse(readFileSync(new URL("../keys/api/openapi.json", import.meta.url), "utf8")) as OpenApiDocument;

/**
 * Checks key-service responses against keys/api/openapi.json (its paths are absolute: /v1/keys,
 * /.well-known/jwks.json, /healthz). An undescribed path answers 404, a described one with another
 * method 405 (info.description); the description and the docs page are left out.
 */
export const adminApi = createOpenApiValidator({
  document: adminOpenApiDocument,
  documentId: "https://petstore.example/keys/openapi.json",
  apiRoot: "",
  undescribedResponses: {},
  undescribedPath: { "404": "#/components/responses/NotFound" },
  undescribedMethod: { "405": "#/components/responses/MethodNotAllowed" },
  notDescribed: new Set(["/openapi.json", "/docs"]),
});

/**
 * For one test file: admin API calls to `keyService()`, with its admin token unless `opts.token`
 * says otherwise (null: none), each answer checked against the description; the file's last
 * check fails if any answer did not match it.
 */
export function useCheckedAdminCalls(keyService: () => RunningKeyService) {
  let recording: ReturnType<typeof adminApi.recordingFetch> | undefined;
  afterAll(() => {
    expect(recording?.problems() ?? []).toEqual([]);
  });
  return (method: string, path: string, opts: { token?: string | null; body?: unknown } = {}): Promise<AdminAnswer> => {
    recording ??= adminApi.recordingFetch(keyService().url);
    return adminRequest(keyService().url, method, path, { token: keyService().adminToken, ...opts, fetchImpl: recording.fetch });
  };
}
