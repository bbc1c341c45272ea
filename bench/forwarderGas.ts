// `npm run bench:forwarders` (by hand; not in `npm run bench`): gas per settled ERC-20 deposit, the payment excluded, for fund-and-sweep, forwarder flushes in batches of 1, 10 and 50 beside the clone floor (a bare EIP-1167 clone deployed by CREATE2 and emptied in the same call), and paying with a wallet (EIP-3009, Permit2), against one ERC-20 transfer as the floor, on a local anvil.
import {
  createWalletClient,
  encodeFunctionData,
  erc20Abi,
  getAddress,
  type Hex,
  http,
  maxUint256,
  parseEther,
} from "viem";
import { english, generateMnemonic, type HDAccount, mnemonicToAccount } from "viem/accounts";
import { deployFactory, sendFlush } from "../src/chain/forwarders.ts";
import { forwarderAddress, forwarderId } from "../src/domain/forwarders.ts";
import { PERMIT2_ADDRESS } from "../src/domain/walletAuthorizationAbi.ts";
import { type Anvil, type Deployed, sendFrom, startAnvil } from "../test/support/anvil.ts";
import { permit2RuntimeCode } from "../test/support/chain.ts";
import { compileFixture } from "../test/support/solcFixture.ts";
import {
  permit2TypedData,
  permitWitnessTransferFromData,
  randomAuthorizationNonce,
  randomPermit2Nonce,
  receiveAuthorizationTypedData,
  receiveWithAuthorizationData,
} from "../test/support/walletPayments.ts";

const BATCHES = [1, 10, 50];
const DEPOSIT = 1_000_000n;
const MINT_ABI = [
  {
    type: "function",
    name: "mint",
    stateMutability: "nonpayable",
    inputs: [
      { name: "to", type: "address" },
      { name: "value", type: "uint256" },
    ],
    outputs: [],
  },
] as const;

export interface GasFigure {
  name: string;
  /** Gas the operator pays per settled deposit. */
  perDeposit: bigint;
  transactions: number;
  deposits: number;
}

async function pay(anvil: Anvil, token: Deployed, to: Hex): Promise<void> {
  const data = encodeFunctionData({ abi: MINT_ABI, functionName: "mint", args: [to, DEPOSIT] });
  const sent = await sendFrom(anvil, anvil.accounts[0] as HDAccount, { to: token.address, data });
  if (sent.status !== "success") throw new Error("payment failed");
}

function transferData(to: Hex, amount: bigint): Hex {
  return encodeFunctionData({ abi: erc20Abi, functionName: "transfer", args: [to, amount] });
}

/** The floor: one ERC-20 transfer moving a whole deposit to the hot wallet (which already holds the token). */
async function floor(anvil: Anvil, token: Deployed, hot: Hex): Promise<GasFigure> {
  const holder = anvil.accounts[5] as HDAccount;
  await pay(anvil, token, holder.address);
  const sent = await sendFrom(anvil, holder, { to: token.address, data: transferData(hot, DEPOSIT) });
  return { name: "floor: one ERC-20 transfer", perDeposit: sent.gasUsed, transactions: 1, deposits: 1 };
}

/** The payer's side of a transfer-paid deposit: the whole deposit into a deposit address that held none of the token. */
async function payerTransfer(anvil: Anvil, token: Deployed): Promise<GasFigure> {
  const holder = anvil.accounts[4] as HDAccount;
  await pay(anvil, token, holder.address);
  const deposit = mnemonicToAccount(generateMnemonic(english)).address;
  const sent = await sendFrom(anvil, holder, { to: token.address, data: transferData(deposit, DEPOSIT) });
  if (sent.status !== "success") throw new Error("the payer's transfer failed");
  return { name: "payer: transfer to a deposit address", perDeposit: sent.gasUsed, transactions: 1, deposits: 1 };
}

