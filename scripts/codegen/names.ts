import protobuf from "protobufjs";

/** The names generated code gives proto types (scripts/generate-codecs.ts). */

export const fullName = (type: protobuf.ReflectionObject) => type.fullName.replace(/^\./, "");
/** Codec and function names: the full name, underscored (unique in every file). */
export const local = (type: protobuf.ReflectionObject) => fullName(type).replace(/\./g, "_");
/** Type names: the name within its package, a nested type after its parent (`BadRequest_FieldViolation`). */
export function typeName(type: protobuf.ReflectionObject): string {
  const names: string[] = [];
  for (let t: protobuf.ReflectionObject | null = type; t instanceof protobuf.Type || t instanceof protobuf.Enum; t = t.parent) names.unshift(t.name);
  return names.join("_");
}
