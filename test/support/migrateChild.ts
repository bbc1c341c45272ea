// A process that opens the store at the URL it is given (running every migration) and says so: the migration crash test kills it midway.
import { openStore } from "../../src/store/store.ts";

const url = process.argv[2];
if (!url) throw new Error("usage: migrateChild.ts DATABASE_URL");
const store = await openStore(url);
process.stdout.write("migrated\n");
await store.close();
