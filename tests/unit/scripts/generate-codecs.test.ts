import { readFileSync } from "node:fs";
import path from "node:path";
import { expect, it } from "vitest";
import { GENERATED_DIR, GENERATED_FILES, generateFile } from "../../../scripts/generate-codecs.ts";

/** The committed codecs and types are what `npm run generate:codecs` makes of the protos today: never a hand-edited copy. */
it.each(GENERATED_FILES.map((spec) => [spec.file, spec] as const))("regenerating proto/generated/%s from its protos gives the committed file byte for byte", (file, spec) => {
  expect(generateFile(spec)).toBe(readFileSync(path.join(GENERATED_DIR, file), "utf8"));
});
