/**
 * Deprecation data of GET /v1/pets/{petId}. Deprecation (RFC 9745) is the instant it was
 * deprecated (the 1.0.0 contract shipped with it deprecated); Sunset (RFC 8594) is the removal
 * date from the spec, after which the operation answers 410.
 */
export interface Deprecation {
  /** Unix milliseconds when the operation became deprecated. */
  deprecatedAt: number;
  /** Unix milliseconds from which the operation is gone. */
  sunsetAt: number;
  /** The replacement, for the Link header. */
  successor: string;
}

export const GET_PET_DEPRECATION: Deprecation = {
  deprecatedAt: Date.UTC(2026, 0, 1),
  sunsetAt: Date.UTC(2030, 11, 5),
  successor: "/v1/pets",
};

export function deprecationHeaders(d: Deprecation): Record<string, string> {
  return {
    Deprecation: `@${Math.floor(d.deprecatedAt / 1000)}`,
    Sunset: new Date(d.sunsetAt).toUTCString(),
    Link: `<${d.successor}>; rel="successor-version"`,
  };
}
