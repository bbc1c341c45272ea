// The lock file installs with `npm ci` on the machine's Node: complete, pinned, and no package needing a newer Node.
import { readFileSync } from "node:fs";
import semver from "semver";
import { describe, expect, it } from "vitest";

interface LockEntry {
  version?: string;
  engines?: { node?: string } | string[];
  optionalDependencies?: Record<string, string>;
}

const manifest = JSON.parse(readFileSync("package.json", "utf8")) as {
  engines: { node: string };
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};
const lock = JSON.parse(readFileSync("package-lock.json", "utf8")) as { packages: Record<string, LockEntry> };

/** Where Node would find `name` from the package installed at `from` (the lock's node_modules paths). */
function resolves(from: string, name: string): boolean {
  let base = from;
  for (let depth = 0; depth < 64; depth++) {
    if (`${base ? `${base}/` : ""}node_modules/${name}` in lock.packages) return true;
    if (base === "") return false;
    const cut = base.lastIndexOf("/node_modules/");
    base = cut >= 0 ? base.slice(0, cut) : "";
  }
  throw new Error(`lock path nested too deeply: ${from}`);
}

describe("installs", () => {
  it("pins every direct dependency to an exact version", () => {
    const ranges = Object.entries({ ...manifest.dependencies, ...manifest.devDependencies }).filter(
      ([, version]) => semver.valid(version) === null,
    );
    expect(ranges).toEqual([]);
  });

  it("holds every optional dependency of every package, as npm ci requires", () => {
    const missing: string[] = [];
    for (const [path, entry] of Object.entries(lock.packages)) {
      for (const name of Object.keys(entry.optionalDependencies ?? {})) {
        if (!resolves(path, name)) missing.push(`${path || "(root)"} -> ${name}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it("has no package whose engines exclude the oldest Node the service supports", () => {
    const oldest = semver.minVersion(manifest.engines.node);
    expect(oldest).not.toBeNull();
    const excluded: string[] = [];
    for (const [path, entry] of Object.entries(lock.packages)) {
      const range = entry.engines && !Array.isArray(entry.engines) ? entry.engines.node : undefined;
      if (range !== undefined && !semver.satisfies(oldest as semver.SemVer, range)) excluded.push(`${path} ${range}`);
    }
    expect(excluded).toEqual([]);
  });
});
