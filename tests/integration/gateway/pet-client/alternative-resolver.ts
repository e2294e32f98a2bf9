// grpc-js asks the DNS server a dns://server/ target names only with its alternative resolver,
// chosen when the module loads; imported first by grpc-js.test.ts, before anything loads grpc-js.
process.env.GRPC_NODE_USE_ALTERNATIVE_RESOLVER = "true";
