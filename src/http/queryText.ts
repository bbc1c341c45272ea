// Query strings obey the same text rules as bodies: a NUL or invalid UTF-8 anywhere in one is refused (product §18).
import type { onRequestHookHandler } from "fastify";
import { Problem } from "./problem.ts";

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Decodes one query component (`+` as space, `%XX` as a byte, any other character as itself) as
 * strict UTF-8; null when the bytes are not UTF-8 (an overlong form, an encoded surrogate, `%FF`),
 * a `%` escape is broken, or the text holds a NUL. Node hands the request target over as latin1,
 * so a raw byte above 0x7F is one character here and is decoded as the byte it was.
 */
export function decodeQueryComponent(component: string): string | null {
  const bytes = new Uint8Array(component.length);
  let length = 0;
  for (let i = 0; i < component.length; i++) {
    const code = component.charCodeAt(i);
    if (code === 0x25) {
      const hex = component.slice(i + 1, i + 3);
      if (!/^[0-9a-fA-F]{2}$/.test(hex)) return null;
      bytes[length++] = Number.parseInt(hex, 16);
      i += 2;
    } else if (code === 0x2b) {
      bytes[length++] = 0x20;
    } else if (code > 0xff) {
      // Not from the wire (an injected request): check the character as text.
      return null;
    } else {
      bytes[length++] = code;
    }
  }
  let text: string;
  try {
    text = strictUtf8.decode(bytes.subarray(0, length));
  } catch {
    return null;
  }
  return text.includes("\u0000") ? null : text;
}

/** True when every name and value of the query string (the part of `url` after `?`) is acceptable text. */
export function acceptableQuery(url: string): boolean {
  const start = url.indexOf("?");
  if (start === -1) return true;
  const query = url.slice(start + 1);
  if (query === "") return true;
  // `=` and `&` never occur inside an escape, so each name and value is checked on its own.
  for (const pair of query.split("&")) {
    for (const part of pair.split("=")) if (decodeQueryComponent(part) === null) return false;
  }
  return true;
}

/** onRequest hook, before any route or authentication reads the query: refused with 400 `invalid_text`. */
export const refuseInvalidQueryText: onRequestHookHandler = (request, _reply, done) => {
  if (acceptableQuery(request.raw.url ?? "")) done();
  else done(new Problem("invalid_text", "Query parameters must be well-formed UTF-8 without NUL characters."));
};
