import { describe, expect, it } from "vitest";
import { createNetworkMatcher, isValidCidr, parseCidr } from "../../../lib/networks.ts";

describe("lib/networks.ts", () => {
  it("parses IPv4 and IPv6 CIDRs and bare addresses; refuses anything else", () => {
    expect(parseCidr("10.0.0.0/8")).toEqual({ address: "10.0.0.0", prefix: 8, family: "ipv4" });
    expect(parseCidr("2001:db8::/32")).toEqual({ address: "2001:db8::", prefix: 32, family: "ipv6" });
    expect(parseCidr("192.0.2.7")).toEqual({ address: "192.0.2.7", prefix: 32, family: "ipv4" });
    expect(parseCidr("::1")).toEqual({ address: "::1", prefix: 128, family: "ipv6" });
    for (const bad of ["", "10.0.0.0/33", "::/129", "10.0.0/8", "10.0.0.0/", "10.0.0.0/-1", "10.0.0.0/8/8", "example.com/8", "10.0.0.0/ 8", "300.0.0.0/8"]) {
      expect(isValidCidr(bad), bad).toBe(false);
    }
  });

  it("matches addresses inside the networks only, IPv4-mapped IPv6 addresses as their IPv4 address", () => {
    const allows = createNetworkMatcher(["10.0.0.0/8", "192.0.2.7", "2001:db8::/32"]);
    expect(allows("10.200.3.4")).toBe(true);
    expect(allows("11.0.0.1")).toBe(false);
    expect(allows("192.0.2.7")).toBe(true);
    expect(allows("192.0.2.8")).toBe(false);
    expect(allows("2001:db8:1::5")).toBe(true);
    expect(allows("2001:db9::5")).toBe(false);
    // A dual-stack listener reports IPv4 clients this way.
    expect(allows("::ffff:10.1.2.3")).toBe(true);
    expect(allows("::FFFF:11.1.2.3")).toBe(false);
    expect(allows("not an address")).toBe(false);
    expect(allows("")).toBe(false);
  });

  it("matches IPv4-mapped addresses against networks written over ::ffff:0:0/96, and loopback as configured", () => {
    expect(createNetworkMatcher(["::ffff:10.0.0.0/104"])("::ffff:10.9.9.9")).toBe(true);
    expect(createNetworkMatcher(["127.0.0.0/8"])("127.0.0.1")).toBe(true);
    expect(createNetworkMatcher(["127.0.0.0/8"])("::1")).toBe(false);
    expect(createNetworkMatcher([])("127.0.0.1")).toBe(false);
  });
});
