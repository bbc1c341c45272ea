// Test-only local HTTP double of the Chainalysis sanctions screening API: GET /api/v1/address/{address} with X-API-Key, answering { "identifications": [...] } as Chainalysis publishes it; modes to hang, fail, answer garbage or a huge body.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export const DOUBLE_SCREENING_KEY = "screening-double-key";

/** How the double answers: as the API does, or one of the faults the service must survive. */
export type ScreeningDoubleMode = "normal" | "hang" | "error500" | "garbage" | "huge";

/** One identification as Chainalysis's sanctions API returns it. */
function identification(address: string) {
  return {
    category: "sanctions",
    name: "SANCTIONS: OFAC SDN Test Entity",
    description: `Test identification of ${address}`,
    url: "https://home.treasury.gov/policy-issues/financial-sanctions/sdn-list",
  };
}

export interface ScreeningDouble {
  url: string;
  mode: ScreeningDoubleMode;
  /** Addresses (lowercase) the double identifies. */
  identified: Set<string>;
  /** Paths asked, in order (for assertions on what the service asked). */
  asked: string[];
  close(): Promise<void>;
}

export async function startScreeningDouble(): Promise<ScreeningDouble> {
  const state = { mode: "normal" as ScreeningDoubleMode, identified: new Set<string>(), asked: [] as string[] };
  const hanging = new Set<import("node:http").ServerResponse>();
  const server: Server = createServer((req, res) => {
    const url = req.url ?? "";
    state.asked.push(url);
    const match = /^\/api\/v1\/address\/([^/?]+)$/.exec(url);
    if (req.method !== "GET" || !match) {
      res.writeHead(404, { "content-type": "application/json" }).end('{"message":"not found"}');
      return;
    }
    if (req.headers["x-api-key"] !== DOUBLE_SCREENING_KEY) {
      res.writeHead(403, { "content-type": "application/json" }).end('{"message":"Forbidden"}');
      return;
    }
    switch (state.mode) {
      case "hang":
        hanging.add(res);
        return;
      case "error500":
        res.writeHead(500, { "content-type": "application/json" }).end('{"message":"Internal server error"}');
        return;
      case "garbage":
        res.writeHead(200, { "content-type": "application/json" }).end("<html>not json</html>");
        return;
      case "huge":
        res.writeHead(200, { "content-type": "application/json" });
        res.end(`{"identifications":[],"padding":"${"x".repeat(2 * 1024 * 1024)}"}`);
        return;
      case "normal": {
        const address = decodeURIComponent(match[1] as string).toLowerCase();
        const identifications = state.identified.has(address) ? [identification(address)] : [];
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ identifications }));
      }
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get mode() {
      return state.mode;
    },
    set mode(mode: ScreeningDoubleMode) {
      state.mode = mode;
    },
    identified: state.identified,
    asked: state.asked,
    close: async () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
