import { petClientConformance } from "./conformance.ts";

// The reference: the same behaviour through grpc-js (gateway/pet-client/grpc-js-transport.ts).
petClientConformance("grpc-js");
