/**
 * Writing the protobuf wire format: the encoders of proto/generated/ call these between begin() and
 * finish(). One writer buffer per process: encoding is synchronous and never nests across
 * messages, so module state is safe and saves an object per call.
 */

let out = Buffer.allocUnsafe(16 * 1024);
let at = 0;

export function begin(): void {
  at = 0;
}

/** A copy of what was written since begin() (small copies come from Node's buffer pool). */
export function finish(): Buffer {
  const bytes = Buffer.allocUnsafe(at);
  out.copy(bytes, 0, 0, at);
  return bytes;
}

function ensure(bytes: number): void {
  if (at + bytes <= out.length) return;
  const bigger = Buffer.allocUnsafe(Math.max(out.length * 2, at + bytes));
  out.copy(bigger, 0, 0, at);
  out = bigger;
}

export function writeUint32(value: number): void {
  ensure(5);
  let v = value >>> 0;
  while (v > 127) {
    out[at++] = (v & 127) | 128;
    v >>>= 7;
  }
  out[at++] = v;
}

/** A varint of the 64-bit value hi·2^32 + lo (both unsigned 32-bit). */
function writeVarint64(lo: number, hi: number): void {
  ensure(10);
  while (hi) {
    out[at++] = (lo & 127) | 128;
    lo = ((lo >>> 7) | (hi << 25)) >>> 0;
    hi >>>= 7;
  }
  while (lo > 127) {
    out[at++] = (lo & 127) | 128;
    lo >>>= 7;
  }
  out[at++] = lo;
}

/** int32 and enums: negative values take 10 bytes (sign-extended to 64 bits), as protobuf specifies. */
export function writeInt32(value: number): void {
  const v = value | 0;
  if (v >= 0) writeUint32(v);
  else writeVarint64(v >>> 0, 0xffffffff);
}

const DECIMAL = /^-?[0-9]+$/;
const TWO_32 = 4294967296;

/**
 * int64 from a decimal string (as proto-loader's longs: String gives them), a safe-integer number
 * or a bigint. Anything else is refused rather than encoded as some other number.
 */
export function writeInt64(value: unknown): void {
  if (typeof value === "string") {
    const n = value.length;
    // Up to 15 digits is below 2^53: exact as a double, no BigInt needed.
    if (n > 0 && n <= 15) {
      let v = 0;
      let i = 0;
      for (; i < n; i++) {
        const digit = value.charCodeAt(i) - 48;
        if (digit < 0 || digit > 9) break;
        v = v * 10 + digit;
      }
      if (i === n) {
        writeVarint64(v >>> 0, Math.floor(v / TWO_32));
        return;
      }
    }
    if (!DECIMAL.test(value)) throw new TypeError(`int64 field: not a decimal integer: ${JSON.stringify(value.slice(0, 32))}`);
    writeBigInt64(BigInt(value));
  } else if (typeof value === "number") {
    if (!Number.isSafeInteger(value)) throw new TypeError(`int64 field: not a safe integer: ${value}`);
    if (value >= 0) writeVarint64(value >>> 0, Math.floor(value / TWO_32));
    else writeBigInt64(BigInt(value));
  } else if (typeof value === "bigint") {
    writeBigInt64(value);
  } else {
    throw new TypeError(`int64 field: expected a decimal string, got ${typeof value}`);
  }
}

function writeBigInt64(value: bigint): void {
  const bits = BigInt.asUintN(64, value);
  writeVarint64(Number(bits & 0xffffffffn), Number(bits >> 32n));
}

export function writeBool(value: unknown): void {
  ensure(1);
  out[at++] = value ? 1 : 0;
}

/** A length-delimited UTF-8 string. */
export function writeString(value: string): void {
  const units = value.length;
  // At most 3 bytes per UTF-16 unit: under 43 units the length fits one varint byte.
  if (units < 43) {
    ensure(1 + 3 * units);
    const written = out.write(value, at + 1, "utf8");
    out[at] = written;
    at += 1 + written;
    return;
  }
  const bytes = Buffer.byteLength(value, "utf8");
  writeUint32(bytes);
  ensure(bytes);
  at += out.write(value, at, "utf8");
}

/** A length-delimited byte string. */
export function writeBytes(value: unknown): void {
  if (!(value instanceof Uint8Array)) throw new TypeError(`bytes field: expected a Buffer or Uint8Array, got ${typeof value}`);
  writeUint32(value.length);
  ensure(value.length);
  out.set(value, at);
  at += value.length;
}

/** Reserves one byte for the length of an embedded message; pass the result to closeLength. */
export function openLength(): number {
  ensure(1);
  return at++;
}

/** Writes the embedded message's length, moving its bytes when the length needs more than one byte. */
export function closeLength(lengthAt: number): void {
  const length = at - lengthAt - 1;
  if (length < 128) {
    out[lengthAt] = length;
    return;
  }
  let extra = 0;
  for (let v = length >>> 7; v > 0; v >>>= 7) extra++;
  ensure(extra);
  out.copy(out, lengthAt + 1 + extra, lengthAt + 1, at);
  at += extra;
  let v = length;
  let i = lengthAt;
  while (v > 127) {
    out[i++] = (v & 127) | 128;
    v >>>= 7;
  }
  out[i] = v;
}

/** What protobufjs's fromObject demands of a message value. */
export function checkObject(value: unknown, type: string): asserts value is Record<string, unknown> {
  if (!value || typeof value !== "object") throw new TypeError(`${type}: object expected`);
}
