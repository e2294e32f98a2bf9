/**
 * `npm run generate:codecs`: writes proto/generated/ from the .proto files, so each schema has
 * one home. For every message a file needs it emits the TypeScript types (the decoded object, and
 * the `…Init` shape an encoder takes) and an encoder and a decoder of the object shape
 * proto-loader gives with LOADER_OPTIONS (int64 as decimal strings, enums as names, defaults
 * filled), built on proto/codec-runtime.ts. tests/unit/proto/codecs.test.ts shows they agree with
 * proto-loader byte for byte, and tests/unit/scripts/generate-codecs.test.ts that this script
 * reproduces the committed files.
 *
 *   node scripts/generate-codecs.ts [--check]   (--check: exit 1 if a file is stale)
 *
 * Two files: petstore-v1.ts (every message PetService uses) and google-rpc.ts (the rich error
 * model: google.rpc.Status and the details we send, from the google-proto-files package).
 */
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import protobuf from "protobufjs";
import * as runtime from "../proto/codec-runtime.ts";
import { LOADER_OPTIONS, PET_SERVICE_NAME, PET_SERVICE_PROTO, PROTO_ROOT } from "../proto/load.ts";

export const GENERATED_DIR = path.join(PROTO_ROOT, "generated");
/** google/rpc/*.proto as googleapis publishes them (a dev dependency: only this script reads them). */
const GOOGLE_PROTOS = path.dirname(createRequire(import.meta.url).resolve("google-proto-files/package.json"));

interface FileSpec {
  file: string;
  /** Where the .proto files are, and which to load. */
  root: string;
  protos: string[];
  /** The service whose methods' messages are emitted, with a codec table… */
  service?: string;
  /** …or these messages (and what they use). */
  messages?: string[];
}

export const GENERATED_FILES: readonly FileSpec[] = [
  { file: "petstore-v1.ts", root: PROTO_ROOT, protos: [PET_SERVICE_PROTO], service: PET_SERVICE_NAME },
  {
    file: "google-rpc.ts",
    root: GOOGLE_PROTOS,
    protos: ["google/rpc/status.proto", "google/rpc/error_details.proto"],
    messages: ["google.rpc.Status", "google.rpc.BadRequest", "google.rpc.ErrorInfo", "google.rpc.RetryInfo"],
  },
];

/** Loads the protos as proto-loader does (same include path, camelCase field names). */
function loadRoot(spec: FileSpec): protobuf.Root {
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => path.join(spec.root, target);
  root.loadSync(spec.protos, { keepCase: LOADER_OPTIONS.keepCase ?? false });
  root.resolveAll();
  return root;
}

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

const fullName = (type: protobuf.ReflectionObject) => type.fullName.replace(/^\./, "");
/** Codec and function names: the full name, underscored (unique in every file). */
const local = (type: protobuf.ReflectionObject) => fullName(type).replace(/\./g, "_");
/** Type names: the name within its package, a nested type after its parent (`BadRequest_FieldViolation`). */
function typeName(type: protobuf.ReflectionObject): string {
  const names: string[] = [];
  for (let t: protobuf.ReflectionObject | null = type; t instanceof protobuf.Type || t instanceof protobuf.Enum; t = t.parent) names.unshift(t.name);
  return names.join("_");
}

function enumCode(e: protobuf.Enum, typeName: string): string {
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

function messageCode(type: protobuf.Type): string {
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

/** The messages to emit, dependencies first, and the enums they use. */
function collect(root: protobuf.Root, spec: FileSpec): { messages: protobuf.Type[]; enums: protobuf.Enum[]; service?: protobuf.Service } {
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
  const service = spec.service ? root.lookupService(spec.service) : undefined;
  for (const method of service?.methodsArray ?? []) {
    visit(method.resolvedRequestType!);
    visit(method.resolvedResponseType!);
  }
  for (const name of spec.messages ?? []) visit(root.lookupType(name));
  return { messages, enums: [...enums], ...(service && { service }) };
}

export function generateFile(spec: FileSpec): string {
  const { messages, enums, service } = collect(loadRoot(spec), spec);
  const names = [...messages, ...enums].map(typeName);
  const clash = names.find((n, i) => names.indexOf(n) !== i);
  if (clash) throw new Error(`${spec.file}: two types would be named ${clash}`);
  const table = service && [
    `/** ${fullName(service)}: each method's request and response codecs. */`,
    `export const ${local(service)} = {`,
    ...service.methodsArray.map((m) => `  ${m.name}: { request: ${local(m.resolvedRequestType!)}, response: ${local(m.resolvedResponseType!)} },`),
    `} as const;`,
    ``,
  ];
  const body = [
    ...enums.map((e) => `${enumCode(e, typeName(e))}\n`),
    ...messages.map((t) => `${messageCode(t)}\n`),
    ...(table ?? []),
  ].join("\n");
  const used = RUNTIME.filter((name) => new RegExp(`\\b${name}\\(`).test(body));
  return [
    `// Generated by scripts/generate-codecs.ts from ${spec.protos.join(", ")} (npm run generate:codecs). Do not edit.`,
    `import { ${used.join(", ")}, type Codec } from "../codec-runtime.ts";`,
    ``,
    body,
  ].join("\n");
}

/** proto/codec-runtime.ts's functions, sorted (vitest's module objects keep declaration order); a generated file imports those its code calls. */
const RUNTIME = Object.keys(runtime).sort();

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) {
  let stale = false;
  for (const spec of GENERATED_FILES) {
    const file = path.join(GENERATED_DIR, spec.file);
    const code = generateFile(spec);
    const shown = path.relative(process.cwd(), file);
    if (!process.argv.includes("--check")) {
      writeFileSync(file, code);
      console.log(`wrote ${shown}`);
    } else if (readFileSync(file, "utf8") !== code) {
      console.error(`${shown} is stale: run npm run generate:codecs`);
      stale = true;
    }
  }
  if (stale) process.exit(1);
}
