// The CLI's pure parts: secrets hidden at any depth, tables, and forwarded events signed so that verifyCallback and standardwebhooks accept them.
import { randomBytes } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { verifyCallback } from "../../../sdk/src/index.ts";
import { signEvent } from "../../src/commands.ts";
import { HIDDEN_SECRET, hideSecrets, render, table } from "../../src/output.ts";

describe("output", () => {
  it("hides secret fields at any depth unless asked, and leaves everything else", () => {
    const value = { apiKey: "k_1", secretKey: "s3cr3t", nested: [{ callbackSecret: "whsec_x", id: 1 }] };
    const hidden = JSON.stringify(hideSecrets(value, false));
    expect(hidden).not.toContain("s3cr3t");
    expect(hidden).not.toContain("whsec_x");
    expect(hidden).toContain("k_1");
    expect(hideSecrets(value, true)).toEqual(value);
    expect(render(value, { json: false, showSecrets: false }).text).not.toContain("s3cr3t");
  });

  it("leaves hidden secrets out of JSON instead of a placeholder, and says so on the side", () => {
    const value = { id: "m_1", callbackSecret: "whsec_x" };
    const rendered = render(value, { json: true, showSecrets: false });
    expect(JSON.parse(rendered.text)).toEqual({ id: "m_1" });
    expect(rendered.notes).toEqual(["Hidden: the callback secret (add --show-secrets to print it)."]);
    expect(render(value, { json: false, showSecrets: false }).text).toContain(HIDDEN_SECRET);
    expect(JSON.parse(render(value, { json: true, showSecrets: true }).text)).toEqual(value);
  });

  it("prints a secret shown only once plainly, with a warning that it will not be shown again", () => {
    const value = { apiKey: "pk_1", secretKey: "s3cr3t" };
    const rendered = render(value, { json: true, showSecrets: false, showsOnce: ["secretKey"] });
    expect(JSON.parse(rendered.text)).toEqual(value);
    expect(rendered.notes.join(" ")).toMatch(/secret key above is shown only this once.*will not be shown again/);
    const legacy = render(
      { apiKey: "pk_2", secretKey: null },
      { json: true, showSecrets: false, showsOnce: ["secretKey"] },
    );
    expect(legacy.notes).toEqual([]);
  });

  it("prints arrays of objects as aligned columns and objects as field/value lines", () => {
    const rows = table([
      { id: "a", amount: "10" },
      { id: "bbbb", amount: null },
    ]);
    expect(rows.split("\n")).toEqual(["ID    AMOUNT", "a     10", "bbbb  -"]);
    expect(table({ id: "x", status: "pending" }).split("\n")).toEqual(["id      x", "status  pending"]);
    expect(table([])).toBe("(none)");
    const url = `http://127.0.0.1:8080/pay/${"x".repeat(80)}`;
    expect(table({ invoice_url: url })).toContain(url);
    expect(table([{ invoice_url: url }])).not.toContain(url);
  });
});

describe("listen's signature", () => {
  it("signs a forwarded event the Standard Webhooks way, with the merchant's callback secret", () => {
    const secret = `whsec_${randomBytes(24).toString("base64")}`;
    const event = { type: "invoice.completed", id: "evt_1", created_at: "2026-01-01T00:00:00.000Z", data: {} };
    const body = JSON.stringify(event);
    const headers = signEvent(body, event.id, secret);
    expect(verifyCallback(body, headers, secret)).toEqual(event);
    expect(() => new Webhook(secret).verify(body, headers)).not.toThrow();
  });
});
