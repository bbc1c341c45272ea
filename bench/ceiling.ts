// The benchmark's ceiling: a bare node:http server answering with the same response sizes as the service.
import { createServer } from "node:http";

const getSize = Number(process.env.CEILING_GET_BYTES ?? "800");
const postSize = Number(process.env.CEILING_POST_BYTES ?? "800");
const port = Number(process.env.PORT ?? "0");

function body(size: number): Buffer {
  // A JSON string of exactly `size` bytes, like the service's JSON answers.
  return Buffer.from(JSON.stringify("x".repeat(Math.max(0, size - 2))));
}

const getBody = body(getSize);
const postBody = body(postSize);

const server = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on("data", (chunk: Buffer) => chunks.push(chunk));
  request.on("end", () => {
    const answer = request.method === "POST" ? postBody : getBody;
    response.writeHead(200, { "content-type": "application/json; charset=utf-8", "content-length": answer.length });
    response.end(answer);
  });
});
server.listen(port, "127.0.0.1", () => {
  const address = server.address();
  process.stdout.write(`${JSON.stringify({ port: typeof address === "object" && address ? address.port : 0 })}\n`);
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
