// Live invoices with forwarder deposit addresses (product §24) for tests, until invoice creation assigns them itself (the lead replaces this helper's body at merge).
import { factoryAddress, invoiceDepositAddress } from "../../src/domain/forwarders.ts";
import type { Store } from "../../src/store/store.ts";
import { createInvoice } from "./invoices.ts";
import type { TestServer } from "./server.ts";

/**
 * Makes the deposit address of the live invoice `invoiceId` (created through the API) the forwarder
 * of the hot wallet `hotAddress` for this invoice, its deposit_factory that wallet's factory, as
 * creation will. Answers the address. `store`: the service's database (a test's own connection to
 * it when the service runs in another process).
 */
export async function makeForwarderInvoice(store: Store, invoiceId: string, hotAddress: `0x${string}`) {
  const address = invoiceDepositAddress(hotAddress, invoiceId);
  await store.transaction((tx) =>
    tx.db
      .updateTable("invoices")
      .set({ deposit_address: address, deposit_factory: factoryAddress(hotAddress).toLowerCase() })
      .where("id", "=", invoiceId)
      .execute(),
  );
  return address;
}

/** Creates a live invoice through the API with a forwarder deposit address (see makeForwarderInvoice). */
export async function forwarderInvoice(
  server: TestServer,
  apiKey: string,
  body: Record<string, unknown>,
  hotAddress: `0x${string}`,
): Promise<Record<string, any>> {
  const invoice = await createInvoice(server, apiKey, body);
  const address = await makeForwarderInvoice(server.ctx.store, invoice.id as string, hotAddress);
  return { ...invoice, deposit_address: address };
}
