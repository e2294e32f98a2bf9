import { readFileSync } from "node:fs";
import { expect, it } from "vitest";
import { GENERATED_FILE, generateCodecs } from "../../../scripts/generate-codecs.ts";

/** The committed codecs are what `npm run generate:codecs` makes of the proto today: never a hand-edited copy. */
it("regenerating the codecs from the proto gives the committed proto/codecs.generated.ts byte for byte", () => {
  expect(generateCodecs()).toBe(readFileSync(GENERATED_FILE, "utf8"));
});
