import protobuf from "protobufjs";
import { fullName, local, typeName } from "./names.ts";

/**
 * The TypeScript scripts/generate-codecs.ts emits for one enum or one message: its types, and an
 * encoder and a decoder on proto/codec-runtime.ts of the object shape proto-loader gives.
 */

interface Scalar {
  wireType: number;
  write: string;
  read: string;
  zero: string;
  /** Decoded type, and what an encoder takes. */
  tsType: string;
  initType: string;
}
const SCALARS: Record<string, Scalar> = {
  int32: { wireType: 0, write: "writeInt32(v as number)", read: "readInt32()", zero: "0", tsType: "number", initType: "number" },
  int64: { wireType: 0, write: "writeInt64(v)", read: "readInt64()", zero: '"0"', tsType: "string", initType: "string | number | bigint" },
  bool: { wireType: 0, write: "writeBool(v)", read: "readBool()", zero: "false", tsType: "boolean", initType: "boolean" },
  string: { wireType: 2, write: 'writeString(typeof v === "string" ? v : String(v))', read: "readString()", zero: '""', tsType: "string", initType: "string" },
  bytes: { wireType: 2, write: "writeBytes(v)", read: "readBytes()", zero: "Buffer.alloc(0)", tsType: "Buffer", initType: "Uint8Array" },
};

export function enumCode(e: protobuf.Enum, typeName: string): string {
  const entries = Object.entries(e.values);
  return [
    `/** ${fullName(e)}: each name's number. */`,
    `export const ${typeName}Values = { ${entries.map(([name, n]) => `${name}: ${n}`).join(", ")} } as const;`,
    `export type ${typeName} = keyof typeof ${typeName}Values;`,
    ``,
    `/** ${fullName(e)}: name or number → number; another string leaves the field unset (undefined). */`,
    `function ${local(e)}_number(v: unknown): number | undefined {`,
    `  if (typeof v === "number") return v;`,
    `  switch (v) {`,
    ...entries.map(([name, n]) => `    case ${JSON.stringify(name)}: return ${n};`),
    `    default: return undefined;`,
    `  }`,
    `}`,
    ``,
    `/** ${fullName(e)}: number → name; a number outside the enum stays a number. */`,
    `function ${local(e)}_name(n: number): ${typeName} | number {`,
    `  switch (n) {`,
    ...Object.entries(e.valuesById).map(([n, name]) => `    case ${n}: return ${JSON.stringify(name)};`),
    `    default: return n;`,
    `  }`,
    `}`,
  ].join("\n");
}

/**
 * A proto3 `optional` field is the only member of a synthetic oneof: like proto-loader (defaults
 * and oneofs on), the decoded object has no default for it, and when it is present it also names
 * itself in the oneof's property (`_categoryId: "categoryId"`).
 */
function optionalOneof(type: protobuf.Type, f: protobuf.Field): string | undefined {
  if (!f.partOf) return undefined;
  if (f.partOf.fieldsArray.length !== 1) throw new Error(`${type.fullName}.${f.name}: oneofs of several fields are not supported by the generator`);
  return f.partOf.name;
}

