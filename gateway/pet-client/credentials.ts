import { rootCertificates } from "node:tls";
import * as grpc from "@grpc/grpc-js";
import { getOrCreate } from "../../lib/get-or-create.ts";
import type { TlsMaterial, TlsSource } from "../../lib/tls-files.ts";

/**
 * The channel credentials of every gRPC channel to the pet service (PetService calls, the
 * readiness health checks): plaintext without TLS settings; else TLS whose every new connection
 * uses the files' current contents (CA, and for mTLS this gateway's certificate and key), so a
 * rotation needs no restart. grpc-js's createSsl fixes its secure context when the channel is
 * made; its certificate-provider credentials (grpc.experimental, what its xDS support uses) ask
 * the provider again for each connection, and this provider always holds the latest files.
 * One object per source, so the channels share their connections (grpc-js pools connections of
 * equal credentials), as they do in plaintext.
 */
export function petServiceCredentials(tls: TlsSource | undefined): grpc.ChannelCredentials {
  if (!tls) return grpc.credentials.createInsecure();
  return getOrCreate(credentialsOf, tls, () => {
    const provider = certificateProvider(tls);
    return grpc.experimental.createCertificateProviderChannelCredentials(provider, tls.current().cert ? provider : null);
  });
}

const credentialsOf = new WeakMap<TlsSource, grpc.ChannelCredentials>();

/** Node's public roots, when PET_SERVICE_TLS_CA is unset (a pet service with a publicly issued certificate). */
const PUBLIC_ROOTS = Buffer.from(rootCertificates.join("\n"));

function certificateProvider(tls: TlsSource): grpc.experimental.CertificateProvider {
  const caListeners = new Set<grpc.experimental.CaCertificateUpdateListener>();
  const identityListeners = new Set<grpc.experimental.IdentityCertificateUpdateListener>();
  const caUpdate = (m: TlsMaterial) => ({ caCertificate: m.ca ?? PUBLIC_ROOTS });
  const identityUpdate = (m: TlsMaterial) => (m.cert && m.key ? { certificate: m.cert, privateKey: m.key } : null);
  tls.onChange((material) => {
    for (const listener of caListeners) listener(caUpdate(material));
    for (const listener of identityListeners) listener(identityUpdate(material));
  });
  return {
    // Like grpc-js's own providers: a new listener hears the current state on the next tick.
    addCaCertificateListener(listener) {
      caListeners.add(listener);
      process.nextTick(listener, caUpdate(tls.current()));
    },
    removeCaCertificateListener: (listener) => void caListeners.delete(listener),
    addIdentityCertificateListener(listener) {
      identityListeners.add(listener);
      process.nextTick(listener, identityUpdate(tls.current()));
    },
    removeIdentityCertificateListener: (listener) => void identityListeners.delete(listener),
  };
}
