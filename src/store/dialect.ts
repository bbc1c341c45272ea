// Which SQL engine a store runs on, and the few column types that differ between them.
export type Dialect = "sqlite" | "postgres";

export function dialectOf(databaseUrl: string): Dialect {
  if (databaseUrl.startsWith("postgres://") || databaseUrl.startsWith("postgresql://")) return "postgres";
  if (databaseUrl.startsWith("sqlite:")) return "sqlite";
  throw new Error(
    `DATABASE_URL must start with sqlite: or postgres://, got ${JSON.stringify(databaseUrl.split(":")[0])}`,
  );
}

export function autoIncrementId(dialect: Dialect): "integer" | "serial" {
  return dialect === "sqlite" ? "integer" : "serial";
}
