// The payout worker's lease and check indexes hold only the payouts in the state each query looks for.
import { type Kysely, sql } from "kysely";

/**
 * 003 indexed every payout by (state, lease_until) and (state, next_check_at): each payout, open or
 * long settled, sat in both, so every accepted payout and every state change wrote both (and their
 * pages into every commit). Only `sending` payouts are looked up by lease and only `sent` ones by
 * check time, so each index now holds only those: a queued payout is in neither, a settled one
 * leaves them for good. The queries name the state as a literal, which the planners need to use
 * a partial index; the state stays the first column, or SQLite prefers (state, created_at) and
 * sorts. (state, created_at) stays whole: the claim and the admin listing filter by any state.
 */
export const payoutWorkIndexes = {
  async up(db: Kysely<unknown>): Promise<void> {
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