/** Today: the hot wallet sends the deposit address its gas, then the deposit address sends the token to the hot wallet. */
async function fundAndSweep(anvil: Anvil, token: Deployed, hot: HDAccount): Promise<GasFigure> {
  const deposit = mnemonicToAccount(generateMnemonic(english), { addressIndex: 1 });
  await pay(anvil, token, deposit.address);
  const funding = await sendFrom(anvil, hot, { to: deposit.address, value: parseEther("0.001") });
  const sweep = await sendFrom(anvil, deposit, { to: token.address, data: transferData(hot.address, DEPOSIT) });
  if (funding.status !== "success" || sweep.status !== "success") throw new Error("fund-and-sweep failed");
  return { name: "fund-and-sweep (today)", perDeposit: funding.gasUsed + sweep.gasUsed, transactions: 2, deposits: 1 };
}

/** One flush of `size` forwarders, each paid once; `again` pays and flushes the same (now deployed) forwarders a second time. */
async function flushBatch(
  anvil: Anvil,
  token: Deployed,
  hot: HDAccount,
  size: number,
  tag: string,
): Promise<[GasFigure, GasFigure]> {
  const measure = async (round: string): Promise<GasFigure> => {
    const items = Array.from({ length: size }, (_, i) => ({ id: forwarderId(`${tag}_${i}`), token: token.address }));
    for (const item of items) await pay(anvil, token, forwarderAddress(hot.address, item.id));
    const sent = await sendFlush({ client: anvil.client, signer: hot, items });
    if (!sent.ok) throw new Error(`flush: ${sent.error}`);
    const receipt = await anvil.client.waitForTransactionReceipt({ hash: sent.value, timeout: 30_000 });
    if (receipt.status !== "success") throw new Error("flush reverted");
    return {
      name: `flush ×${size} (${round})`,
      perDeposit: receipt.gasUsed / BigInt(size),
      transactions: 1,
      deposits: size,
    };
  };
  return [await measure("first: deploys"), await measure("again: deployed")];
}

/** Deploys a fixture compiled by compileFixture (evm shanghai) from `account`, constructor `args`. */
async function deployCompiled(anvil: Anvil, name: string, account: HDAccount, args: unknown[] = []): Promise<Deployed> {
  const { abi, bytecode } = compileFixture(name);
  const wallet = createWalletClient({ account, transport: http(anvil.url, { retryCount: 0 }) });
  const hash = await wallet.deployContract({ abi, bytecode, args, chain: null });
  const receipt = await anvil.client.waitForTransactionReceipt({ hash, timeout: 20_000, pollingInterval: 50 });
  if (!receipt.contractAddress) throw new Error(`${name} was not deployed`);
  return { address: getAddress(receipt.contractAddress), abi };
}

const FLOOR_ABI = [
  {
    type: "function",
    name: "flush",
    stateMutability: "nonpayable",
    inputs: [
      { name: "ids", type: "bytes32[]" },
      { name: "token", type: "address" },
    ],
    outputs: [],
  },
  {
    type: "function",
    name: "forwarderAddress",
    stateMutability: "view",
    inputs: [{ name: "id", type: "bytes32" }],
    outputs: [{ name: "", type: "address" }],
  },
] as const;

/**
 * The clone floor (issue 51 item 4): test/support/fixtures/CloneFloor.sol, owned by the hot wallet,
 * CREATE2-deploys `size` bare EIP-1167 clones and empties each in the same call, nothing else.
 */
async function cloneFloor(anvil: Anvil, token: Deployed, hot: HDAccount, size: number): Promise<GasFigure> {
  const floorFactory = await deployCompiled(anvil, "CloneFloor", hot);
  const ids = Array.from({ length: size }, (_, i) => forwarderId(`floor_${size}_${i}`));
  for (const id of ids) {
    const at = await anvil.client.readContract({
      address: floorFactory.address,
      abi: FLOOR_ABI,
      functionName: "forwarderAddress",
      args: [id],
    });
    await pay(anvil, token, at);
  }
  const data = encodeFunctionData({ abi: FLOOR_ABI, functionName: "flush", args: [ids, token.address] });
  const sent = await sendFrom(anvil, hot, { to: floorFactory.address, data });
  if (sent.status !== "success") throw new Error("the clone floor's flush reverted");
  return { name: `clone floor ×${size}`, perDeposit: sent.gasUsed / BigInt(size), transactions: 1, deposits: size };
}

