// First, before anything loads grpc-js: it reads this once, at load.
import "./alternative-resolver.ts";
import { dnsConformance } from "./conformance.ts";

// grpc-js with its alternative resolver, which asks the DNS server a dns://server/ target names.
dnsConformance("grpc-js");
