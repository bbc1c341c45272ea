// Live invoices on forwarder deposit addresses (product §24) for the flush tests: made through the API, checked to be the forwarder creation gives.
import { expect } from "vitest";
import { factoryAddress, invoiceDepositAddress } from "../../src/domain/forwarders.ts";
import type { Store } from "../../src/store/store.ts";
import { createInvoice } from "./invoices.ts";
import type { TestServer } from "./server.ts";

/**
 * The deposit address of the live invoice `invoiceId`, checked to be the forwarder of the hot wallet
 * `hotAddress` for this invoice, with that wallet's factory recorded on it. `store`: the service's
 * database (a test's own connection to it when the service runs in another process).
 */
export async function forwarderDepositOf(store: Store, invoiceId: string, hotAddress: `0x${string}`) {
  const row = await store.db
    .selectFrom("invoices")
    .select(["deposit_address", "deposit_factory", "deposit_index"])
    .where("id", "=", invoiceId)
    .executeTakeFirstOrThrow();
  const address = invoiceDepositAddress(hotAddress, invoiceId);
  expect(row).toEqual({
    deposit_address: address,
    deposit_factory: factoryAddress(hotAddress).toLowerCase(),
    deposit_index: null,
  });
  return address;
}

/** Creates a live invoice through the API; its deposit address is its forwarder (forwarderDepositOf). */
export async function forwarderInvoice(
  server: TestServer,
  apiKey: string,
  body: Record<string, unknown>,
  hotAddress: `0x${string}`,
): Promise<Record<string, any>> {
  const invoice = await createInvoice(server, apiKey, body);
  const address = await forwarderDepositOf(server.ctx.store, invoice.id as string, hotAddress);
  return { ...invoice, deposit_address: address };
}
