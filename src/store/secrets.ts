// Credentials at rest: API keys kept only as hashes, secrets sealed with AES-256-GCM under SECRET_ENCRYPTION_KEY.
import { createCipheriv, createDecipheriv, hash, randomBytes, timingSafeEqual } from "node:crypto";

const ENVELOPE_VERSION = "v1";

export class SecretBox {
  readonly #key: Buffer;

  constructor(key: Buffer) {
    if (key.length !== 32) throw new Error("SECRET_ENCRYPTION_KEY must be 32 bytes");
    this.#key = key;
  }

  /** `v1.<iv>.<tag>.<ciphertext>`, base64url parts; the associated data binds a secret to its row. */
  seal(plaintext: string, associatedData: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.#key, iv);
    cipher.setAAD(Buffer.from(associatedData, "utf8"));
    const ciphertext = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
    const tag = cipher.getAuthTag();
    return [ENVELOPE_VERSION, iv, tag, ciphertext]
      .map((part) => (typeof part === "string" ? part : part.toString("base64url")))
      .join(".");
  }

  open(envelope: string, associatedData: string): string {
    const [version, iv, tag, ciphertext] = envelope.split(".");
    if (version !== ENVELOPE_VERSION || !iv || !tag || ciphertext === undefined) {
      throw new Error("unreadable secret envelope");
    }
    const decipher = createDecipheriv("aes-256-gcm", this.#key, Buffer.from(iv, "base64url"));
    decipher.setAAD(Buffer.from(associatedData, "utf8"));
    decipher.setAuthTag(Buffer.from(tag, "base64url"));
    return Buffer.concat([decipher.update(Buffer.from(ciphertext, "base64url")), decipher.final()]).toString("utf8");
  }
}

/** Parses SECRET_ENCRYPTION_KEY: 64 hex characters or base64 of 32 bytes. */
export function parseEncryptionKey(text: string): Buffer {
  const trimmed = text.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(trimmed) ? Buffer.from(trimmed, "hex") : Buffer.from(trimmed, "base64");
  if (key.length !== 32) throw new Error("SECRET_ENCRYPTION_KEY must be 64 hex characters or base64 of 32 bytes");
  return key;
}

/** API keys are 192-bit random values, so an unsalted SHA-256 is enough and allows lookup by hash. */
export function hashToken(token: string): string {
  // One-shot hash: every authenticated request runs it, and the streaming Hash object costs several times more.
  return hash("sha256", token, "hex");
}

export function tokensEqual(presented: string, expectedHash: string): boolean {
  const a = Buffer.from(hashToken(presented), "hex");
  const b = Buffer.from(expectedHash, "hex");
  return a.length === b.length && timingSafeEqual(a, b);
}

export function newApiKey(): string {
  return `pk_${randomBytes(24).toString("hex")}`;
}

/** Looks like 64 hex characters; used as UTF-8 text by signers (never hex-decoded). */
export function newSecretKey(): string {
  return randomBytes(32).toString("hex");
}

export function newCallbackSecret(): string {
  return `whsec_${randomBytes(24).toString("base64")}`;
}

export function newAdminToken(): string {
  return `adm_${randomBytes(24).toString("hex")}`;
}
