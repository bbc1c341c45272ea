// Use cases of customers' deposit addresses (product §30): the merchant creates (idempotently, in parallel too), lists, reads and deactivates them, and lists their deposits.
import type { CallbackUrlError } from "../domain/callbackUrl.ts";
import type { Currency } from "../domain/currencies.ts";
import { symbolOf } from "../domain/currencies.ts";
import {
  checkCustomerReference,
  customerDepositAddress,
  customerForwarderId,
  type DepositObject,
  type DepositRefundObject,
} from "../domain/depositAddresses.ts";
import { factoryAddress } from "../domain/forwarders.ts";
import { newRowId } from "../domain/ids.ts";
import { paymentRail } from "../domain/paymentRails.ts";
import { ok, type Result } from "../domain/result.ts";
import { listCurrencies, resolveCurrencyName } from "../store/currencies.ts";
import {
  type DepositAddressRow,
  type DepositListFilter,
  depositObject,
  findDeposit,
  findDepositAddress,
  findDepositAddressById,
  insertDepositAddress,
  listDepositAddresses,
  listDeposits,
  setDepositAddressActive,
} from "../store/depositAddresses.ts";
import type { ListError, Page, PageWindow } from "../store/keyset.ts";
import { latestDepositRefunds } from "../store/refunds.ts";
import { nowIso, type Tx } from "../store/store.ts";
import { callbackUrlRefusal } from "./callbackUrlInput.ts";
import type { ServiceContext } from "./context.ts";
import { currentRails } from "./rails.ts";
import { type Outcome, refuse, withRefusals } from "./refusal.ts";

export interface DepositAddressInput {
  customer: string;
  currency: string;
  callbackUrl?: string | undefined;
}

/** A customer's address as the API answers it: `networks` are those its ticker can be paid on now. */
export interface DepositAddressObject {
  id: string;
  customer: string;
  currency: string;
  address: string;
  networks: string[];
  active: boolean;
  callbackUrl: string | null;
  createdAt: string;
  updatedAt: string;
}

export type DepositAddressRefusal = "invalid_customer" | "unknown_currency" | "currency_unavailable" | CallbackUrlError;

/** A ticker's entries that take live crypto now (configured, the factory deployed). */
export async function liveEntries(ctx: ServiceContext, entries: readonly Currency[]): Promise<Currency[]> {
  const rails = await currentRails(ctx);
  return entries.filter((e) => {
    const rail = paymentRail(e, rails);
    return rail.ok && rail.value === "evm";
  });
}

/** The networks of a ticker's entries that take live crypto now. */
async function liveNetworks(ctx: ServiceContext, entries: readonly Currency[]): Promise<string[]> {
  return [...new Set((await liveEntries(ctx, entries)).map((e) => e.network))];
}

