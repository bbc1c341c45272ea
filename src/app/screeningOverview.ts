// What GET /admin/v1/screening shows (product §21): the list's size and age, the provider's availability, the payments and customers' deposits waiting. Reads only: no address is screened here.
import { screeningOffWarning } from "../domain/screening.ts";
import { depositScreeningCounts } from "../store/depositAddresses.ts";
import { screeningBacklog } from "../store/screening.ts";
import type { ServiceContext } from "./context.ts";

/** What GET /admin/v1/screening and /metrics show: the list, the provider, the payments waiting. */
export async function screeningOverview(ctx: ServiceContext) {
  await ctx.screening.list?.refresh();
  const backlog = await screeningBacklog(ctx.store);
  const deposits = await depositScreeningCounts(ctx.store);
  return {
    warning: screeningOffWarning(ctx.config.serviceMode, ctx.screening),
    list: ctx.screening.list?.status() ?? null,
    provider: ctx.screening.provider?.status() ?? null,
    waitingPayments: backlog.waiting,
    oldestWaitingSince: backlog.oldest,
    waitingDeposits: deposits.waiting,
    depositsInAmlCheck: deposits.amlCheck,
  };
}
