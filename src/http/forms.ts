// HTML forms of the payer's pages (claim links, payment links): a scope that also parses application/x-www-form-urlencoded bodies, bounded.
import type { FastifyInstance } from "fastify";
import { Problem } from "./problem.ts";

/** A form carries one or two short fields: anything longer is refused before it is parsed. */
export const FORM_BODY_LIMIT_BYTES = 4096;

/**
 * Adds the form parser to an encapsulated scope (its routes only): fields become a plain object of
 * strings; a repeated field is refused, as JSON's duplicate member names are.
 */
export function acceptForms(scope: Pick<FastifyInstance, "addContentTypeParser">): void {
  scope.addContentTypeParser(
    "application/x-www-form-urlencoded",
    { parseAs: "string", bodyLimit: FORM_BODY_LIMIT_BYTES },
    (_request, body, done) => {
      const fields: Record<string, string> = {};
      for (const [name, value] of new URLSearchParams(body as string)) {
        if (Object.hasOwn(fields, name)) {
          done(new Problem("duplicate_member_name", `The form sends ${name} more than once.`), undefined);
          return;
        }
        fields[name] = value;
      }
      done(null, fields);
    },
  );
}

/** Whether a request was a form post (it gets an HTML page back) rather than JSON (a JSON answer). */
export function isFormPost(contentType: string | undefined): boolean {
  return (contentType ?? "").split(";")[0]?.trim().toLowerCase() === "application/x-www-form-urlencoded";
}

/**
 * Whether the answer should be a page: a form post, or a browser that asks for HTML (its Accept
 * names text/html). API clients ask for JSON or for any type and get problem bodies.
 */
export function asksForHtml(headers: { "content-type"?: string | undefined; accept?: string | undefined }): boolean {
  if (isFormPost(headers["content-type"])) return true;
  return /(^|,)\s*text\/html\s*(;|,|$)/i.test(headers.accept ?? "");
}
