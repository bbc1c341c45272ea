// Merchant e-mails are unique whatever their case: a unique index on lower(email), keeping the case-only duplicates an older store may hold.
import { type Kysely, sql } from "kysely";

/** SQL's lower() on the ASCII that e-mail addresses are made of (the schema's `email` format is ASCII). */
export function emailKey(email: string): string {
  return email.replace(/[A-Z]/g, (c) => c.toLowerCase());
}

/**
 * Before this migration, `Shop@example.com` and `shop@example.com` could belong to two merchants.
 * Neither e-mail is changed behind the operator's back: the oldest merchant of each such group is in
 * the index (so its e-mail, in any case, is taken for everyone else), and the newer ones are left
 * out of it by id, as the partial index's literal list (docs/operator-api.md). New and changed
 * e-mails are checked case-insensitively by the service and, under races, by this index.
 */
export const merchantEmailCase = {
  async up(db: Kysely<unknown>): Promise<void> {
    const { rows } = await sql<{ id: string; email: string }>`select id, email from merchants
      order by created_at, id`.execute(db);
    const seen = new Set<string>();
    const exempt: string[] = [];
    for (const row of rows) {
      const key = emailKey(row.email);
      if (seen.has(key)) exempt.push(row.id);
      else seen.add(key);
    }
    const where = exempt.length === 0 ? sql`` : sql` where id not in (${sql.join(exempt.map((id) => sql.lit(id)))})`;
    await sql`create unique index merchants_email_lower on merchants (lower(email))${where}`.execute(db);
  },
};
