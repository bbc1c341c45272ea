// A small client of the operator API (/admin/v1): bearer token, JSON in and out, problems as PaymentsApiError.
import { PaymentsApiError, PaymentsConnectionError, type Problem } from "@merchant-payments/sdk";

export class AdminClient {
  constructor(
    private readonly baseUrl: string,
    private readonly token: string,
    private readonly timeoutMs: number,
  ) {}

  async call<T = unknown>(method: string, path: string, body?: unknown, query?: Record<string, string>): Promise<T> {
    const params = new URLSearchParams(query ?? {}).toString();
    const url = `${this.baseUrl.replace(/\/+$/, "")}/admin/v1${path}${params ? `?${params}` : ""}`;
    const headers: Record<string, string> = { authorization: `Bearer ${this.token}`, accept: "application/json" };
    if (body !== undefined) headers["content-type"] = "application/json";
    const signal = AbortSignal.timeout(this.timeoutMs);
    let response: Response;
    let text: string;
    try {
      response = await fetch(url, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal,
      });
      text = await response.text();
    } catch (cause) {
      // Operator writes are not idempotent: no automatic retry, the operator decides.
      throw new PaymentsConnectionError({ code: signal.aborted ? "timeout" : "network", attempts: 1, cause });
    }
    let json: unknown;
    try {
      json = text === "" ? undefined : JSON.parse(text);
    } catch {
      json = undefined;
    }
    if (response.ok) return json as T;
    const problem = typeof json === "object" && json !== null && "code" in json ? (json as Problem) : null;
    throw new PaymentsApiError({ status: response.status, problem, attempts: 1, text });
  }
}

/** Path segments from the command line are encoded so that no argument can change the route. */
export const seg = (value: string) => encodeURIComponent(value);
