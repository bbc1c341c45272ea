// Dashboard credentials: argon2id passwords, TOTP (RFC 6238) with its QR code, and single-use recovery codes.
import { randomBytes } from "node:crypto";
import { Secret, TOTP } from "otpauth";
import QRCode from "qrcode";
import { hashToken } from "../store/secrets.ts";

// algorithm 2 is Argon2id (the package's const enum cannot be imported under verbatimModuleSyntax).
const ARGON2 = { algorithm: 2, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

/** The argon2 binding, loaded at the first password: a process that serves no dashboard sign-in does not pay for it. */
function argon2() {
  return import("@node-rs/argon2");
}

export async function hashPassword(password: string): Promise<string> {
  return (await argon2()).hash(password, ARGON2);
}

// Verified against when the account does not exist, so both cases cost one argon2 verification.
let decoy: Promise<string> | undefined;

export async function verifyPassword(passwordHash: string | null, password: string): Promise<boolean> {
  decoy ??= hashPassword(randomBytes(16).toString("hex"));
  const target = passwordHash ?? (await decoy);
  try {
    const ok = await (await argon2()).verify(target, password);
    return ok && passwordHash !== null;
  } catch {
    return false;
  }
}

const TOTP_PERIOD_S = 30;

function totpOf(secret: string, label = "dashboard"): TOTP {
  return new TOTP({
    issuer: "Merchant dashboard",
    label,
    algorithm: "SHA1",
    digits: 6,
    period: TOTP_PERIOD_S,
    secret: Secret.fromBase32(secret),
  });
}

export function newTotpSecret(): string {
  return new Secret({ size: 20 }).base32;
}

/**
 * The time step (RFC 6238's counter) whose code this is: now, or the step before or after (clock
 * drift); null when it is none of them. The caller accepts each step once per user.
 */
export function totpStep(secret: string, code: string, nowMs = Date.now()): number | null {
  if (!/^\d{6}$/.test(code)) return null;
  const delta = totpOf(secret).validate({ token: code, window: 1, timestamp: nowMs });
  return delta === null ? null : Math.floor(nowMs / 1000 / TOTP_PERIOD_S) + delta;
}

export async function totpEnrolment(secret: string, email: string): Promise<{ otpauthUrl: string; qrCodeSvg: string }> {
  const otpauthUrl = totpOf(secret, email).toString();
  const qrCodeSvg = await QRCode.toString(otpauthUrl, { type: "svg", margin: 1, errorCorrectionLevel: "M" });
  return { otpauthUrl, qrCodeSvg };
}

export const RECOVERY_CODE_COUNT = 10;

export function newRecoveryCodes(): string[] {
  return Array.from({ length: RECOVERY_CODE_COUNT }, () => {
    const hex = randomBytes(5).toString("hex");
    return `${hex.slice(0, 5)}-${hex.slice(5)}`;
  });
}

export function recoveryCodeHash(code: string): string {
  return hashToken(code.trim().toLowerCase());
}
