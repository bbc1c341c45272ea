// Migration 007 on a store that already holds merchants whose e-mails differ only by case: nothing is lost or renamed, new duplicates are refused.
import type { Kysely } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../../src/store/schema.ts";
import { type MigrationDatabase, oldMerchantRow, openMigrationDatabase } from "../support/migrationDatabase.ts";

let bare: MigrationDatabase;
let db: Kysely<Database>;

const migrateTo = (target: string | null) => bare.migrateTo(target);

const BEFORE = [
  oldMerchantRow("m-old", "Dup@Example.com", "2026-01-01T00:00:00.000Z"),
  oldMerchantRow("m-newer", "dup@example.com", "2026-01-02T00:00:00.000Z"),
  oldMerchantRow("m-newest", "DUP@EXAMPLE.COM", "2026-01-03T00:00:00.000Z"),
  oldMerchantRow("m-o'quote", "quote@example.com", "2026-01-04T00:00:00.000Z"),
  oldMerchantRow("m-o'quote2", "Quote@example.com", "2026-01-05T00:00:00.000Z"),
  oldMerchantRow("m-single", "single@example.com", "2026-01-01T00:00:00.000Z"),
];

beforeAll(async () => {
  bare = await openMigrationDatabase();
  db = bare.db;
  await migrateTo("006_write_path_indexes");
  await db.insertInto("merchants").values(BEFORE).execute();
  await migrateTo(null);
});
afterAll(async () => {
  await bare?.close();
});

const insert = (id: string, email: string) =>
  db
    .insertInto("merchants")
    .values(oldMerchantRow(id, email, "2026-02-01T00:00:00.000Z"))
    .execute();

describe("007_merchant_email_case on a store with case-only duplicates", () => {
  it("keeps every merchant and every e-mail as it was", async () => {
    const rows = await db.selectFrom("merchants").select(["id", "email"]).orderBy("id").execute();
    expect(rows).toEqual(BEFORE.map(({ id, email }) => ({ id, email })).sort((a, b) => (a.id < b.id ? -1 : 1)));
  });

  it("refuses any new spelling of an existing e-mail, and of one that had duplicates", async () => {
    await expect(insert("n1", "dUp@example.com")).rejects.toThrow(/unique|duplicate/i);
    await expect(insert("n2", "SINGLE@example.com")).rejects.toThrow(/unique|duplicate/i);
    await expect(insert("n3", "QUOTE@example.com")).rejects.toThrow(/unique|duplicate/i);
    await insert("n4", "fresh@example.com");
    await expect(insert("n5", "Fresh@example.com")).rejects.toThrow(/unique|duplicate/i);
  });
});
