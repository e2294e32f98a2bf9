import { expect, it } from "vitest";
import { signupAddress } from "../../../../keys/signups/signups.ts";

it("counts an IPv4 address as itself (mapped into IPv6 too), an IPv6 address by its /64, and refuses what is no address", () => {
  expect(signupAddress("203.0.113.7")).toBe("203.0.113.7");
  expect(signupAddress("::ffff:203.0.113.7")).toBe("203.0.113.7");
  expect(signupAddress("2001:db8:aa:bb::1")).toBe("2001:db8:aa:bb::/64");
  expect(signupAddress("2001:0DB8:00aa:00bb:1:2:3:4")).toBe("2001:db8:aa:bb::/64");
  expect(signupAddress("2001:db8::1")).toBe("2001:db8:0:0::/64");
  expect(signupAddress("::1")).toBe("0:0:0:0::/64");
  expect(signupAddress("fe80::1:2:3:4:5")).toBe("fe80:0:0:1::/64");
  for (const bad of ["", "somewhere", "300.1.1.1", "2001:db8::/64", "1.2.3.4/32"]) expect(signupAddress(bad)).toBeUndefined();
});