/** The EIP-3009 test token (OpenZeppelin 5.7, built for cancun, which scripts/solidity.ts's paris settings cannot build). */
async function deployAuthorizationToken(anvil: Anvil): Promise<Deployed> {
  const { abi, bytecode } = compileFixture("AuthorizationToken");
  const account = anvil.accounts[0] as HDAccount;
  const wallet = createWalletClient({ account, transport: http(anvil.url, { retryCount: 0 }) });
  const hash = await wallet.deployContract({ abi, bytecode, args: ["USD Coin", "USDC", 6, "2"], chain: null });
  const receipt = await anvil.client.waitForTransactionReceipt({ hash, timeout: 20_000, pollingInterval: 50 });
  if (!receipt.contractAddress) throw new Error("AuthorizationToken was not deployed");
  return { address: getAddress(receipt.contractAddress), abi };
}

/**
 * EIP-3009: the payer holds exactly the deposit and signs; the hot wallet (which already holds the
 * token) submits receiveWithAuthorization and pays the whole transaction. With the same token's own
 * transfer beside it, as that token's floor.
 */
async function eip3009Figures(anvil: Anvil, hot: HDAccount): Promise<GasFigure[]> {
  const token = await deployAuthorizationToken(anvil);
  await pay(anvil, token, hot.address);
  const holder = anvil.accounts[7] as HDAccount;
  await pay(anvil, token, holder.address);
  const floorSent = await sendFrom(anvil, holder, { to: token.address, data: transferData(hot.address, DEPOSIT) });
  const payer = anvil.accounts[8] as HDAccount;
  await pay(anvil, token, payer.address);
  const authorization = {
    from: payer.address,
    to: hot.address,
    value: DEPOSIT,
    validAfter: 0n,
    validBefore: 4_000_000_000n,
    nonce: randomAuthorizationNonce(),
  };
  const eip712 = { name: "USD Coin", version: "2" };
  const typed = receiveAuthorizationTypedData(anvil.chainId, { address: token.address, eip712 }, authorization);
  const data = receiveWithAuthorizationData(authorization, await payer.signTypedData(typed));
  const sent = await sendFrom(anvil, hot, { to: token.address, data });
  if (floorSent.status !== "success" || sent.status !== "success") throw new Error("EIP-3009 payment failed");
  return [
    { name: "EIP-3009 token: one transfer", perDeposit: floorSent.gasUsed, transactions: 1, deposits: 1 },
    { name: "EIP-3009 receiveWithAuthorization", perDeposit: sent.gasUsed, transactions: 1, deposits: 1 },
  ];
}

/**
 * Permit2 with the OpenZeppelin token (no EIP-3009, as USDT): the payer's one-time approval of Permit2, then
 * the hot wallet submits permitWitnessTransferFrom for the signed invoice and pays the whole
 * transaction. The page's nonces are random, so each payment sets a bit in a new bitmap word.
 */
async function permit2Figures(anvil: Anvil, token: Deployed, hot: HDAccount): Promise<GasFigure[]> {
  await anvil.rpc("anvil_setCode", [PERMIT2_ADDRESS, permit2RuntimeCode()]);
  const payer = anvil.accounts[9] as HDAccount;
  await pay(anvil, token, payer.address);
  const approveData = encodeFunctionData({
    abi: erc20Abi,
    functionName: "approve",
    args: [PERMIT2_ADDRESS, maxUint256],
  });
  const approved = await sendFrom(anvil, payer, { to: token.address, data: approveData });
  const permit = {
    from: payer.address,
    token: token.address,
    amount: DEPOSIT,
    spender: hot.address,
    nonce: randomPermit2Nonce(),
    deadline: 4_000_000_000n,
    invoiceId: "inv_bench_permit2",
  };
  const signature = await payer.signTypedData(permit2TypedData(anvil.chainId, permit));
  const sent = await sendFrom(anvil, hot, {
    to: PERMIT2_ADDRESS,
    data: permitWitnessTransferFromData(permit, signature),
  });
  if (approved.status !== "success" || sent.status !== "success") throw new Error("Permit2 payment failed");
  return [
    { name: "Permit2 permitWitnessTransferFrom", perDeposit: sent.gasUsed, transactions: 1, deposits: 1 },
    { name: "payer: approve Permit2 (once)", perDeposit: approved.gasUsed, transactions: 1, deposits: 1 },
  ];
}

