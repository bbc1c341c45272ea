// The dashboard's client of /dashboard/v1: JSON in and out, the CSRF token on every change, problems as errors.
import type { components, operations } from "./generated/api.ts";

type JsonAnswer = { responses: { 200: { content: { "application/json": unknown } } } };

/** The operations that answer JSON with 200: naming another one is a type error, not a silent `never`. */
type AnsweringOperation = {
  [Op in keyof operations]: operations[Op] extends JsonAnswer ? Op : never;
}[keyof operations];

/** The JSON body a dashboard operation answers with 200, from the types generated from /openapi.json. */
export type ResponseBody<Op extends AnsweringOperation> = operations[Op] extends {
  responses: { 200: { content: { "application/json": infer Body } } };
}
  ? Body
  : never;

export type Problem = Pick<components["schemas"]["Problem"], "status" | "code" | "detail">;

export class ApiError extends Error {
  constructor(readonly problem: Problem) {
    super(problem.detail);
  }
}

let csrfToken = "";

export function setCsrf(token: string): void {
  csrfToken = token;
}

export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = {};
  if (method !== "GET") headers["x-csrf-token"] = csrfToken;
  if (body !== undefined) headers["content-type"] = "application/json";
  const response = await fetch(`/dashboard/v1${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "same-origin",
  });
  const text = await response.text();
  const parsed = text === "" ? undefined : JSON.parse(text);
  if (!response.ok) {
    throw new ApiError(parsed ?? { status: response.status, code: "unknown", detail: response.statusText });
  }
  return parsed as T;
}

export type Me = ResponseBody<"DashboardSession">;
