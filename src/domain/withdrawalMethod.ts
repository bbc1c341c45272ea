// Withdrawal methods (product §14): when a method added in the dashboard starts taking withdrawals.

/** When a method added now takes its first withdrawal: null when there is no cooling-off. */
export function coolingOffEnd(nowMs: number, coolingOffMs: number): string | null {
  return coolingOffMs > 0 ? new Date(nowMs + coolingOffMs).toISOString() : null;
}
