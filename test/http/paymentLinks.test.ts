// Payment links (product §25): the API objects, the page at /l/{id} (a look makes nothing), one invoice per browser session through its Pay button with a 303 to its page, open amounts through the form, and pages with the reason once inactive or suspended.
import { describe, expect, it } from "vitest";
import { useTestServer } from "../support/fixture.ts";
import { expectHealthyLedger, pay } from "../support/invoices.ts";
import { admin, createMerchant, expectProblem, merchant } from "../support/server.ts";

const server = useTestServer();

/** A visit to the payer's link: no redirect followed, the cookie sent when given. */
function visit(path: string, cookie?: string, form?: Record<string, string>) {
  return fetch(`${server.baseUrl}${path}`, {
    method: form ? "POST" : "GET",
    redirect: "manual",
    headers: {
      ...(cookie ? { cookie } : {}),
      ...(form ? { "content-type": "application/x-www-form-urlencoded" } : {}),
    },
    ...(form ? { body: new URLSearchParams(form).toString() } : {}),
  });
}

function sessionCookie(response: Response): string {
  const set = response.headers.get("set-cookie") ?? "";
  expect(set).toMatch(/^pl_session=[0-9a-f]{32}; Path=\/l\/; HttpOnly; SameSite=Lax$/);
  return set.split(";")[0] as string;
}

function invoiceIdOf(response: Response): string {
  expect(response.status).toBe(303);
  const location = new URL(response.headers.get("location") ?? "");
  expect(location.pathname).toMatch(/^\/pay\/[0-9a-f-]{36}$/);
  return location.pathname.slice("/pay/".length);
}

