/**
 * `npm run generate:codecs`: writes proto/codecs.generated.ts from the .proto files, so the
 * schema has one home. For every message the services use it emits an encoder and a decoder of
 * the object shape proto-loader gives with LOADER_OPTIONS (int64 as decimal strings, enums as
 * names, defaults filled), built on proto/codec-runtime.ts; tests/unit/proto/codecs.test.ts shows
 * they agree with proto-loader byte for byte and that this script reproduces the committed file.
 *
 *   node scripts/generate-codecs.ts [--check]   (--check: exit 1 if the file is stale)
 */
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import protobuf from "protobufjs";
import * as runtime from "../proto/codec-runtime.ts";
import { LOADER_OPTIONS, PET_SERVICE_NAME, PET_SERVICE_PROTO, PROTO_ROOT } from "../proto/load.ts";

export const GENERATED_FILE = path.join(PROTO_ROOT, "codecs.generated.ts");

/** Loads the proto as proto-loader does (same include path, camelCase field names). */
function loadRoot(): protobuf.Root {
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => path.join(PROTO_ROOT, target);
  root.loadSync(PET_SERVICE_PROTO, { keepCase: LOADER_OPTIONS.keepCase ?? false });
  root.resolveAll();
  return root;
}

const SCALAR_WRITERS: Record<string, { wireType: number; write: string; read: string; zero: string; tsType: string }> = {
  int32: { wireType: 0, write: "writeInt32(v as number)", read: "readInt32()", zero: "0", tsType: "number" },
  int64: { wireType: 0, write: "writeInt64(v)", read: "readInt64()", zero: '"0"', tsType: "string" },
  bool: { wireType: 0, write: "writeBool(v)", read: "readBool()", zero: "false", tsType: "boolean" },
  string: { wireType: 2, write: 'writeString(typeof v === "string" ? v : String(v))', read: "readString()", zero: '""', tsType: "string" },
};

const local = (type: protobuf.ReflectionObject) => type.fullName.replace(/^\./, "").replace(/\./g, "_");