export function messageCode(type: protobuf.Type): string {
  const fields = [...type.fieldsArray].sort((a, b) => a.id - b.id);
  const name = local(type);
  const tsName = typeName(type);
  const write: string[] = [];
  const defaults: string[] = [];
  const shape: string[] = [];
  const init: string[] = [];
  const cases: string[] = [];
  for (const f of fields) {
    const key = JSON.stringify(f.name);
    const tag = (wireType: number) => (f.id << 3) | wireType;
    const oneof = optionalOneof(type, f);
    if (f instanceof protobuf.MapField) {
      if (f.type !== "string" || f.keyType !== "string") throw new Error(`${type.fullName}.${f.name}: only map<string, string> is supported by the generator`);
      // An entry is a message { key = 1; value = 2; } repeated under the field's number.
      write.push(
        `  v = m[${key}];`,
        `  if (v) for (const [k, s] of Object.entries(v as Record<string, unknown>)) { writeUint32(${tag(2)}); const l = openLength(); writeUint32(10); writeString(k); writeUint32(18); writeString(String(s)); closeLength(l); }`,
      );
      defaults.push(`${key}: {}`);
      shape.push(`${key}: Record<string, string>`);
      init.push(`${key}?: Record<string, string> | null`);
      cases.push(`      case ${f.id}: { const outer = enterMessage(); let k = "", s = ""; while (more()) { const e = readUint32(); if (e === 10) k = readString(); else if (e === 18) s = readString(); else skipField(e & 7); } setEntry(d[${key}], k, s); leaveMessage(outer); break; }`);
      continue;
    }
    if (f.resolvedType instanceof protobuf.Type) {
      if (oneof) throw new Error(`${type.fullName}.${f.name}: optional message fields are not supported by the generator`);
      const inner = local(f.resolvedType);
      const innerTs = typeName(f.resolvedType);
      const writeOne = `writeUint32(${tag(2)}); const l = openLength(); write_${inner}(item); closeLength(l);`;
      if (f.repeated) {
        write.push(
          `  v = m[${key}];`,
          `  if (v) {`,
          `    if (!Array.isArray(v)) throw new TypeError("${fullName(type)}.${f.name}: array expected");`,
          `    for (const item of v) { checkObject(item, "${fullName(f.resolvedType)}"); ${writeOne} }`,
          `  }`,
        );
        defaults.push(`${key}: []`);
        shape.push(`${key}: ${innerTs}[]`);
        init.push(`${key}?: ${innerTs}Init[] | null`);
        cases.push(`      case ${f.id}: { const outer = enterMessage(); d[${key}].push(read_${inner}()); leaveMessage(outer); break; }`);
      } else {
        write.push(`  v = m[${key}];`, `  if (v != null) { const item = v; checkObject(item, "${fullName(f.resolvedType)}"); ${writeOne} }`);
        defaults.push(`${key}: null`);
        shape.push(`${key}: ${innerTs} | null`);
        init.push(`${key}?: ${innerTs}Init | null`);
        cases.push(`      case ${f.id}: { const outer = enterMessage(); d[${key}] = read_${inner}(); leaveMessage(outer); break; }`);
      }
      continue;
    }
    if (f.repeated) throw new Error(`${type.fullName}.${f.name}: repeated scalars are not supported by the generator`);
    // Present: the value, and for an optional field its name in the oneof's property.
    const set = (read: string) => `d[${key}] = ${read};${oneof ? ` d[${JSON.stringify(oneof)}] = ${key};` : ""}`;
    const declare = (tsType: string, initType: string, zero: string) => {
      init.push(`${key}?: ${initType} | null`);
      if (oneof) shape.push(`${key}?: ${tsType}`, `${JSON.stringify(oneof)}?: ${key}`);
      else {
        shape.push(`${key}: ${tsType}`);
        defaults.push(`${key}: ${zero}`);
      }
    };
    if (f.resolvedType instanceof protobuf.Enum) {
      const e = local(f.resolvedType);
      const enumTs = typeName(f.resolvedType);
      write.push(`  v = m[${key}] == null ? undefined : ${e}_number(m[${key}]);`, `  if (v !== undefined) { writeUint32(${tag(0)}); writeInt32(v as number); }`);
      declare(`${enumTs} | number`, `${enumTs} | number`, JSON.stringify(f.resolvedType.valuesById[0] ?? 0));
      cases.push(`      case ${f.id}: ${set(`${e}_name(readInt32())`)} break;`);
      continue;
    }
    const scalar = SCALARS[f.type];
    if (!scalar) throw new Error(`${type.fullName}.${f.name}: type ${f.type} is not supported by the generator`);
    write.push(`  v = m[${key}];`, `  if (v != null) { writeUint32(${tag(scalar.wireType)}); ${scalar.write}; }`);
    declare(scalar.tsType, scalar.initType, scalar.zero);
    cases.push(`      case ${f.id}: ${set(scalar.read)} break;`);
  }
  return [
    `/** ${fullName(type)}, decoded: every field present (defaults filled), but for proto3 \`optional\` ones. */`,
    `export interface ${tsName} { ${shape.join("; ")}${shape.length ? ";" : ""} }`,
    `/** ${fullName(type)}, as an encoder takes it: any field may be left out. */`,
    `export interface ${tsName}Init { ${init.join("; ")}${init.length ? ";" : ""} }`,
    ``,
    `function write_${name}(m: Record<string, unknown>): void {`,
    ...(write.length ? [`  let v: unknown;`, ...write] : [`  void m;`]),
    `}`,
    ``,
    `function read_${name}(): ${tsName} {`,
    `  const d: ${tsName} = { ${defaults.join(", ")} };`,
    `  while (more()) {`,
    `    const t = readUint32();`,
    `    switch (t >>> 3) {`,
    ...cases,
    `      default: skipField(t & 7);`,
    `    }`,
    `  }`,
    `  return d;`,
    `}`,
    ``,
    `export const ${name}: Codec<${tsName}, ${tsName}Init> = {`,
    `  encode(m: ${tsName}Init): Buffer {`,
    `    if (Array.isArray(m)) throw new TypeError("${fullName(type)}: object expected, got an array");`,
    `    checkObject(m, "${fullName(type)}");`,
    `    begin();`,
    `    write_${name}(m);`,
    `    return finish();`,
    `  },`,
    `  decode(bytes: Buffer): ${tsName} {`,
    `    startReading(bytes);`,
    `    return read_${name}();`,
    `  },`,
    `};`,
  ].join("\n");
}