async function addressObject(ctx: ServiceContext, row: DepositAddressRow): Promise<DepositAddressObject> {
  const entries = (await listCurrencies(ctx.store)).filter((c) => symbolOf(c) === row.currency);
  return {
    id: row.id,
    customer: row.customer,
    currency: row.currency,
    address: row.address,
    networks: await liveNetworks(ctx, entries),
    active: row.active === 1,
    callbackUrl: row.callback_url,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/**
 * The customer's address in the currency's ticker: made on the first request, the same one after
 * (the unique key makes racing requests agree: insert or nothing, then read). Only a currency with
 * a network taking live crypto has one: the address is a forwarder of the hot wallet's factory.
 */
export async function createDepositAddress(
  ctx: ServiceContext,
  merchantId: string,
  input: DepositAddressInput,
  /** Runs in the transaction that made the address (not when it was there already): the dashboard's audit. */
  alongside?: (tx: Tx, row: DepositAddressRow) => Promise<unknown>,
): Promise<Outcome<DepositAddressObject, DepositAddressRefusal>> {
  if (input.callbackUrl !== undefined) {
    const refused = await callbackUrlRefusal(input.callbackUrl, ctx.config.serviceMode, "/callbackUrl");
    if (refused !== null) return { ok: false, refusal: refused };
  }
  return withRefusals(async () => {
    const customer = checkCustomerReference(input.customer);
    if (!customer.ok) return refuse("invalid_customer", `${customer.detail}.`, "/customer");
    const named = await resolveCurrencyName(ctx.store, input.currency);
    if (named === null)
      return refuse("unknown_currency", `${input.currency} is not a currency of the catalog.`, "/currency");
    const ticker = symbolOf(named.primary);
    const wallet = ctx.wallet;
    if (wallet === null || (await liveNetworks(ctx, named.entries)).length === 0) {
      return refuse(
        "currency_unavailable",
        `${ticker} cannot be deposited on any network of this service now.`,
        "/currency",
      );
    }
    const owner = wallet.hotAddress;
    const now = nowIso();
    const id = newRowId();
    const row = await ctx.store.transaction(async (tx) => {
      const stored = await insertDepositAddress(tx, {
        id,
        merchant_id: merchantId,
        customer: customer.value,
        currency: ticker,
        address: customerDepositAddress(owner, merchantId, ticker, customer.value),
        forwarder_id: customerForwarderId(merchantId, ticker, customer.value),
        factory: factoryAddress(owner).toLowerCase(),
        callback_url: input.callbackUrl ?? null,
        active: 1,
        created_at: now,
        updated_at: now,
      });
      if (stored.id === id) await alongside?.(tx, stored);
      return stored;
    });
    return addressObject(ctx, row);
  });
}

export async function getDepositAddress(ctx: ServiceContext, merchantId: string, id: string) {
  const row = await findDepositAddress(ctx.store, merchantId, id);
  return row === null ? null : addressObject(ctx, row);
}

export async function listCustomerAddresses(
  ctx: ServiceContext,
  merchantId: string,
  filter: PageWindow & { customer?: string | undefined },
): Promise<Result<Page<DepositAddressObject>, ListError>> {
  const page = await listDepositAddresses(ctx.store, merchantId, filter);
  if (!page.ok) return page;
  const data = [];
  for (const row of page.value.data) data.push(await addressObject(ctx, row));
  return ok({ data, hasMore: page.value.hasMore });
}

/** Deactivates (or reactivates) an address: transfers confirmed while inactive are held for the merchant. */
export async function setAddressActive(
  ctx: ServiceContext,
  merchantId: string,
  id: string,
  active: boolean,
  /** Runs in the same transaction once the address changed: the dashboard's audit. */
  alongside?: (tx: Tx) => Promise<unknown>,
) {
  const row = await ctx.store.transaction(async (tx) => {
    const changed = await setDepositAddressActive(tx, merchantId, id, active, nowIso());
    if (changed !== null) await alongside?.(tx);
    return changed;
  });
  return row === null ? null : addressObject(ctx, row);
}

async function objectOf(
  tx: Tx,
  row: Parameters<typeof depositObject>[0],
  decimalsOf: Map<string, number>,
  refunds: Map<string, DepositRefundObject>,
) {
  const address = await findDepositAddressById(tx, row.deposit_address_id);
  if (address === null) throw new Error(`deposit ${row.id} has its address`);
  return depositObject(row, address, decimalsOf.get(row.currency) ?? 0, refunds.get(row.id) ?? null);
}

async function decimals(tx: Tx): Promise<Map<string, number>> {
  return new Map((await listCurrencies(tx)).map((c) => [c.ticker, c.decimals]));
}

export async function getCustomerDeposit(ctx: ServiceContext, merchantId: string, id: string) {
  const row = await findDeposit(ctx.store, merchantId, id);
  if (row === null) return null;
  return objectOf(ctx.store, row, await decimals(ctx.store), await latestDepositRefunds(ctx.store, [row.id]));
}

export async function listCustomerDeposits(
  ctx: ServiceContext,
  merchantId: string,
  filter: DepositListFilter,
): Promise<Result<Page<DepositObject>, ListError>> {
  const page = await listDeposits(ctx.store, merchantId, filter);
  if (!page.ok) return page;
  const places = await decimals(ctx.store);
  // One read for the page's refunds rather than one per deposit.
  const refunds = await latestDepositRefunds(
    ctx.store,
    page.value.data.map((row) => row.id),
  );
  const data = [];
  for (const row of page.value.data) data.push(await objectOf(ctx.store, row, places, refunds));
  return ok({ data, hasMore: page.value.hasMore });
}
