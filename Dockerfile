# syntax=docker/dockerfile:1
# The service's image, built in stages: the runtime holds production dependencies and the built dist/ only, runs as the
# unprivileged `node` user, builds nothing at start, and reports its health from GET /readyz.
# test/production/dockerSteps.test.ts runs these same steps in clean folders (`npm run test:production`).

# Node 20.19 or later, with what compiles better-sqlite3 when no prebuilt binary fits the platform.
FROM node:20-bookworm-slim AS toolchain
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /app

# Every dependency, then the build: tsc into dist/, the payer's page and the dashboard into dist/web/, the SDK and the CLI.
FROM toolchain AS build
COPY package.json package-lock.json ./
COPY packages/sdk/package.json packages/sdk/
COPY packages/cli/package.json packages/cli/
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build

# Production dependencies only (no TypeScript, Vite, tsx or test tools).
FROM toolchain AS deps
COPY package.json package-lock.json ./
COPY packages/sdk/package.json packages/sdk/
COPY packages/cli/package.json packages/cli/
RUN npm ci --omit=dev --no-audit --no-fund

FROM node:20-bookworm-slim AS runtime
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8080 DATABASE_URL=sqlite:/data/payments.db
WORKDIR /app
COPY --from=deps /app/node_modules node_modules
COPY --from=build /app/package.json package.json
COPY --from=build /app/dist dist
# The CLI (`npx payments`), for the operator inside the container.
COPY --from=build /app/packages/sdk/package.json packages/sdk/package.json
COPY --from=build /app/packages/sdk/dist packages/sdk/dist
COPY --from=build /app/packages/cli/package.json packages/cli/package.json
COPY --from=build /app/packages/cli/bin packages/cli/bin
COPY --from=build /app/packages/cli/dist packages/cli/dist
# The SQLite store (and its secret.key) when DATABASE_URL stays sqlite:/data/…; unused with PostgreSQL.
RUN mkdir /data && chown node:node /data
VOLUME /data
USER node
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/readyz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# The same command as `npm run start:production`, without npm in between (signals reach node directly).
CMD ["node", "--enable-source-maps", "--max-semi-space-size=4", "--heap-growing-percent=40", "dist/main.js"]
