/** int64's bounds: ids and category ids, checked as BigInt wherever a decimal form arrives. */
export const INT64_MIN = -(2n ** 63n);
export const INT64_MAX = 2n ** 63n - 1n;

export const isInt64 = (value: bigint): boolean => value >= INT64_MIN && value <= INT64_MAX;
