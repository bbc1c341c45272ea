// The payer's page API: /pay/{id}/status as product §13 says, live events, QR code, languages, sandbox buttons, headers.

import { beforeAll, describe, expect, it } from "vitest";
import { insertInvoice } from "../support/callbacks.ts";
import { useTestServer } from "../support/fixture.ts";
import { createInvoice, pay } from "../support/invoices.ts";
import { createMerchant, startTestServer } from "../support/server.ts";

let m: { id: string; apiKey: string };

const server = useTestServer();
beforeAll(async () => {
  m = await createMerchant(server, { merchantName: "Café <Zoé>" });
});

const STATUS_KEYS = [
  "address",
  "amountDue",
  "currency",
  "expiresAt",
  "finalAmount",
  "id",
  "merchant",
  "network",
  // Every network the invoice is payable on (product §23).
  "networks",
  "paidAmount",
  "paymentUri",
  "payments",
  "redirectUrl",
  "status",
].sort();

async function status(id: string) {
  const response = await fetch(`${server.baseUrl}/pay/${id}/status`);
  return { response, body: (await response.json()) as Record<string, any> };
}

/** Reads server-sent events until `until` says stop or the stream ends; bounded by the events and a timeout. */
async function readEvents(url: string, until: (events: any[]) => boolean, act?: () => Promise<void>) {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), 10_000);
  const response = await fetch(url, { signal: controller.signal });
  const events: any[] = [];
  let ended = false;
  try {
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    let acted = false;
    for (let i = 0; i < 100; i += 1) {
      const chunk = await reader.read();
      if (chunk.done) {
        ended = true;
        break;
      }
      buffer += chunk.value;
      let cut = buffer.indexOf("\n\n");
      while (cut >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const data = block.split("\n").find((l) => l.startsWith("data: "));
        if (block.includes("event: status") && data) events.push(JSON.parse(data.slice(6)));
        cut = buffer.indexOf("\n\n");
      }
      if (events.length > 0 && act && !acted) {
        acted = true;
        await act();
      }
      if (until(events)) break;
    }
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
  return { response, events, ended };
}

describe("GET /pay/{id}/status", () => {
  it("answers the fields of product §13 for a token invoice, with an EIP-681 transfer URI", async () => {
    const invoice = await createInvoice(server, m.apiKey, {
      currency: "USDT",
      amount: "25.5",
      success_url: "https://shop.example/ok",
      return_url: "https://shop.example/back",
    });
    const { response, body } = await status(invoice.id);
    expect(response.status).toBe(200);
    expect(response.headers.get("cache-control")).toBe("no-store");
    expect(Object.keys(body).sort()).toEqual(STATUS_KEYS);
    expect(body).toMatchObject({
      id: invoice.id,
      status: "pending",
      currency: "USDT",
      network: "ethereum",
      amountDue: "25.5",
      finalAmount: "25.5",
      paidAmount: "0",
      expiresAt: invoice.expires_at,
      payments: [],
      merchant: { name: "Café <Zoé>", logo: null },
      redirectUrl: "https://shop.example/back",
    });
    expect(body.address).toMatch(/^0x[0-9a-f]{40}$/);
    expect(body.paymentUri).toBe(
      `ethereum:0xdAC17F958D2ee523a2206206994597C13D831ec7@11155111/transfer?address=${body.address}&uint256=25500000`,
    );
    // A currency on one network offers that one (product §23).
    expect(body.networks).toEqual([
      {
        name: "ethereum",
        chainId: 11155111,
        internalTicker: "USDT_ERC20",
        contractAddress: "0xdAC17F958D2ee523a2206206994597C13D831ec7",
        paymentUri: body.paymentUri,
        // The sandbox signs nothing: paying with a wallet is live (product §28).
        authorization: null,
      },
    ]);
  });

  it("follows payments: processing with confirmations, then completed with the success URL", async () => {
    const invoice = await createInvoice(server, m.apiKey, {
      currency: "ETH",
      amount: "0.3",
      success_url: "https://shop.example/ok",
    });
    const first = await status(invoice.id);
    expect(first.body.paymentUri).toBe(`ethereum:${first.body.address}@11155111?value=300000000000000000`);
    await pay(server, m.apiKey, invoice.id, { amount: "0.1", confirmed: false, txId: "0xaa" });
    const seen = await status(invoice.id);
    expect(seen.body.status).toBe("processing");
    expect(seen.body.amountDue).toBe("0.2");
    expect(seen.body.paymentUri).toBe(`ethereum:${first.body.address}@11155111?value=200000000000000000`);
    expect(seen.body.payments).toEqual([
      { txId: "0xaa", amount: "0.1", confirmations: 0, requiredConfirmations: 12, state: "confirming" },
    ]);
    await pay(server, m.apiKey, invoice.id, { amount: "0.2" });
    await pay(server, m.apiKey, invoice.id, { txId: "0xaa", confirmed: true });
    const done = await status(invoice.id);
    expect(done.body.status).toBe("completed");
    expect(done.body.paymentUri).toBeNull();
    expect(done.body.payments.map((p: any) => [p.confirmations, p.state])).toEqual([
      [12, "confirmed"],
      [12, "confirmed"],
    ]);
    expect(done.body.redirectUrl).toBe("https://shop.example/ok");
  });

  it("has no address nor URI for a fiat invoice", async () => {
    const invoice = await createInvoice(server, m.apiKey, { currency: "EUR", amount: 12 });
    const { body } = await status(invoice.id);
    expect(body.address).toBeNull();
    expect(body.paymentUri).toBeNull();
    expect(body.network).toBe("card");
  });

  it("is a 404 problem for an unknown id, and says nothing of the merchant's account", async () => {
    const { response, body } = await status("00000000-0000-4000-8000-000000000000");
    expect(response.status).toBe(404);
    expect(body.code).toBe("invoice_not_found");
    const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 5 });
    const text = JSON.stringify((await status(invoice.id)).body);
    expect(text).not.toContain(m.id);
    expect(text).not.toContain(m.apiKey);
  });
});