/** Our first and repeated flushes per batch size, and the clone floor at the same size (issue 51 item 4). */
export interface CloneFloorFigure {
  size: number;
  first: bigint;
  again: bigint;
  floor: bigint;
}

/** Every figure, measured on a fresh anvil, with the OpenZeppelin ERC-20 fixture as the token. */
export async function measureForwarderGas(): Promise<{ figures: GasFigure[]; clones: CloneFloorFigure[] }> {
  const anvil = await startAnvil({ chainId: 1 });
  try {
    const hot = mnemonicToAccount(generateMnemonic(english), { addressIndex: 0 });
    await anvil.rpc("anvil_setBalance", [hot.address, `0x${parseEther("100").toString(16)}`]);
    const token = await deployCompiled(anvil, "OzToken", anvil.accounts[0] as HDAccount);
    // The hot wallet already holds the token, as it does in service: its balance slot is not new.
    await pay(anvil, token, hot.address);
    const deployed = await deployFactory({ client: anvil.client, signer: hot });
    if (!deployed.ok) throw new Error(`factory: ${deployed.error}`);
    const figures = [await floor(anvil, token, hot.address), await fundAndSweep(anvil, token, hot)];
    const clones: CloneFloorFigure[] = [];
    for (const size of BATCHES) {
      const [first, again] = await flushBatch(anvil, token, hot, size, `bench_${size}`);
      const floorFigure = await cloneFloor(anvil, token, hot, size);
      figures.push(first, again, floorFigure);
      clones.push({ size, first: first.perDeposit, again: again.perDeposit, floor: floorFigure.perDeposit });
    }
    figures.push(...(await eip3009Figures(anvil, hot)), ...(await permit2Figures(anvil, token, hot)));
    figures.push(await payerTransfer(anvil, token));
    // The payer's side, not the operator's: native coin into a forwarder already deployed runs its code.
    const payer = anvil.accounts[6] as HDAccount;
    const paid = await sendFrom(anvil, payer, {
      to: forwarderAddress(hot.address, forwarderId("bench_1_0")),
      value: 1n,
    });
    figures.push({
      name: "payer: ETH into a deployed forwarder",
      perDeposit: paid.gasUsed,
      transactions: 1,
      deposits: 1,
    });
    return { figures, clones };
  } finally {
    await anvil.close();
  }
}

/** The item-4 lines: our first deposit per batch size beside the clone floor, with the verdict (ours <= floor). */
export function cloneFloorLines(clones: readonly CloneFloorFigure[]): string[] {
  return clones.map((c) => {
    const verdict = c.first <= c.floor ? "ok: at most the floor" : `OVER the floor by ${c.first - c.floor}`;
    return `  batch ×${String(c.size).padEnd(3)} first deposit ${String(c.first).padStart(7)}  clone floor ${String(c.floor).padStart(7)}  again ${String(c.again).padStart(7)}  ${verdict}`;
  });
}

async function main(): Promise<void> {
  const { figures, clones } = await measureForwarderGas();
  const floorGas = figures[0]?.perDeposit ?? 1n;
  process.stdout.write(
    "gas the operator pays per settled ERC-20 deposit, anvil 1.7.1, OpenZeppelin ERC-20 (transfer + flush: the payer's transfer excluded;\n" +
      "EIP-3009 and Permit2: the hot wallet's whole submission, the payer pays no gas; lines marked payer: are the payer's):\n",
  );
  for (const f of figures) {
    const ratio = (Number(f.perDeposit) / Number(floorGas)).toFixed(2);
    process.stdout.write(
      `  ${f.name.padEnd(36)} ${String(f.perDeposit).padStart(7)} gas  ×${ratio} floor  (${f.transactions} tx for ${f.deposits})\n`,
    );
  }
  process.stdout.write(
    "\nfirst deposit to a forwarder vs the clone floor (bare EIP-1167 clone CREATE2-deployed and emptied in the same call), gas per deposit:\n",
  );
  for (const line of cloneFloorLines(clones)) process.stdout.write(`${line}\n`);
}

if (process.argv[1] && import.meta.filename === process.argv[1]) {
  main().catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  });
}
