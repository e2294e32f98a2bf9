/**
 * Reading the protobuf wire format: the decoders of proto/generated/ call these after
 * startReading(). One reader position per process: decoding is synchronous and never nests across
 * messages, so module state is safe and saves an object per call.
 */

const TWO_32 = 4294967296;

let input: Buffer = Buffer.alloc(0);
let pos = 0;
let end = 0;

export function startReading(bytes: Buffer): void {
  input = bytes;
  pos = 0;
  end = bytes.length;
}

export const more = (): boolean => pos < end;

function byte(): number {
  if (pos >= end) throw new RangeError("protobuf: message truncated");
  return input[pos++]!;
}

/** A varint as uint32; like protobufjs, the upper 5 bytes of a 10-byte varint are skipped. */
export function readUint32(): number {
  let b = byte();
  let v = b & 127;
  if (b < 128) return v;
  b = byte();
  v |= (b & 127) << 7;
  if (b < 128) return v;
  b = byte();
  v |= (b & 127) << 14;
  if (b < 128) return v;
  b = byte();
  v |= (b & 127) << 21;
  if (b < 128) return v;
  b = byte();
  v = (v | ((b & 15) << 28)) >>> 0;
  if (b < 128) return v;
  if ((pos += 5) > end) throw new RangeError("protobuf: message truncated");
  return v;
}

export const readInt32 = (): number => readUint32() | 0;

export const readBool = (): boolean => readUint32() !== 0;

/** An int64 varint as the decimal string proto-loader's longs: String gives. */
export function readInt64(): string {
  let lo = 0;
  let hi = 0;
  for (let i = 0; ; i++) {
    if (i === 10) throw new RangeError("protobuf: invalid varint");
    const b = byte();
    if (i < 4) lo |= (b & 127) << (7 * i);
    else if (i === 4) {
      lo |= (b & 127) << 28;
      hi |= (b & 127) >> 4;
    } else hi |= (b & 127) << (7 * i - 32);
    if (b < 128) break;
  }
  lo >>>= 0;
  hi >>>= 0;
  if (hi === 0) return String(lo);
  if (hi < 0x200000) return String(hi * TWO_32 + lo);
  return BigInt.asIntN(64, (BigInt(hi) << 32n) | BigInt(lo)).toString();
}

export function readString(): string {
  const length = readUint32();
  if (pos + length > end) throw new RangeError("protobuf: message truncated");
  const value = input.toString("utf8", pos, pos + length);
  pos += length;
  return value;
}

/**
 * One entry of a decoded map<string, …>: an own property even for the key "__proto__", which
 * a plain assignment would take as the object's prototype (and lose the entry).
 */
export function setEntry(map: Record<string, unknown>, key: string, value: unknown): void {
  if (key === "__proto__") Object.defineProperty(map, key, { value, enumerable: true, writable: true, configurable: true });
  else map[key] = value;
}

/** A byte string: a view of the input, as protobufjs gives it (no copy). */
export function readBytes(): Buffer {
  const length = readUint32();
  if (pos + length > end) throw new RangeError("protobuf: message truncated");
  const value = input.subarray(pos, pos + length);
  pos += length;
  return value;
}

/** Enters an embedded message: returns the enclosing message's end, for leaveMessage. */
export function enterMessage(): number {
  const length = readUint32();
  const outer = end;
  if (pos + length > end) throw new RangeError("protobuf: message truncated");
  end = pos + length;
  return outer;
}

export function leaveMessage(outer: number): void {
  end = outer;
}

/** Skips a field this schema does not know (wire types 0, 1, 2, 3/4 and 5). */
export function skipField(wireType: number): void {
  switch (wireType) {
    case 0:
      while (byte() & 128);
      break;
    case 1:
      skipBytes(8);
      break;
    case 2:
      skipBytes(readUint32());
      break;
    case 3:
      for (let t = readUint32(); (t & 7) !== 4; t = readUint32()) skipField(t & 7);
      break;
    case 5:
      skipBytes(4);
      break;
    default:
      throw new RangeError(`protobuf: invalid wire type ${wireType}`);
  }
}

function skipBytes(n: number): void {
  if (pos + n > end) throw new RangeError("protobuf: message truncated");
  pos += n;
}
