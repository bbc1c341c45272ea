// Dashboard roles (product §14) and what each may do: one table that the routes and the tests both read.

export const ROLES = ["owner", "developer", "viewer", "approver"] as const;
export type Role = (typeof ROLES)[number];

export type DashboardAction =
  | "read"
  | "manageApiKeys"
  | "manageTeam"
  | "readAudit"
  | "manageInvoices"
  | "manageCallbacks"
  | "moveMoney"
  | "approvePayouts"
  | "managePayoutPolicies";

export const ALLOWED: Readonly<Record<Role, readonly DashboardAction[]>> = {
  // moveMoney: withdrawal methods, withdrawals, refunds, the resolution of late payments and of held deposits.
  owner: [
    "read",
    "manageApiKeys",
    "manageTeam",
    "readAudit",
    "manageInvoices",
    "manageCallbacks",
    "moveMoney",
    "approvePayouts",
    "managePayoutPolicies",
  ],
  developer: ["read", "manageApiKeys", "manageInvoices", "manageCallbacks"],
  viewer: ["read"],
  // Approves or rejects payouts waiting for approvals (product §31), and reads; moves no money itself.
  approver: ["read", "approvePayouts"],
};

export function allows(role: Role, action: DashboardAction): boolean {
  return ALLOWED[role].includes(action);
}

export function isRole(value: string): value is Role {
  return (ROLES as readonly string[]).includes(value);
}

/** Session lifetimes: idle and absolute (product §14). */
export const SESSION_IDLE_MS = 30 * 60_000;
export const SESSION_ABSOLUTE_MS = 12 * 3_600_000;
/** A step-up (password or TOTP) covers sensitive actions for this long. */
export const STEP_UP_MS = 5 * 60_000;
export const INVITATION_MS = 72 * 3_600_000;
export const PASSWORD_MIN_LENGTH = 12;
/** Sign-in throttling: at most this many failures per account in the window. */
export const SIGNIN_FAILURES_ALLOWED = 10;
/** Per address more are allowed: several people may share one (an office behind NAT). */
export const SIGNIN_FAILURES_PER_ADDRESS = 50;
export const SIGNIN_WINDOW_MS = 15 * 60_000;
/**
 * Confirmations of a signed-in user (step-up, the current password of a change, TOTP codes to turn
 * TOTP on or off): at most this many failures per user in the window, across sessions (product §18).
 */
export const STEP_UP_FAILURES_ALLOWED = 10;
export const STEP_UP_FAILURES_PER_ADDRESS = 50;
export const STEP_UP_WINDOW_MS = 15 * 60_000;

export function sessionLive(createdAtMs: number, lastSeenAtMs: number, nowMs: number): boolean {
  return nowMs - lastSeenAtMs < SESSION_IDLE_MS && nowMs - createdAtMs < SESSION_ABSOLUTE_MS;
}

export function steppedUp(stepUpAtMs: number | null, nowMs: number): boolean {
  return stepUpAtMs !== null && nowMs - stepUpAtMs < STEP_UP_MS;
}
