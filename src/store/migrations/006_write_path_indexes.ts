// Fewer index writes per signed operation: the indexes no query reads are dropped, and the payout work indexes hold only open payouts.
import { type Kysely, sql } from "kysely";

/**
 * Every index is written by every insert and commit that touches its table: for a withdrawal,
 * each one a B-tree insert and a page in the commit (and, on SQLite, in the WAL and again at the
 * checkpoint). docs/performance.md ("Decisions and their evidence") has the measurements.
 *
 * - signed_requests, withdrawals, payouts and refunds were indexed by merchant_id, but no query
 *   filters them by merchant, and merchants are never deleted nor re-keyed (the only case in which
 *   a foreign key reads the referencing table). A listing per merchant brings the index it needs,
 *   (merchant_id, created_at), with it.
 * - 003 indexed every payout by (state, lease_until) and (state, next_check_at), so each payout,
 *   open or long settled, sat in both, and every accepted payout and state change wrote both. Only
 *   `sending` payouts are looked up by lease and only `sent` ones by check time: each index now
 *   holds only those, so a queued payout is in neither and a settled one leaves them for good. The
 *   queries name the state as a literal, which both planners need to use a partial index; the state
 *   stays the first column, or SQLite prefers (state, created_at) and sorts. (state, created_at)
 *   stays whole: the claim and the admin listing filter by any state.
 */
export const writePathIndexes = {
  async up(db: Kysely<unknown>): Promise<void> {
    for (const index of ["signed_requests_merchant", "withdrawals_merchant", "payouts_merchant", "refunds_merchant"]) {
      await db.schema.dropIndex(index).execute();
    }
    await db.schema.dropIndex("payouts_state_lease").execute();
    await db.schema.dropIndex("payouts_state_check").execute();
    await db.schema
      .createIndex("payouts_sending_lease")
      .on("payouts")
      .columns(["state", "lease_until"])
      .where(sql.ref("state"), "=", "sending")
      .execute();
    await db.schema
      .createIndex("payouts_sent_check")
      .on("payouts")
      .columns(["state", "next_check_at"])
      .where(sql.ref("state"), "=", "sent")
      .execute();
  },
};
