// A remote signer for tests: an HTTP proxy in front of a local node, whose unlocked accounts answer eth_signTransaction, that can also misbehave on demand (sign with another key, tamper, hang, answer garbage).
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { Hex } from "viem";

/**
 * How the proxy answers eth_signTransaction. `honest`: the node's answer as it is; `wrapped`: as
 * `{ raw, tx }` (geth's shape); `other_address`: signed by `other` instead; `tampered`: the value
 * raised by one wei before the node signs; `hang`: never answers; `garbage`: a result that is no
 * transaction; `huge`: an answer far past any bound; `gateway_down`: a load balancer's 503 page for
 * a signer behind it that is down.
 */
export type SignerMode =
  | "honest"
  | "wrapped"
  | "other_address"
  | "tampered"
  | "hang"
  | "garbage"
  | "huge"
  | "gateway_down";

export interface SignerProxy {
  url: string;
  mode: SignerMode;
  /** eth_signTransaction requests received, in every mode. */
  requests: number;
  /** The authorization header of the last request ("" when none). */
  lastAuthorization: string;
  /** Run (once, then cleared) when the next eth_signTransaction arrives, before it is answered. */
  beforeNextSign: (() => Promise<void>) | null;
  /** Stops listening and drops every connection: a signer that is down (connections refused). */
  down(): Promise<void>;
  /** Listens again on the same port: the signer is back at the same URL. */
  up(): Promise<void>;
  close(): Promise<void>;
}

async function bodyOf(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

async function forward(nodeUrl: string, body: unknown): Promise<{ result?: unknown; error?: unknown; id?: unknown }> {
  const response = await fetch(nodeUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  return (await response.json()) as { result?: unknown; error?: unknown };
}

/** Starts the proxy on a free port of 127.0.0.1; `other` is a second unlocked account of the node. */
export async function startSignerProxy(nodeUrl: string, other: Hex): Promise<SignerProxy> {
  const hanging = new Set<ServerResponse>();
  const proxy: SignerProxy = {
    url: "",
    mode: "honest",
    requests: 0,
    lastAuthorization: "",
    beforeNextSign: null,
    down: async () => {
      for (const response of hanging) response.destroy();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
    up: async () => {
      await new Promise<void>((resolve) => server.listen(Number(new URL(proxy.url).port), "127.0.0.1", resolve));
    },
    close: async () => {
      if (!server.listening) return;
      await proxy.down();
    },
  };
  const answer = (response: ServerResponse, payload: unknown) => {
    response.writeHead(200, { "content-type": "application/json" });
    response.end(JSON.stringify(payload));
  };
  const server = createServer(async (request, response) => {
    const call = JSON.parse(await bodyOf(request)) as { id: unknown; method: string; params: Record<string, string>[] };
    if (call.method !== "eth_signTransaction") return answer(response, await forward(nodeUrl, call));
    proxy.requests++;
    proxy.lastAuthorization = request.headers.authorization ?? "";
    const hook = proxy.beforeNextSign;
    proxy.beforeNextSign = null;
    if (hook !== null) await hook();
    const params = { ...call.params[0] };
    switch (proxy.mode) {
      case "hang":
        hanging.add(response);
        return;
      case "garbage":
        return answer(response, { jsonrpc: "2.0", id: call.id, result: "0xdeadbeef" });
      case "gateway_down":
        response.writeHead(503, { "content-type": "text/html" });
        return response.end("<html><body>503 Service Unavailable</body></html>");
      case "huge":
        return answer(response, { jsonrpc: "2.0", id: call.id, result: `0x${"ab".repeat(1024 * 1024)}` });
      case "other_address":
        params.from = other;
        break;
      case "tampered":
        params.value = `0x${(BigInt(params.value ?? "0x0") + 1n).toString(16)}`;
        break;
    }
    const signed = await forward(nodeUrl, { ...call, params: [params] });
    if (proxy.mode === "wrapped" && typeof signed.result === "string") {
      return answer(response, { ...signed, result: { raw: signed.result, tx: { from: params.from } } });
    }
    answer(response, signed);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no port");
  proxy.url = `http://127.0.0.1:${address.port}`;
  return proxy;
}

/** A URL where nothing listens: a signer that is down. */
export async function deadSignerUrl(): Promise<string> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const address = probe.address();
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  if (address === null || typeof address === "string") throw new Error("no port");
  return `http://127.0.0.1:${address.port}`;
}