function enumFunctions(e: protobuf.Enum): string {
  const entries = Object.entries(e.values);
  return [
    `/** ${e.fullName.slice(1)}: name or number → number; another string leaves the field unset (undefined). */`,
    `function ${local(e)}_number(v: unknown): number | undefined {`,
    `  if (typeof v === "number") return v;`,
    `  switch (v) {`,
    ...entries.map(([name, n]) => `    case ${JSON.stringify(name)}: return ${n};`),
    `    default: return undefined;`,
    `  }`,
    `}`,
    ``,
    `/** ${e.fullName.slice(1)}: number → name; a number outside the enum stays a number. */`,
    `function ${local(e)}_name(n: number): string | number {`,
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

function messageFunctions(type: protobuf.Type): string {
  const fields = [...type.fieldsArray].sort((a, b) => a.id - b.id);
  const name = local(type);
  const write: string[] = [];
  const defaults: string[] = [];
  const shape: string[] = [];
  const cases: string[] = [];
  for (const f of fields) {
    const key = JSON.stringify(f.name);
    const tag = (wireType: number) => (f.id << 3) | wireType;
    if (f.map) throw new Error(`${type.fullName}.${f.name}: maps are not supported by the generator`);
    const oneof = optionalOneof(type, f);
    if (f.resolvedType instanceof protobuf.Type) {
      if (oneof) throw new Error(`${type.fullName}.${f.name}: optional message fields are not supported by the generator`);
      const inner = local(f.resolvedType);
      const writeOne = `writeUint32(${tag(2)}); const l = openLength(); write_${inner}(item); closeLength(l);`;
      if (f.repeated) {
        write.push(
          `  v = m[${key}];`,
          `  if (v) {`,
          `    if (!Array.isArray(v)) throw new TypeError("${type.fullName.slice(1)}.${f.name}: array expected");`,
          `    for (const item of v) { checkObject(item, "${f.resolvedType.fullName.slice(1)}"); ${writeOne} }`,
          `  }`,
        );
        defaults.push(`${key}: []`);
        shape.push(`${key}: unknown[]`);
        cases.push(`      case ${f.id}: { const outer = enterMessage(); d[${key}].push(read_${inner}()); leaveMessage(outer); break; }`);
      } else {
        write.push(`  v = m[${key}];`, `  if (v != null) { const item = v; checkObject(item, "${f.resolvedType.fullName.slice(1)}"); ${writeOne} }`);
        defaults.push(`${key}: null`);
        shape.push(`${key}: unknown`);
        cases.push(`      case ${f.id}: { const outer = enterMessage(); d[${key}] = read_${inner}(); leaveMessage(outer); break; }`);
      }
      continue;
    }
    if (f.repeated) throw new Error(`${type.fullName}.${f.name}: repeated scalars are not supported by the generator`);
    // Present: the value, and for an optional field its name in the oneof's property.
    const set = (read: string) => `d[${key}] = ${read};${oneof ? ` d[${JSON.stringify(oneof)}] = ${key};` : ""}`;
    const declare = (tsType: string, zero: string) => {
      if (oneof) shape.push(`${key}?: ${tsType}`, `${JSON.stringify(oneof)}?: string`);
      else {
        shape.push(`${key}: ${tsType}`);
        defaults.push(`${key}: ${zero}`);
      }
    };
    if (f.resolvedType instanceof protobuf.Enum) {
      const e = local(f.resolvedType);
      write.push(`  v = m[${key}] == null ? undefined : ${e}_number(m[${key}]);`, `  if (v !== undefined) { writeUint32(${tag(0)}); writeInt32(v as number); }`);
      declare("string | number", JSON.stringify(f.resolvedType.valuesById[0] ?? 0));
      cases.push(`      case ${f.id}: ${set(`${e}_name(readInt32())`)} break;`);
      continue;
    }
    const scalar = SCALAR_WRITERS[f.type];
    if (!scalar) throw new Error(`${type.fullName}.${f.name}: type ${f.type} is not supported by the generator`);
    write.push(`  v = m[${key}];`, `  if (v != null) { writeUint32(${tag(scalar.wireType)}); ${scalar.write}; }`);
    declare(scalar.tsType, scalar.zero);
    cases.push(`      case ${f.id}: ${set(scalar.read)} break;`);
  }
  return [
    `function write_${name}(m: Record<string, unknown>): void {`,
    `  let v: unknown;`,
    ...write,
    `}`,
    ``,
    `function read_${name}() {`,
    `  const d: { ${shape.join("; ")} } = { ${defaults.join(", ")} };`,
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
    `export const ${name}: Codec = {`,
    `  encode(m: unknown): Buffer {`,
    `    if (Array.isArray(m)) throw new TypeError("${type.fullName.slice(1)}: object expected, got an array");`,
    `    checkObject(m, "${type.fullName.slice(1)}");`,
    `    begin();`,
    `    write_${name}(m);`,
    `    return finish();`,
    `  },`,
    `  decode(bytes: Buffer) {`,
    `    startReading(bytes);`,
    `    return read_${name}();`,
    `  },`,
    `};`,
  ].join("\n");
}

/** Messages reachable from the service's methods, dependencies first; the enums they use. */
function collect(root: protobuf.Root): { messages: protobuf.Type[]; enums: protobuf.Enum[]; service: protobuf.Service } {
  const service = root.lookupService(PET_SERVICE_NAME);
  const messages: protobuf.Type[] = [];
  const enums = new Set<protobuf.Enum>();
  const visit = (type: protobuf.Type) => {
    if (messages.includes(type)) return;
    for (const f of type.fieldsArray) {
      if (f.resolvedType instanceof protobuf.Type) visit(f.resolvedType);
      else if (f.resolvedType instanceof protobuf.Enum) enums.add(f.resolvedType);
    }
    messages.push(type);
  };
  for (const method of service.methodsArray) {
    visit(method.resolvedRequestType!);
    visit(method.resolvedResponseType!);
  }
  return { messages, enums: [...enums], service };
}

export function generateCodecs(): string {
  const { messages, enums, service } = collect(loadRoot());
  const methods = service.methodsArray.map(
    (m) => `  ${m.name}: { request: ${local(m.resolvedRequestType!)}, response: ${local(m.resolvedResponseType!)} },`,
  );
  const body = [
    `export interface Codec {`,
    `  encode(message: unknown): Buffer;`,
    `  decode(bytes: Buffer): unknown;`,
    `}`,
    ``,
    ...enums.map((e) => `${enumFunctions(e)}\n`),
    ...messages.map((t) => `${messageFunctions(t)}\n`),
    `/** ${service.fullName.slice(1)}: each method's request and response codecs. */`,
    `export const ${local(service)}: Readonly<Record<string, { request: Codec; response: Codec }>> = {`,
    ...methods,
    `};`,
    ``,
  ].join("\n");
  const used = RUNTIME.filter((name) => new RegExp(`\\b${name}\\(`).test(body));
  return [
    `// Generated by scripts/generate-codecs.ts from ${PET_SERVICE_PROTO} (npm run generate:codecs). Do not edit.`,
    `import { ${used.join(", ")} } from "./codec-runtime.ts";`,
    ``,
    body,
  ].join("\n");
}

/** proto/codec-runtime.ts's exports, sorted (vitest's module objects keep declaration order); the generated file imports those its code calls. */
const RUNTIME = Object.keys(runtime).sort();

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) {
  const code = generateCodecs();
  if (process.argv.includes("--check")) {
    const current = readFileSync(GENERATED_FILE, "utf8");
    if (current !== code) {
      console.error(`${path.relative(process.cwd(), GENERATED_FILE)} is stale: run npm run generate:codecs`);
      process.exit(1);
    }
  } else {
    writeFileSync(GENERATED_FILE, code);
    console.log(`wrote ${path.relative(process.cwd(), GENERATED_FILE)}`);
  }
}
