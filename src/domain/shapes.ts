// TypeBox building blocks of the public shapes, defined once: the use cases' input schemas and the HTTP schemas both use them.
import { type Static, type TSchema, Type } from "typebox";

/**
 * A value or null. Written as `type: [<type>, "null"]` rather than `anyOf`: the same JSON Schema
 * meaning, but the response serializer then needs no validator to choose a branch per field.
 */
export const Nullable = <T extends TSchema & { type: string }>(schema: T) =>
  Type.Unsafe<Static<T> | null>({ ...schema, type: [schema.type, "null"] });

/** An absolute http(s) URL the service may call or send a payer to (callback and redirect URLs). */
export const HttpUrl = Type.String({
  minLength: 1,
  maxLength: 2048,
  format: "uri",
  pattern: "^[Hh][Tt][Tt][Pp][Ss]?://",
});

/** A plain decimal monetary string of product §3. */
export const MoneyString = Type.String({ pattern: "^(0|[1-9][0-9]*)(\\.[0-9]*[1-9])?$", examples: ["100.5"] });
