// `npm run test:crash:live`: live-mode payouts (ETH and a token) on a local chain while the service SIGKILLs itself between signing and broadcast and between broadcast and recording, again and again; then every payout has exactly one transaction on chain and every invariant holds.
import { randomBytes, randomUUID } from "node:crypto";
import { type Hex, parseEther } from "viem";
import { mnemonicToAccount } from "viem/accounts";
import { auditLedger } from "../../src/store/ledger.ts";
import { openStore } from "../../src/store/store.ts";
import { SERVICE_MNEMONIC, startLocalChain } from "../support/chain.ts";
import { ServiceExitedEarly, type ServiceProcess, spawnService } from "../support/process.ts";
import { createTestDatabase, freePort } from "../support/server.ts";
import { signedCall } from "../support/signing.ts";

const KILLS = Number(process.env.CRASH_KILLS ?? "6");
const PER_ROUND = Number(process.env.CRASH_PAYOUTS_PER_ROUND ?? "6");
const ADMIN_TOKEN = `crash-${randomBytes(12).toString("hex")}`;
const SECRET_ENCRYPTION_KEY = randomBytes(32).toString("hex");
/** Bound of each wait: a process that neither dies nor settles within it fails the run. */
const WAIT_MS = 60_000;

function fail(message: string): never {
  throw new Error(`INVARIANT BROKEN: ${message}`);
}

