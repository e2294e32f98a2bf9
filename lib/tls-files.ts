import { createPrivateKey, X509Certificate } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import { createSecureContext } from "node:tls";
import { ConfigError } from "./config.ts";
import { messageOf } from "./error-message.ts";
import type { Logger } from "./logger.ts";

/**
 * TLS material from PEM files named by variables (PET_SERVICE_TLS_*), re-read when the files
 * change, so certificates rotate without a restart: cert-manager, Vault or an operator replaces
 * the files (a Kubernetes Secret volume swaps a symlink), and every new connection from then on
 * uses the new ones. Connections already open keep the certificate they were made with until
 * they close (the pet service closes each after 5 minutes).
 */
export interface TlsMaterial {
  /** PEM: the CA certificate(s) that sign the peer's certificate. */
  ca?: Buffer;
  /** PEM: this side's certificate (chain) and its private key. */
  cert?: Buffer;
  key?: Buffer;
}

export interface TlsSource {
  /** The material as last read and found consistent; what a new connection must use. */
  current(): TlsMaterial;
  /** Called with the new material after each rotation; returns the unsubscribe function. */
  onChange(listener: (material: TlsMaterial) => void): () => void;
  /** Stops watching the files. */
  close(): void;
}

type Part = keyof TlsMaterial;
/** Which variable names each file (for messages) and its path. */
export type TlsFiles = Partial<Record<Part, { variable: string; path: string }>>;

/** How often the files' status is looked at: a rotation is in use within about this long. */
const DEFAULT_INTERVAL_MS = 1_000;

/**
 * Reads `files` now (a missing, unreadable or inconsistent file is a ConfigError naming its
 * variable) and then looks at them every `intervalMs`. A change is taken only when the new set is
 * consistent (PEM that parses, a key that matches its certificate): a rotation caught halfway
 * (the certificate replaced, the key not yet) keeps the previous material until the next change.
 */
export function watchTlsFiles(files: TlsFiles, opts: { logger: Logger; intervalMs?: number }): TlsSource {
  const parts = Object.keys(files) as Part[];
  let material = readMaterial(files);
  let seen = statusOf(files);
  const listeners = new Set<(material: TlsMaterial) => void>();

  const poll = () => {
    const now = statusOf(files);
    if (now === seen) return;
    seen = now;
    let next: TlsMaterial;
    try {
      next = readMaterial(files);
    } catch (err) {
      opts.logger.warn({ err: messageOf(err) }, "TLS files changed but cannot be used yet; keeping the previous ones");
      return;
    }
    if (parts.every((p) => next[p]!.equals(material[p]!))) return;
    material = next;
    opts.logger.info({ files: parts.map((p) => files[p]!.variable) }, "TLS files re-read: new connections use them");
    for (const listener of listeners) listener(material);
  };
  const timer = setInterval(poll, opts.intervalMs ?? DEFAULT_INTERVAL_MS).unref();

  return {
    current: () => material,
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    close: () => clearInterval(timer),
  };
}

/** Size, modification time and inode of every file: a rename, a rewrite or a swapped symlink all change it. */
function statusOf(files: TlsFiles): string {
  return Object.values(files)
    .map(({ path }) => {
      try {
        const s = statSync(path);
        return `${s.ino}:${s.size}:${s.mtimeMs}`;
      } catch {
        return "missing";
      }
    })
    .join(" ");
}

function readMaterial(files: TlsFiles): TlsMaterial {
  const material: TlsMaterial = {};
  for (const part of Object.keys(files) as Part[]) {
    const { variable, path } = files[part]!;
    try {
      material[part] = readFileSync(path);
    } catch (err) {
      throw new ConfigError(variable, `cannot be read (got ${JSON.stringify(path)}): ${messageOf(err)}`);
    }
  }
  check(files, material);
  return material;
}

/** Parses every piece and matches the key to its certificate, naming the variable at fault. */
function check(files: TlsFiles, { ca, cert, key }: TlsMaterial): void {
  const refuse = (part: Part, detail: string) => {
    throw new ConfigError(files[part]!.variable, `${detail} (got ${JSON.stringify(files[part]!.path)})`);
  };
  let certificate: X509Certificate | undefined;
  if (cert) {
    try {
      certificate = new X509Certificate(cert);
    } catch {
      refuse("cert", "is not a PEM certificate");
    }
  }
  if (key) {
    try {
      const privateKey = createPrivateKey(key);
      if (certificate && !certificate.checkPrivateKey(privateKey)) refuse("key", `is not the key of ${files.cert!.variable}`);
    } catch (err) {
      if (err instanceof ConfigError) throw err;
      refuse("key", "is not a PEM private key");
    }
  }
  if (ca) {
    try {
      new X509Certificate(ca);
      createSecureContext({ ca });
    } catch {
      refuse("ca", "is not a PEM CA certificate");
    }
  }
}
