// Operator API: a merchant's default callback URL (product §15), checked by the rules of an invoice's callbackUrl.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findDefaultCallbackUrl, setDefaultCallbackUrl } from "../../src/store/merchants.ts";
import { nowIso } from "../../src/store/store.ts";
import { admin, createMerchant, expectProblem, startTestServer, type TestServer } from "../support/server.ts";

let sandbox: TestServer;
let live: TestServer;

beforeAll(async () => {
  [sandbox, live] = await Promise.all([startTestServer(), startTestServer({ env: { SERVICE_MODE: "live" } })]);
});
afterAll(async () => {
  await Promise.all([sandbox.close(), live.close()]);
});

describe("GET and PUT /admin/v1/merchants/{id}/default-callback-url", () => {
  it("is null at first, set, read back and cleared", async () => {
    const m = await createMerchant(sandbox);
    expect((await admin(sandbox, "GET", `/merchants/${m.id}/default-callback-url`)).body).toEqual({
      callbackUrl: null,
    });
    const set = await admin(sandbox, "PUT", `/merchants/${m.id}/default-callback-url`, {
      callbackUrl: "http://127.0.0.1:9/hooks",
    });
    expect(set.status).toBe(200);
    expect(set.body).toEqual({ callbackUrl: "http://127.0.0.1:9/hooks" });
    expect((await admin(sandbox, "GET", `/merchants/${m.id}/default-callback-url`)).body).toEqual({
      callbackUrl: "http://127.0.0.1:9/hooks",
    });
    expect(await findDefaultCallbackUrl(sandbox.ctx.store, m.id)).toBe("http://127.0.0.1:9/hooks");
    const cleared = await admin(sandbox, "PUT", `/merchants/${m.id}/default-callback-url`, { callbackUrl: null });
    expect(cleared.body).toEqual({ callbackUrl: null });
    expect(await findDefaultCallbackUrl(sandbox.ctx.store, m.id)).toBeNull();
  });

  it("leaves the merchant object of the contract as it was", async () => {
    const m = await createMerchant(sandbox);
    await admin(sandbox, "PUT", `/merchants/${m.id}/default-callback-url`, { callbackUrl: "https://shop.example/cb" });
    const read = await admin(sandbox, "GET", `/merchants/${m.id}`);
    expect(read.body).not.toHaveProperty("callbackUrl");
    expect(read.body).not.toHaveProperty("defaultCallbackUrl");
  });

  it("refuses in live mode what CreateInvoice refuses there, naming the field", async () => {
    const m = await createMerchant(live);
    for (const url of [
      "http://127.0.0.1/cb",
      "http://10.0.0.7/cb",
      "http://[::ffff:127.0.0.1]/cb",
      "http://0x7f000001/",
    ]) {
      const refused = await admin(live, "PUT", `/merchants/${m.id}/default-callback-url`, { callbackUrl: url });
      expectProblem(refused, 400, "callback_url_not_allowed");
      expect(refused.body.errors[0].pointer).toBe("/callbackUrl");
    }
    expect(await findDefaultCallbackUrl(live.ctx.store, m.id)).toBeNull();
    const ok = await admin(live, "PUT", `/merchants/${m.id}/default-callback-url`, {
      callbackUrl: "https://93.184.215.14/cb",
    });
    expect(ok.status).toBe(200);
  });

  it("refuses what is not an http(s) URL, and unknown fields", async () => {
    const m = await createMerchant(sandbox);
    for (const body of [
      { callbackUrl: "ftp://shop.example/cb" },
      { callbackUrl: "" },
      { callbackUrl: 5 },
      {},
      { callbackUrl: null, x: 1 },
    ]) {
      const refused = await admin(sandbox, "PUT", `/merchants/${m.id}/default-callback-url`, body);
      expect(refused.status).toBe(400);
    }
  });

  it("answers 404 for an unknown merchant", async () => {
    expectProblem(await admin(sandbox, "GET", "/merchants/nope/default-callback-url"), 404, "merchant_not_found");
    expectProblem(
      await admin(sandbox, "PUT", "/merchants/nope/default-callback-url", { callbackUrl: null }),
      404,
      "merchant_not_found",
    );
    expect(await findDefaultCallbackUrl(sandbox.ctx.store, "nope")).toBeUndefined();
    expect(await sandbox.ctx.store.transaction((tx) => setDefaultCallbackUrl(tx, "nope", null, nowIso()))).toBe(false);
  });
});
