// Requests of the simulation's operator, merchants and payers, through a process's real HTTP app (Fastify's inject: every hook, schema and handler, no socket).
import { createHmac } from "node:crypto";
import { jcs, signingMessage } from "../test/support/signing.ts";
import type { SimProcess } from "./process.ts";

export interface Answer {
  status: number;
  body: any;
}

async function inject(
  process: SimProcess,
  method: string,
  url: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<Answer> {
  const response = await process.app.inject({
    method: method as "GET",
    url,
    headers: body === undefined ? headers : { ...headers, "content-type": "application/json" },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
  const text = response.body;
  const parsed =
    text !== "" && String(response.headers["content-type"] ?? "").includes("json") ? JSON.parse(text) : text;
  return { status: response.statusCode, body: parsed };
}

export function admin(process: SimProcess, method: string, path: string, body?: unknown): Promise<Answer> {
  return inject(process, method, `/admin/v1${path}`, { authorization: "Bearer simulation-admin-token" }, body);
}

export function asMerchant(
  process: SimProcess,
  apiKey: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<Answer> {
  return inject(process, method, path, { "x-api-key": apiKey }, body);
}

/** A signed operation (withdrawal, refund), signed as docs/merchant-api.md says, with the request id given (a retry reuses it). */
export function signed(
  process: SimProcess,
  merchant: { apiKey: string; secretKey: string },
  input: { path: string; requestId: string; body: unknown },
): Promise<Answer> {
  const timestamp = String(Math.floor(Date.now() / 1000));
  const message = signingMessage({ path: input.path, timestamp, requestId: input.requestId, body: jcs(input.body) });
  const signature = `v1=${createHmac("sha256", Buffer.from(merchant.secretKey, "utf8")).update(message).digest("hex")}`;
  return inject(
    process,
    "POST",
    input.path,
    {
      "x-api-key": merchant.apiKey,
      "x-service-timestamp": timestamp,
      "x-service-request-id": input.requestId,
      "x-service-request-signature": signature,
    },
    input.body,
  );
}
