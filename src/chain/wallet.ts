// The service's HD wallet (product §12): the hot wallet m/44'/60'/0'/0/0 and deposit addresses m/44'/60'/0'/0/n from WALLET_MNEMONIC.
import { mnemonicToSeedSync } from "@scure/bip39";
import { type HDAccount, HDKey, hdKeyToAccount, mnemonicToAccount } from "viem/accounts";
import type { Wallet } from "../domain/chain.ts";
import { normalizeMnemonic } from "../domain/mnemonic.ts";
import { assert } from "../domain/result.ts";

/** Highest deposit index: BIP-32 non-hardened children end at 2^31 - 1. */
export const MAX_DEPOSIT_INDEX = 2 ** 31 - 1;

export function hdWallet(phrase: string): Wallet {
  const mnemonic = normalizeMnemonic(phrase);
  if (mnemonic === null) throw new Error("not a valid BIP-39 phrase");
  // The phrase's seed costs PBKDF2 (2048 rounds, ~80 ms): derive it once, as mnemonicToAccount
  // does inside, and children from it (~9 ms each); keep the accounts already derived, bounded.
  const root = HDKey.fromMasterSeed(mnemonicToSeedSync(mnemonic));
  const accounts = new Map<number, HDAccount>();
  const account = (index: number): HDAccount => {
    assert(
      Number.isInteger(index) && index >= 0 && index <= MAX_DEPOSIT_INDEX,
      `deposit index ${index} is outside 0..2^31-1`,
    );
    const known = accounts.get(index);
    if (known) return known;
    const derived = hdKeyToAccount(root, { addressIndex: index });
    if (accounts.size >= 1000) accounts.delete(accounts.keys().next().value as number);
    accounts.set(index, derived);
    return derived;
  };
  const hot = mnemonicToAccount(mnemonic, { addressIndex: 0 });
  assert(hot.address === account(0).address, "one derivation path for the hot wallet");
  return {
    hot: () => hot,
    deposit: (index) => {
      assert(index >= 1, "deposit indexes start at 1 (0 is the hot wallet)");
      return account(index);
    },
    depositAddress: (index) => account(index).address,
    hotAddress: hot.address,
  };
}
