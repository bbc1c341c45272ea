// The Python examples of docs/examples/python (standard library only) against the real service: RFC 8785, a signed withdrawal retried after a lost answer, callbacks verified.
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { createServer, request as httpRequest, type Server } from "node:http";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { attemptRows, waitFor } from "../support/callbacks.ts";
import { useTestServer } from "../support/fixture.ts";
import { createInvoice, pay } from "../support/invoices.ts";
import { admin, freePort } from "../support/server.ts";
import { balanceOf, fundedMerchant } from "../support/withdrawals.ts";

const EXAMPLES = "docs/examples/python";
const server = useTestServer();

function python(
  args: string[],
  env: Record<string, string> = {},
  input?: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      "python3",
      args,
      { cwd: EXAMPLES, env: { PATH: process.env.PATH ?? "", ...env }, timeout: 120_000 },
      (error, stdout, stderr) => {
        resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : -1, stdout, stderr });
      },
    );
    if (input !== undefined) child.stdin?.end(input);
  });
}

/**
 * A proxy to the service that loses the answer to the first signed request: it is handled by the
 * service, then the connection is cut before the client reads it, as a network failure would.
 */
async function lossyProxy(target: string): Promise<{ url: string; requestIds: string[]; close(): Promise<void> }> {
  const requestIds: string[] = [];
  const proxy: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const id = req.headers["x-service-request-id"];
      if (typeof id === "string") requestIds.push(id);
      const first = requestIds.length === 1;
      const upstream = httpRequest(`${target}${req.url}`, { method: req.method, headers: req.headers }, (answer) => {
        const body: Buffer[] = [];
        answer.on("data", (chunk: Buffer) => body.push(chunk));
        answer.on("end", () => {
          if (first) return req.socket.destroy();
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          res.end(Buffer.concat(body));
        });
      });
      upstream.end(Buffer.concat(chunks));
    });
  });
  const port = await freePort();
  await new Promise<void>((resolve) => proxy.listen(port, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${port}`,
    requestIds,
    close: () => new Promise((resolve) => proxy.close(() => resolve())),
  };
}

describe("Python examples", () => {
  it("canonicalizes every RFC 8785 vector as the service does", async () => {
    const dir = "test/fixtures/jcs";
    const names = readdirSync(join(dir, "input")).filter((name) => name.endsWith(".json"));
    const script = [
      "import json, sys",
      "from payments import canonical_json",
      "for path in sys.argv[1:]:",
      "    with open(path, 'rb') as f: value = json.loads(f.read().decode('utf-8'))",
      "    sys.stdout.write(json.dumps(canonical_json(value)) + '\\n')",
    ].join("\n");
    const run = await python(["-c", script, ...names.map((name) => join(process.cwd(), dir, "input", name))]);
    expect(run.stderr).toBe("");
    const lines = run.stdout
      .trimEnd()
      .split("\n")
      .map((line) => JSON.parse(line) as string);
    expect(lines).toHaveLength(names.length);
    for (const [i, name] of names.entries()) {
      expect(lines[i], name).toBe(readFileSync(join(dir, "output", name), "utf8"));
    }
  });

  it("signs the worked example of docs/signed-operations.md to its signature", async () => {
    const run = await python([
      "-c",
      "from payments import sign; print(sign('5a1f0c3e9b7d4a2f8c6e1b3d5f7a9c0e2b4d6f8a1c3e5b7d9f0a2c4e6b8d0f1a', '/public/v1/withdrawals/create', '1767225600', '0b1f6a8e-3c2d-4e5f-9a7b-1c2d3e4f5a6b', {'withdrawalMethodId': 7, 'currency': 'USDT', 'amount': '150.25'}))",
    ]);
    expect(run.stdout.trim()).toBe("v1=54cb85330b6b14da507bc54f0430756de2f239efddc207ac36bcedd1267096f9");
  });

  it("withdraws with a signed request, retried under the same request id after a lost answer: debited once", async () => {
    const m = await fundedMerchant(server, "100");
    const proxy = await lossyProxy(server.baseUrl);
    try {
      const run = await python(
        ["withdraw.py", "--currency", "USDT", "--amount", "10", "--method", String(m.methodId)],
        {
          PAYMENTS_BASE_URL: proxy.url,
          PAYMENTS_API_KEY: m.apiKey,
          PAYMENTS_SECRET_KEY: m.secretKey,
        },
      );
      expect(run.stderr).toBe("");
      expect(run.code).toBe(0);
      const answer = JSON.parse(run.stdout);
      expect(proxy.requestIds).toHaveLength(2);
      expect(proxy.requestIds[1]).toBe(proxy.requestIds[0]);
      expect(JSON.stringify(answer)).toContain(proxy.requestIds[0]!);
      expect(await balanceOf(server, m.id)).toBe("90");
    } finally {
      await proxy.close();
    }
  });

  it("prints the problem of a refused withdrawal and exits 1, without retrying it", async () => {
    const m = await fundedMerchant(server, "5");
    const run = await python(["withdraw.py", "--currency", "USDT", "--amount", "50", "--method", String(m.methodId)], {
      PAYMENTS_BASE_URL: server.baseUrl,
      PAYMENTS_API_KEY: m.apiKey,
      PAYMENTS_SECRET_KEY: m.secretKey,
    });
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stderr).status).toBe(400);
    expect(await balanceOf(server, m.id)).toBe("5");
  });

  it("verifies the service's callbacks and refuses a forged one", async () => {
    const m = await fundedMerchant(server, "0");
    const secret = (await admin(server, "GET", `/merchants/${m.id}/callback-secret`)).body.callbackSecret as string;
    const port = await freePort();
    let output = "";
    const child: ChildProcess = spawn("python3", ["callback_server.py", String(port)], {
      cwd: EXAMPLES,
      env: { PATH: process.env.PATH ?? "", PAYMENTS_CALLBACK_SECRET: secret },
    });
    child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    try {
      await waitFor(() => output.includes("listening"), 60_000);
      const url = `http://127.0.0.1:${port}/callbacks`;
      const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 10, callbackUrl: url });
      await pay(server, m.apiKey, invoice.id);
      for (let i = 0; i < 50 && !output.includes("verified invoice.completed"); i++) {
        await server.workers.loops.callbacks!.runOnce();
        if (!output.includes("verified invoice.completed")) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(output).toContain("verified invoice.completed");
      const events = await server.ctx.store.db
        .selectFrom("callback_events")
        .select("id")
        .where("invoice_id", "=", invoice.id)
        .execute();
      const attempts = (await Promise.all(events.map((e) => attemptRows(server, e.id)))).flat();
      expect(attempts.some((a) => a.status_code === 200)).toBe(true);

      const forged = await fetch(url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "webhook-id": "evt_forged",
          "webhook-timestamp": String(Math.floor(Date.now() / 1000)),
          "webhook-signature": `v1,${Buffer.alloc(32).toString("base64")}`,
        },
        body: JSON.stringify({ id: "evt_forged", type: "invoice.completed", data: {} }),
      });
      expect(forged.status).toBe(400);
      expect(output).not.toContain("evt_forged\n");
    } finally {
      child.kill("SIGTERM");
    }
  });
});
