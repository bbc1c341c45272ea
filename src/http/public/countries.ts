// Countries: every ISO 3166-1 country from the maintained i18n-iso-countries package.
import { createRequire } from "node:module";
import countries from "i18n-iso-countries";
import { Type } from "typebox";
import type { App } from "../app.ts";
import { CountryInfo } from "../schemas.ts";

const require = createRequire(import.meta.url);
countries.registerLocale(require("i18n-iso-countries/langs/en.json"));

/** Alpha-2 code and English short name, ordered by code; reference data, built once. */
export const COUNTRIES: { code: string; name: string }[] = Object.entries(
  countries.getNames("en", { select: "official" }),
)
  .map(([code, name]) => ({ code, name }))
  .sort((a, b) => (a.code < b.code ? -1 : 1));

export function registerCountries(app: App): void {
  app.get(
    "/public/v1/countries",
    {
      schema: {
        operationId: "Countries",
        tags: ["reference"],
        summary: "ISO 3166-1 countries",
        response: { 200: Type.Array(CountryInfo) },
      },
    },
    async () => COUNTRIES,
  );
}
