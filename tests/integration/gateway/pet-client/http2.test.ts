import { dnsConformance, http2DnsConformance, petClientConformance } from "./conformance.ts";

// The gateway's client: PetService calls made on node:http2 sessions (gateway/pet-client/http2-*.ts).
petClientConformance("http2");
dnsConformance("http2");
http2DnsConformance();
