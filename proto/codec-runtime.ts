/**
 * Wire-format primitives for the codecs that scripts/generate-codecs.ts generates from the .proto
 * files (proto/generated/). They read and write the object shapes proto-loader gives with
 * LOADER_OPTIONS (int64 as decimal strings, enums as names, defaults filled) and produce the
 * bytes protobufjs produces, without its intermediate message objects and Long values.
 *
 * Writing (codec-runtime/write.ts) and reading (codec-runtime/read.ts) are apart; generated files
 * import both from here.
 */

/** A message's codec: `encode` takes its Init shape (any field may be left out), `decode` gives every field. */
export interface Codec<T, I> {
  encode(message: I): Buffer;
  decode(bytes: Buffer): T;
}

export * from "./codec-runtime/write.ts";
export * from "./codec-runtime/read.ts";
