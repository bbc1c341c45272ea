// The worker thread's entry: Node 20 does not pass `--import tsx` on to worker threads, so it registers tsx itself, then loads the TypeScript worker.
import { register } from "tsx/esm/api";

register();
await import("./thread.ts");