describe("the page's headers, languages and assets", () => {
  it("sends a strict CSP and is not framable", async () => {
    const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 5 });
    const response = await fetch(invoice.invoice_url);
    const csp = response.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("style-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain("unsafe-inline");
    expect(response.headers.get("x-frame-options")).toBe("DENY");
    expect(response.headers.get("referrer-policy")).toBe("no-referrer");
    const html = await response.text();
    // No inline script or style, nothing from another origin.
    expect(html).not.toMatch(/<script(?![^>]*\bsrc="\/pay\/assets\/)/);
    expect(html).not.toMatch(/<style|\sstyle=/);
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\/(?!shop\.example)/);
  });

  it("chooses the language from Accept-Language, ?lang= overriding it, and formats amounts for it", async () => {
    const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: "1234.5" });
    const get = async (query: string, accept?: string) => {
      const response = await fetch(
        `${invoice.invoice_url}${query}`,
        accept ? { headers: { "accept-language": accept } } : {},
      );
      return { lang: response.headers.get("content-language"), html: await response.text() };
    };
    const english = await get("");
    expect(english.lang).toBe("en");
    expect(english.html).toContain("1,234.5 USDT");
    const german = await get("", "de-CH, fr;q=0.8");
    expect(german.lang).toBe("de");
    expect(german.html).toContain('<html lang="de">');
    expect(german.html).toContain("Wartet auf Zahlung");
    expect(german.html).toContain("1.234,5 USDT");
    const spanish = await get("?lang=es", "de");
    expect(spanish.html).toContain("Esperando el pago");
    const unknown = await get("?lang=xx", "it, es;q=0.5");
    expect(unknown.lang).toBe("es");
  });

  it("draws the QR code of the payment URI as a cacheable SVG", async () => {
    const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 5 });
    const html = await (await fetch(invoice.invoice_url)).text();
    const src = /<img class="qr"[^>]*src="([^"]+)"/.exec(html)?.[1];
    expect(src).toMatch(/^\/pay\/[^/]+\/qr\.svg\?v=[0-9a-f]{16}$/);
    const response = await fetch(`${server.baseUrl}${src}`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^image\/svg\+xml/);
    expect(response.headers.get("cache-control")).toContain("immutable");
    expect(await response.text()).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    const stale = await fetch(`${server.baseUrl}/pay/${invoice.id}/qr.svg?v=0000`);
    expect(stale.headers.get("cache-control")).toBe("no-store");
  });
});