describe("payment links", () => {
  it("creates, reads, lists and refuses bad links", async () => {
    const m = await createMerchant(server);
    const created = await merchant(server, m.apiKey, "POST", "/public/v1/payment-links", {
      currency: "USDT",
      amount: "25",
      description: "T-shirt",
      successUrl: "https://shop.example/thanks",
    });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({
      currency: "USDT",
      amount: "25",
      min_amount: null,
      max_amount: null,
      description: "T-shirt",
      success_url: "https://shop.example/thanks",
      active: true,
    });
    expect(created.body.url).toBe(`${server.config.publicBaseUrl}/l/${created.body.id}`);
    const read = await merchant(server, m.apiKey, "GET", `/public/v1/payment-links/${created.body.id}`);
    expect(read.body).toEqual(created.body);
    const other = await createMerchant(server);
    expectProblem(
      await merchant(server, other.apiKey, "GET", `/public/v1/payment-links/${created.body.id}`),
      404,
      "payment_link_not_found",
    );
    const second = await merchant(server, m.apiKey, "POST", "/public/v1/payment-links", {
      currency: "USDT",
      minAmount: "5",
      maxAmount: "50",
    });
    const list = await merchant(server, m.apiKey, "GET", "/public/v1/payment-links?limit=1");
    expect(list.body).toEqual({ data: [second.body], has_more: true });
    const rest = await merchant(server, m.apiKey, "GET", `/public/v1/payment-links?starting_after=${second.body.id}`);
    expect(rest.body).toEqual({ data: [created.body], has_more: false });

    const bad: [Record<string, unknown>, string][] = [
      [{ currency: "USDT" }, "payment_link_amount_invalid"],
      [{ currency: "USDT", amount: "5", minAmount: "1", maxAmount: "9" }, "payment_link_amount_invalid"],
      [{ currency: "USDT", minAmount: "9", maxAmount: "1" }, "payment_link_amount_invalid"],
      [{ currency: "USDT", minAmount: "1" }, "payment_link_amount_invalid"],
      [{ currency: "NOPE", amount: "5" }, "unknown_currency"],
      [{ currency: "USDT", amount: "-5" }, "amount_not_positive"],
      [{ currency: "USDT", amount: "five" }, "invalid_amount"],
      [{ currency: "USDT", amount: "1.0000001" }, "amount_too_precise"],
    ];
    for (const [body, code] of bad) {
      expectProblem(await merchant(server, m.apiKey, "POST", "/public/v1/payment-links", body), 400, code);
    }
    const count = await server.ctx.store.db
      .selectFrom("payment_links")
      .select("id")
      .where("merchant_id", "=", m.id)
      .execute();
    expect(count).toHaveLength(2);
  });

  it("makes one invoice per browser session for a fixed amount, lists them, and answers 410 once inactive", async () => {
    const m = await createMerchant(server);
    const link = (
      await merchant(server, m.apiKey, "POST", "/public/v1/payment-links", {
        currency: "USDT",
        amount: "25",
        description: "Mug",
      })
    ).body;
    const path = `/l/${link.id}`;
    // A look is the page with the price and the Pay button: no invoice, no session.
    const look = await visit(`${path}?lang=en`);
    expect(look.status).toBe(200);
    expect(look.headers.get("set-cookie")).toBeNull();
    const page = await look.text();
    expect(page).toContain('<span class="amount" data-amount>25 USDT</span>');
    expect(page).toContain(`<form method="post" action="/l/${link.id}?lang=en"`);
    expect(
      await server.ctx.store.db
        .selectFrom("payment_link_invoices")
        .selectAll()
        .where("link_id", "=", link.id)
        .execute(),
    ).toEqual([]);
    const first = await visit(path, undefined, {});
    const cookie = sessionCookie(first);
    const invoiceId = invoiceIdOf(first);
    // The same browser session: the same invoice, whatever the number of visits or presses.
    expect(invoiceIdOf(await visit(path, cookie))).toBe(invoiceId);
    expect(invoiceIdOf(await visit(path, cookie, {}))).toBe(invoiceId);
    // Another browser session: another invoice.
    const other = await visit(path, undefined, {});
    const otherInvoice = invoiceIdOf(other);
    expect(otherInvoice).not.toBe(invoiceId);
    const invoice = await merchant(server, m.apiKey, "GET", `/public/v1/invoices/${invoiceId}`);
    expect(invoice.body).toMatchObject({ currency: "USDT", amount: "25", description: "Mug", status: "pending" });
    const made = await merchant(server, m.apiKey, "GET", `/public/v1/payment-links/${link.id}/invoices`);
    expect(made.body.data.map((i: { id: string }) => i.id).sort()).toEqual([invoiceId, otherInvoice].sort());
    expect((await pay(server, m.apiKey, invoiceId, {})).status).toBe(200);
    await expectHealthyLedger(server);
    // Once the session's invoice is paid, the same browser sees the page again and may pay once more.
    const again = await visit(path, cookie);
    expect(again.status).toBe(200);
    expect(await again.text()).toContain(`<form method="post" action="/l/${link.id}`);
    const second = await visit(path, cookie, {});
    const secondInvoice = invoiceIdOf(second);
    expect([invoiceId, otherInvoice]).not.toContain(secondInvoice);
    expect(invoiceIdOf(await visit(path, sessionCookie(second)))).toBe(secondInvoice);

    const off = await merchant(server, m.apiKey, "PATCH", `/public/v1/payment-links/${link.id}`, { active: false });
    expect(off.body.active).toBe(false);
    const gone = await visit(path, cookie);
    expect(gone.status).toBe(410);
    expect(await gone.text()).toContain("no longer active");
    expect((await visit(path)).status).toBe(410);
    expect((await visit("/l/00000000-0000-0000-0000-000000000000")).status).toBe(404);
  });

  it("lets the payer choose an open amount within the bounds through the form", async () => {
    const m = await createMerchant(server);
    const link = (
      await merchant(server, m.apiKey, "POST", "/public/v1/payment-links", {
        currency: "USDT",
        minAmount: "5",
        maxAmount: "50",
      })
    ).body;
    const path = `/l/${link.id}?lang=en`;
    const form = await visit(path);
    expect(form.status).toBe(200);
    expect(form.headers.get("set-cookie")).toBeNull();
    const html = await form.text();
    expect(html).toContain('name="amount"');
    expect(html).toContain("Between 5 and 50 USDT.");
    expect(form.headers.get("content-security-policy")).toContain("form-action 'self'");

    // A refused amount makes no invoice and no session.
    const first = await visit(path, undefined, { amount: "1" });
    expect(first.status).toBe(400);
    expect(first.headers.get("set-cookie")).toBeNull();
    for (const amount of ["4.99", "50.01", "abc", ""]) {
      const refused = await visit(path, undefined, { amount });
      expect(refused.status).toBe(400);
      const text = await refused.text();
      expect(text).toContain("Enter an amount between 5 and 50 USDT.");
      expect(text).toContain('aria-invalid="true"');
    }
    expect(
      await server.ctx.store.db
        .selectFrom("payment_link_invoices")
        .select("invoice_id")
        .where("link_id", "=", link.id)
        .execute(),
    ).toHaveLength(0);

    const chosen = await visit(path, undefined, { amount: "12.5" });
    const cookie = sessionCookie(chosen);
    const invoiceId = invoiceIdOf(chosen);
    const invoice = await merchant(server, m.apiKey, "GET", `/public/v1/invoices/${invoiceId}`);
    expect(invoice.body.amount).toBe("12.5");
    // Back on the link in the same session: its invoice, not the form again.
    expect(invoiceIdOf(await visit(path, cookie))).toBe(invoiceId);
    expect(invoiceIdOf(await visit(path, cookie, { amount: "30" }))).toBe(invoiceId);
    await expectHealthyLedger(server);
  });

  it("answers a page with the reason for an inactive link or a suspended merchant, a problem to a JSON client", async () => {
    const m = await createMerchant(server, { merchantName: "Northwind Coffee" });
    const link = (
      await merchant(server, m.apiKey, "POST", "/public/v1/payment-links", { currency: "USDT", amount: "9" })
    ).body;
    const page = (accept: string, lang = "en") =>
      fetch(`${server.baseUrl}/l/${link.id}?lang=${lang}`, { redirect: "manual", headers: { accept } });
    const html = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
    const shown = await page(html, "fr");
    const text = await shown.text();
    expect(text).toContain("<h1>Payer Northwind Coffee</h1>");
    expect(text).toContain('<span class="name">Northwind Coffee</span>');
    expect(text).toContain(`<a lang="de" hreflang="de" href="/l/${link.id}?lang=de">`);

    expect((await admin(server, "PATCH", `/merchants/${m.id}`, { status: "suspended" })).status).toBe(200);
    const suspended = await page(html);
    expect(suspended.status).toBe(400);
    expect(suspended.headers.get("content-type")).toMatch(/^text\/html/);
    expect(await suspended.text()).toContain("This payment link cannot take payments right now.");
    const pressed = await visit(`/l/${link.id}`, undefined, {});
    expect(pressed.status).toBe(400);
    expect(await pressed.text()).toContain("The merchant’s account is on hold.");
    const json = await page("application/json");
    expect(json.status).toBe(400);
    expect(((await json.json()) as { code: string }).code).toBe("merchant_not_active");

    expect((await admin(server, "PATCH", `/merchants/${m.id}`, { status: "active" })).status).toBe(200);
    await merchant(server, m.apiKey, "PATCH", `/public/v1/payment-links/${link.id}`, { active: false });
    const inactive = await page(html, "de");
    expect(inactive.status).toBe(410);
    expect(inactive.headers.get("content-type")).toMatch(/^text\/html/);
    expect(await inactive.text()).toContain("Dieser Zahlungslink ist nicht mehr aktiv.");
    expect(((await (await page("application/problem+json")).json()) as { code: string }).code).toBe(
      "payment_link_inactive",
    );
    expect(
      await server.ctx.store.db
        .selectFrom("payment_link_invoices")
        .selectAll()
        .where("link_id", "=", link.id)
        .execute(),
    ).toEqual([]);
  });
});
