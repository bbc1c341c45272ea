// Reads the Dockerfile into stages and instructions, so tests can check it and run its steps outside Docker.
import { readFileSync } from "node:fs";

export interface Instruction {
  keyword: string;
  args: string;
}

export interface Stage {
  name: string;
  from: string;
  instructions: Instruction[];
}

/** The stages of a Dockerfile, in order; continuation lines joined, comments left out. */
export function readDockerfile(path = "Dockerfile"): Stage[] {
  const lines = readFileSync(path, "utf8")
    .replace(/\\\n\s*/g, " ")
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"));
  const stages: Stage[] = [];
  for (const line of lines) {
    const [, keyword = "", args = ""] = /^(\S+)\s*(.*)$/.exec(line) ?? [];
    if (keyword.toUpperCase() === "FROM") {
      const [, from = "", name = ""] = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args) ?? [];
      stages.push({ name, from, instructions: [] });
    } else {
      stages.at(-1)?.instructions.push({ keyword: keyword.toUpperCase(), args });
    }
  }
  return stages;
}

export function stage(stages: Stage[], name: string): Stage {
  const found = stages.find((s) => s.name === name);
  if (!found) throw new Error(`no stage ${name} in the Dockerfile`);
  return found;
}

/** A COPY's sources and destination, and the stage it copies from (undefined: the build context). */
export function copyOf(instruction: Instruction): { from?: string; sources: string[]; destination: string } {
  const parts = instruction.args.split(/\s+/);
  const fromFlag = parts[0]?.startsWith("--from=") ? parts.shift()?.slice("--from=".length) : undefined;
  const destination = parts.pop() ?? "";
  return { ...(fromFlag ? { from: fromFlag } : {}), sources: parts, destination };
}

/** ENV's variables (the `ENV A=1 B=2` form). */
export function envOf(instruction: Instruction): Record<string, string> {
  return Object.fromEntries(instruction.args.split(/\s+/).map((pair) => pair.split("=", 2) as [string, string]));
}
