// The benchmark's load generator, run as its own process: autocannon against one URL, printing a JSON summary.
import { createHmac, randomUUID } from "node:crypto";
import autocannon from "autocannon";
import canonicalize from "canonicalize";

export interface LoadSpec {
  url: string;
  method: "GET" | "POST";
  path: string;
  headers: Record<string, string>;
  body?: unknown;
  /** Sign every request afresh (new request id, timestamp, signature), as the interface prescribes. */
  signWith?: string;
  durationS: number;
  connections: number;
}

export interface LoadResult {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  errors: number;
  total: number;
  /** CPU time the load generator itself spent (user + system), to read the machine's budget. */
  cpuMs: number;
}

export function signedHeaders(
  spec: Pick<LoadSpec, "path" | "headers">,
  secret: string,
  body: string,
): Record<string, string> {
  const timestamp = String(Math.floor(Date.now() / 1000));
  const requestId = randomUUID();
  const message = `POST\n${spec.path}\n${timestamp}\n${requestId}\n${body}`;
  const signature = createHmac("sha256", Buffer.from(secret, "utf8")).update(message, "utf8").digest("hex");
  return {
    ...spec.headers,
    "x-service-timestamp": timestamp,
    "x-service-request-id": requestId,
    "x-service-request-signature": `v1=${signature}`,
  };
}

function cpuMsSince(before: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000;
}

async function run(spec: LoadSpec): Promise<LoadResult> {
  const body = spec.body === undefined ? undefined : (canonicalize(spec.body) ?? "");
  const secret = spec.signWith;
  const cpuBefore = process.cpuUsage();
  const result = await autocannon({
    url: spec.url,
    method: spec.method,
    headers: spec.headers,
    body,
    connections: spec.connections,
    duration: spec.durationS,
    ...(secret !== undefined && body !== undefined
      ? {
          requests: [
            {
              setupRequest: (request: autocannon.Request) => ({
                ...request,
                headers: signedHeaders(spec, secret, body),
              }),
            },
          ],
        }
      : {}),
  });
  return {
    requestsPerSecond: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    total: result.requests.total,
    cpuMs: cpuMsSince(cpuBefore),
  };
}

// Run only as a script (the orchestrator imports signedHeaders from here too).
if (process.argv[1]?.endsWith("load.ts")) {
  const spec = JSON.parse(process.argv[2] ?? "{}") as LoadSpec;
  run(spec).then(
    (result) => {
      process.stdout.write(`${JSON.stringify(result)}\n`);
    },
    (error: unknown) => {
      process.stderr.write(`${String(error)}\n`);
      process.exit(1);
    },
  );
}
