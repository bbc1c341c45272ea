// Countries: every ISO 3166-1 country from the maintained i18n-iso-countries package.
import { createRequire } from "node:module";
import { Type } from "typebox";
import type { App } from "../routeHost.ts";
import { CountryInfo } from "../schemas.ts";

const require = createRequire(import.meta.url);

let built: Promise<{ code: string; name: string }[]> | undefined;

/**
 * Alpha-2 code and English short name, ordered by code; reference data, built once, at the first
 * request (the package and its names cost a process about 4 MiB that most never need).
 */
export function countryList(): Promise<{ code: string; name: string }[]> {
  built ??= import("i18n-iso-countries").then(({ default: countries }) => {
    countries.registerLocale(require("i18n-iso-countries/langs/en.json"));
    return Object.entries(countries.getNames("en", { select: "official" }))
      .map(([code, name]) => ({ code, name }))
      .sort((a, b) => (a.code < b.code ? -1 : 1));
  });
  return built;
}

export function registerCountries(app: App): void {
  app.get(
    "/public/v1/countries",
    {
      schema: {
        operationId: "Countries",
        // Public: no API key (an explicit empty requirement, not a forgotten one).
        security: [],
        tags: ["reference"],
        summary: "ISO 3166-1 countries",
        response: { 200: Type.Array(CountryInfo) },
      },
    },
    () => countryList(),
  );
}