async function until<T>(what: string, probe: () => Promise<T | null>, tick?: () => Promise<void>): Promise<T> {
  const deadline = Date.now() + WAIT_MS;
  while (Date.now() < deadline) {
    const found = await probe();
    if (found !== null) return found;
    await tick?.();
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function main(): Promise<void> {
  const startedAt = Date.now();
  const chain = await startLocalChain();
  const database = await createTestDatabase(process.env.DATABASE_URL?.startsWith("postgres") ? "postgres" : "sqlite");
  const hot = mnemonicToAccount(SERVICE_MNEMONIC, { addressIndex: 0 });
  const token = await chain.deployToken({ decimals: 6 });
  await chain.waitForReceipt(await chain.sendEth(chain.accounts[1] as Hex, hot.address, parseEther("20")));
  await chain.waitForReceipt(await token.mint(hot.address, 1_000_000_000_000n));
  const port = await freePort();
  const env = (crashAt: string | null) => ({
    DATABASE_URL: database.url,
    ADMIN_TOKEN,
    SECRET_ENCRYPTION_KEY,
    SERVICE_MODE: "live",
    WALLET_MNEMONIC: SERVICE_MNEMONIC,
    CHAIN_PAYOUT_POLL_MS: "100",
    RATE_LIMIT_PER_MINUTE: "0",
    ADMIN_RATE_LIMIT_PER_MINUTE: "0",
    PAYER_RATE_LIMIT_PER_MINUTE: "0",
    WEBHOOK_RATE_LIMIT_PER_MINUTE: "0",
    LOG_LEVEL: "error",
    ...(crashAt ? { PAYOUT_TEST_CRASH_AT: crashAt } : {}),
  });
  let service: ServiceProcess = await spawnService(env(null), port);
  const base = service.baseUrl;
  const adminCall = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${base}/admin/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
    return response.json() as Promise<any>;
  };

  // Setup: the network, ETH and USDT on it, a funded merchant with a withdrawal method per currency.
  await adminCall("PUT", "/networks/local", { chainId: chain.chainId, rpcUrl: chain.url, confirmations: 2 });
  const currency = (ticker: string, contractAddress: string | null, decimals: number, min: string) => ({
    fullName: ticker,
    network: "local",
    contractAddress,
    type: contractAddress ? "stablecoin" : "token",
    icon: `/icons/${ticker.toLowerCase()}.svg`,
    iconDark: `/icons/${ticker.toLowerCase()}-dark.svg`,
    internalTicker: ticker,
    decimals,
    networkFee: "0",
    withdrawalMin: min,
    withdrawalMax: "100000",
    rateUsd: "1",
  });
  await adminCall("PUT", "/currencies/ETH", currency("ETH", null, 18, "0.01"));
  await adminCall("PUT", "/currencies/USDT", currency("USDT", token.address, 6, "10"));
  const merchant = await adminCall("POST", "/merchants", { email: "crash-live@example.com" });
  const key = await adminCall("POST", `/merchants/${merchant.id}/api-keys`, {});
  await adminCall("POST", `/merchants/${merchant.id}/balance-adjustments`, {
    currency: "ETH",
    amount: "10",
    memo: "crash",
  });
  await adminCall("POST", `/merchants/${merchant.id}/balance-adjustments`, {
    currency: "USDT",
    amount: "100000",
    memo: "crash",
  });
  const ethDest = `0x${randomBytes(20).toString("hex")}` as Hex;
  const usdtDest = `0x${randomBytes(20).toString("hex")}` as Hex;
  const ethMethod = await adminCall("POST", `/merchants/${merchant.id}/withdrawal-methods`, {
    currency: "ETH",
    address: ethDest,
  });
  const usdtMethod = await adminCall("POST", `/merchants/${merchant.id}/withdrawal-methods`, {
    currency: "USDT",
    address: usdtDest,
  });
  const nonceAtStart = await chain.client.getTransactionCount({ address: hot.address });

  // Each withdrawal keeps its request id until it is answered 200: a kill mid-request is retried with it.
  interface Pending {
    requestId: string;
    body: Record<string, unknown>;
    eth: boolean;
    amount: string;
  }
  const queue: Pending[] = [];
  for (let i = 0; i < PER_ROUND * (KILLS + 1); i++) {
    const eth = i % 2 === 0;
    const amount = eth ? `0.0${1 + (i % 8)}` : String(10 + (i % 17));
    queue.push({
      requestId: randomUUID(),
      body: { currency: eth ? "ETH" : "USDT", amount, withdrawalMethodId: eth ? ethMethod.id : usdtMethod.id },
      eth,
      amount,
    });
  }
  const requestIds: string[] = [];
  let ethSent = 0n;
  let usdtSent = 0n;
  /** Sends up to `count` withdrawals of the queue; stops when the process is gone. */
  const submit = async (count: number, target: ServiceProcess) => {
    for (let i = 0; i < count && queue.length > 0; i++) {
      const next = queue[0] as Pending;
      let answered = false;
      for (let attempt = 0; attempt < 20 && !answered; attempt++) {
        if (target.child.exitCode !== null || target.child.signalCode !== null) return;
        try {
          const sent = await signedCall(base, {
            apiKey: key.apiKey,
            secret: key.secretKey,
            body: next.body,
            requestId: next.requestId,
          });
          if (sent.answer.status === 200) answered = true;
          else if (sent.answer.status !== 409 && sent.answer.status < 500) {
            fail(`withdrawal ${next.requestId}: ${sent.answer.text}`);
          }
        } catch {
          // the process died during the request: it is sent again, same request id, to the next one
        }
        if (!answered) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      if (!answered) return;
      queue.shift();
      requestIds.push(next.requestId.toLowerCase());
      if (next.eth) ethSent += parseEther(next.amount);
      else usdtSent += BigInt(next.amount) * 1_000_000n;
    }
  };

  await service.stop();
  let kills = 0;
  let startupKills = 0;
  for (let round = 0; round < KILLS; round++) {
    const point = round % 2 === 0 ? "after_sign" : "after_broadcast";
    try {
      service = await spawnService(env(point), port);
    } catch (error) {
      // A payout left pending by the last round can reach the crash point before /readyz first answers:
      // that is this round's kill, at its point, as much as one during the submissions.
      if (error instanceof ServiceExitedEarly && error.signal === "SIGKILL") {
        kills++;
        startupKills++;
        continue;
      }
      throw error;
    }
    await submit(PER_ROUND, service);
    const code = await Promise.race([
      service.exited,
      new Promise((resolve) => setTimeout(() => resolve("alive"), WAIT_MS)),
    ]);
    if (code === "alive" || service.child.signalCode !== "SIGKILL")
      fail(`round ${round}: the service did not kill itself at ${point}`);
    kills++;
  }

  // The last process runs without a crash point: every payout must complete, each with one transaction.
  service = await spawnService(env(null), port);
  await submit(queue.length, service);
  await until(
    "every payout to complete",
    async () => {
      const payouts = (await adminCall("GET", "/payouts?limit=500")) as { requestId: string; state: string }[];
      const mine = payouts.filter((p) => requestIds.includes(p.requestId));
      return mine.length === requestIds.length && mine.every((p) => p.state === "completed") ? true : null;
    },
    () => chain.mine(1),
  );
  await service.stop();

  const store = await openStore(database.url);
  try {
    const txs = await store.db
      .selectFrom("hot_transactions")
      .select(["purpose_id", "nonce", "state", "hash"])
      .where("purpose", "=", "payout")
      .execute();
    const perPayout = new Map<string, number>();
    for (const t of txs) perPayout.set(t.purpose_id, (perPayout.get(t.purpose_id) ?? 0) + 1);
    for (const id of requestIds)
      if (perPayout.get(id) !== 1) fail(`payout ${id} has ${perPayout.get(id) ?? 0} stored transactions`);
    if (txs.some((t) => t.state !== "confirmed")) fail("a payout transaction is not confirmed");
    const nonces = txs.map((t) => Number(t.nonce)).sort((a, b) => a - b);
    nonces.forEach((n, i) => {
      if (n !== nonceAtStart + i) fail(`nonces are not contiguous: ${nonces.join(",")}`);
    });
    const onChainNonce = await chain.client.getTransactionCount({ address: hot.address });
    if (onChainNonce !== nonceAtStart + requestIds.length) {
      fail(`the hot wallet sent ${onChainNonce - nonceAtStart} transactions for ${requestIds.length} payouts`);
    }
    for (const t of txs) {
      const receipt = await chain.client.getTransactionReceipt({ hash: t.hash as Hex });
      if (receipt.status !== "success") fail(`transaction ${t.hash} is not a success on chain`);
    }
    if ((await chain.balance(ethDest)) !== ethSent)
      fail(`ETH destination holds ${await chain.balance(ethDest)}, sent ${ethSent}`);
    if ((await token.balanceOf(usdtDest)) !== usdtSent)
      fail(`token destination holds ${await token.balanceOf(usdtDest)}, sent ${usdtSent}`);
    const fees = await store.db
      .selectFrom("ledger_movements")
      .select("cause_id")
      .where("kind", "=", "network_fee")
      .execute();
    if (fees.length !== requestIds.length)
      fail(`${fees.length} network fee movements for ${requestIds.length} payouts`);
    const audit = await auditLedger(store);
    for (const [c, sum] of audit.sumsByCurrency) if (sum !== 0n) fail(`ledger sums to ${sum} in ${c}`);
    if (audit.mismatchedBalances.length > 0) fail("cached balances disagree with the entries");
    if (audit.negativeMerchantBalances.length > 0) fail("a merchant balance is negative");
  } finally {
    await store.close();
    await chain.close();
    await database.drop();
  }
  process.stdout.write(
    `live crash test passed: ${kills} kills (${startupKills} before /readyz answered), ${requestIds.length} payouts, each one transaction on chain, nonces contiguous, ledger balanced (${((Date.now() - startedAt) / 1000).toFixed(1)} s)\n`,
  );
}

main().then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
