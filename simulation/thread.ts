// A worker thread of `npm run simulate`: runs the seeds it is sent, one at a time, with the run's mutant switched off.
import { parentPort, threadId, workerData } from "node:worker_threads";
import pg from "pg";
import { type GuardName, switchOffGuard } from "../src/domain/guards.ts";
import { runSeed, warmUp } from "./seed.ts";

const { mutant, postgresUrl, draws } = workerData as {
  mutant: GuardName | null;
  postgresUrl: string | null;
  draws: number[] | null;
};
switchOffGuard(mutant);
const warm = warmUp();

/** A fresh PostgreSQL database for one seed on the server of `serverUrl`, dropped after. */
async function withPostgres<T>(serverUrl: string, seed: number, work: (url: string) => Promise<T>): Promise<T> {
  const name = `simulation_${threadId}_${seed}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${name}`);
    const url = new URL(serverUrl);
    url.pathname = `/${name}`;
    try {
      return await work(url.toString());
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    }
  } finally {
    await admin.end();
  }
}

parentPort?.on("message", async (seed: number) => {
  await warm;
  const options = { seed, ...(draws ? { draws } : {}) };
  const result = postgresUrl
    ? await withPostgres(postgresUrl, seed, (databaseUrl) => runSeed({ ...options, databaseUrl }))
    : await runSeed(options);
  parentPort?.postMessage(result);
});