describe("sandbox buttons", () => {
  it("pay in full, underpay and flag for AML through the sandbox API's rules", async () => {
    const full = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 10 });
    const post = (id: string, action: string) =>
      fetch(`${server.baseUrl}/pay/${id}/sandbox/${action}?lang=fr`, { method: "POST", redirect: "manual" });
    const paid = await post(full.id, "pay");
    expect(paid.status).toBe(303);
    expect(paid.headers.get("location")).toBe(`/pay/${full.id}?lang=fr`);
    expect((await status(full.id)).body.status).toBe("completed");

    const under = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 10 });
    await post(under.id, "underpay");
    expect((await status(under.id)).body).toMatchObject({ status: "processing", paidAmount: "5", amountDue: "5" });

    const flagged = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 10 });
    await post(flagged.id, "aml");
    expect((await status(flagged.id)).body.status).toBe("aml_check");
    expect((await status(flagged.id)).body.payments[0].state).toBe("under_review");
    await post(flagged.id, "block");
    expect((await status(flagged.id)).body.status).toBe("aml_block");

    // A settled invoice takes no more: the sandbox API's problem, nothing changes.
    const again = await post(full.id, "pay");
    expect(again.status).toBe(409);
    expect(((await again.json()) as { code: string }).code).toBe("invoice_not_payable");
    const unknown = await post("00000000-0000-4000-8000-000000000000", "pay");
    expect(unknown.status).toBe(404);
  });

  it("take the page's form post without JavaScript (urlencoded) and send the payer back to the page", async () => {
    const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 10 });
    const html = await (await fetch(invoice.invoice_url)).text();
    // The form as the page renders it: what a browser posts without the page script.
    const form = /<form method="post" enctype="([^"]+)" action="([^"]+\/sandbox\/underpay[^"]*)"/.exec(html);
    expect(form?.[1]).toBe("application/x-www-form-urlencoded");
    const action = (form?.[2] ?? "").replaceAll("&amp;", "&");
    const answer = await fetch(`${server.baseUrl}${action}`, {
      method: "POST",
      redirect: "manual",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        "sec-fetch-site": "same-origin",
        origin: "null",
      },
      body: "",
    });
    expect(answer.status).toBe(303);
    expect(answer.headers.get("location")).toBe(`/pay/${invoice.id}?lang=en`);
    expect((await status(invoice.id)).body).toMatchObject({ status: "processing", paidAmount: "5", amountDue: "5" });
  });

  it("refuse a post from another site and other content types, changing nothing", async () => {
    const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 10 });
    const post = (headers: Record<string, string>, body = "") =>
      fetch(`${server.baseUrl}/pay/${invoice.id}/sandbox/pay`, { method: "POST", redirect: "manual", headers, body });
    const form = { "content-type": "application/x-www-form-urlencoded" };
    for (const headers of [
      { ...form, "sec-fetch-site": "cross-site" },
      { ...form, "sec-fetch-site": "same-site" },
      { ...form, origin: "https://evil.example" },
    ]) {
      const refused = await post(headers);
      expect(refused.status).toBe(403);
      expect(((await refused.json()) as { code: string }).code).toBe("cross_site_request");
    }
    const plain = await post({ "content-type": "text/plain" });
    expect(plain.status).toBe(415);
    expect((await status(invoice.id)).body).toMatchObject({ status: "pending", paidAmount: "0" });
  });

  it("do not exist in live mode", async () => {
    const live = await startTestServer({ env: { SERVICE_MODE: "live" } });
    try {
      const lm = await createMerchant(live, {});
      // Live mode takes no crypto invoice without a network (the gate): the invoice is written directly.
      const invoice = await insertInvoice(live, lm.id, null);
      const html = await (await fetch(`${live.baseUrl}/pay/${invoice.id}`)).text();
      expect(html).not.toContain("sandbox");
      const response = await fetch(`${live.baseUrl}/pay/${invoice.id}/sandbox/pay`, { method: "POST" });
      expect(response.status).toBe(404);
      expect((await fetch(`${live.baseUrl}/pay/${invoice.id}/status`)).status).toBe(200);
    } finally {
      await live.close();
    }
  });
});

describe("GET /pay/{id}/events", () => {
  it("sends the status at once, then each change, and ends on a final state", async () => {
    const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 10 });
    const { response, events, ended } = await readEvents(
      `${server.baseUrl}/pay/${invoice.id}/events`,
      () => false,
      async () => {
        await pay(server, m.apiKey, invoice.id, {});
      },
    );
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(events[0].status).toBe("pending");
    expect(events.at(-1).status).toBe("completed");
    expect(ended).toBe(true);
  });

  it("bounds the streams open on one invoice", async () => {
    const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 10 });
    const controllers: AbortController[] = [];
    try {
      for (let i = 0; i < 4; i += 1) {
        const c = new AbortController();
        controllers.push(c);
        expect((await fetch(`${server.baseUrl}/pay/${invoice.id}/events`, { signal: c.signal })).status).toBe(200);
      }
      const refused = await fetch(`${server.baseUrl}/pay/${invoice.id}/events`);
      expect(refused.status).toBe(429);
      expect(((await refused.json()) as { code: string }).code).toBe("too_many_streams");
    } finally {
      for (const c of controllers) c.abort();
    }
    expect((await fetch(`${server.baseUrl}/pay/unknown-id/events`)).status).toBe(404);
  });
});
