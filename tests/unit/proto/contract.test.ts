import { execFile } from "node:child_process";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadPetServiceDefinition, PET_SERVICE_NAME } from "../../../proto/load.ts";

const ROOT = path.resolve(import.meta.dirname, "../../..");

describe("proto/petstore/v1", () => {
  it("is clean under buf's STANDARD lint rules", async () => {
    const result = await new Promise<{ code: number; output: string }>((resolve) => {
      execFile(path.join(ROOT, "node_modules/.bin/buf"), ["lint", "proto"], { cwd: ROOT }, (err, stdout, stderr) =>
        resolve({ code: err ? Number(err.code) : 0, output: stdout + stderr }),
      );
    });
    expect(result.output).toBe("");
    expect(result.code).toBe(0);
  });

  it("declares ListPets, CreatePet and GetPet, GetPet deprecated, ids as int64", () => {
    const definition = loadPetServiceDefinition();
    const service = definition[PET_SERVICE_NAME] as Record<string, { options: { deprecated?: boolean } }>;
    expect(Object.keys(service).sort()).toEqual(["CreatePet", "GetPet", "ListPets"]);
    expect(service.GetPet!.options.deprecated).toBe(true);
    expect(service.ListPets!.options.deprecated).toBeFalsy();
    const pet = definition["petstore.v1.Pet"] as { type: { field: { name: string; type: string }[] } };
    const types = Object.fromEntries(pet.type.field.map((f) => [f.name, f.type]));
    expect(types).toMatchObject({ id: "TYPE_INT64", categoryId: "TYPE_INT64", status: "TYPE_ENUM" });
    const status = definition["petstore.v1.PetStatus"] as { type: { value: { name: string; number: number }[] } };
    expect(status.type.value[0]).toEqual(expect.objectContaining({ name: "PET_STATUS_UNSPECIFIED", number: 0 }));
  });
});
