// Merchant fields an operator sets: logo and website are http(s) URLs only; e-mails are unique whatever their case.
import { describe, expect, it } from "vitest";
import { useTestServer } from "../support/fixture.ts";
import { admin, expectProblem } from "../support/server.ts";

const server = useTestServer();

let n = 0;
const email = () => `fields-${++n}-${Date.now()}@example.com`;

describe("logo and website", () => {
  const refused = [
    "javascript:alert(1)",
    "JavaScript:alert(document.cookie)",
    " javascript:alert(1)",
    "data:image/png;base64,iVBORw0KGgo=",
    "data:text/html,<script>alert(1)</script>",
    "vbscript:msgbox(1)",
    "file:///etc/passwd",
    "ftp://shop.example/logo.png",
    "//shop.example/logo.png",
    "/logo.png",
    "https://",
    "https://shop.example/logo .png",
    "https://shop.example/\nlogo.png",
  ];

  it.each(refused)("refuses %j as a logo or a website, on create and on update", async (value) => {
    for (const field of ["logo", "website"]) {
      const created = await admin(server, "POST", "/merchants", { email: email(), [field]: value });
      expectProblem(created, 400, "validation_failed");
      expect(created.body.errors.some((e: { pointer: string }) => e.pointer === `/${field}`)).toBe(true);
    }
    const m = await admin(server, "POST", "/merchants", { email: email() });
    for (const field of ["logo", "website"]) {
      expectProblem(
        await admin(server, "PATCH", `/merchants/${m.body.id}`, { [field]: value }),
        400,
        "validation_failed",
      );
    }
    const unchanged = await admin(server, "GET", `/merchants/${m.body.id}`);
    expect([unchanged.body.logo, unchanged.body.website]).toEqual([null, null]);
  });

  it("accepts http(s) URLs and null", async () => {
    const created = await admin(server, "POST", "/merchants", {
      email: email(),
      logo: "https://cdn.shop.example/brand/logo.svg?v=3",
      website: "http://shop.example",
    });
    expect(created.status).toBe(200);
    expect(created.body.logo).toBe("https://cdn.shop.example/brand/logo.svg?v=3");
    const cleared = await admin(server, "PATCH", `/merchants/${created.body.id}`, { logo: null });
    expect(cleared.body.logo).toBeNull();
  });
});

describe("e-mail uniqueness", () => {
  it("refuses an e-mail that differs from another merchant's only by case, on create and on update", async () => {
    const first = await admin(server, "POST", "/merchants", { email: "Case.Shop@Example.com" });
    expect(first.status).toBe(200);
    expectProblem(await admin(server, "POST", "/merchants", { email: "case.shop@example.com" }), 409, "email_taken");
    expectProblem(await admin(server, "POST", "/merchants", { email: "CASE.SHOP@EXAMPLE.COM" }), 409, "email_taken");
    const other = await admin(server, "POST", "/merchants", { email: "other.shop@example.com" });
    expectProblem(
      await admin(server, "PATCH", `/merchants/${other.body.id}`, { email: "case.SHOP@example.com" }),
      409,
      "email_taken",
    );
    // A merchant may change the case of its own e-mail.
    const own = await admin(server, "PATCH", `/merchants/${first.body.id}`, { email: "case.shop@example.com" });
    expect(own.status).toBe(200);
    expect(own.body.email).toBe("case.shop@example.com");
  });

  it("lets exactly one of concurrent creations win when the e-mails differ only by case", async () => {
    const spellings = [
      "race@example.com",
      "Race@example.com",
      "RACE@example.com",
      "race@Example.com",
      "rAce@example.com",
    ];
    const answers = await Promise.all(spellings.map((e) => admin(server, "POST", "/merchants", { email: e })));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    for (const answer of answers.filter((a) => a.status !== 200)) expectProblem(answer, 409, "email_taken");
  });
});
