// Live invoices with forwarder deposit addresses (product §24) for tests, until invoice creation assigns them itself (the lead replaces this helper's body at merge).
import { factoryAddress, invoiceDepositAddress } from "../../src/domain/forwarders.ts";
import { createInvoice } from "./invoices.ts";
import type { TestServer } from "./server.ts";

/**
 * Creates a live invoice through the API, then makes its deposit address the forwarder of the hot
 * wallet `hotAddress` for this invoice (deposit_factory: that wallet's factory), as creation will.
 */
export async function forwarderInvoice(
  server: TestServer,
  apiKey: string,
  body: Record<string, unknown>,
  hotAddress: `0x${string}`,
): Promise<Record<string, any>> {
  const invoice = await createInvoice(server, apiKey, body);
  const address = invoiceDepositAddress(hotAddress, invoice.id as string);
  await server.ctx.store.transaction((tx) =>
    tx.db
      .updateTable("invoices")
      .set({ deposit_address: address, deposit_factory: factoryAddress(hotAddress).toLowerCase() })
      .where("id", "=", invoice.id as string)
      .execute(),
  );
  return { ...invoice, deposit_address: address };
}
