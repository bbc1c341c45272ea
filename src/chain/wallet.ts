// The service's local wallet (product §12, §24): the hot wallet's signer m/44'/60'/0'/0/0 and the derived deposit keys m/44'/60'/0'/0/n from WALLET_MNEMONIC.
import { mnemonicToSeedSync } from "@scure/bip39";
import { type HDAccount, HDKey, hdKeyToAccount, mnemonicToAccount } from "viem/accounts";
import type { DepositKeys, Signer, Wallet } from "../domain/chain.ts";
import { normalizeMnemonic } from "../domain/mnemonic.ts";
import { assert } from "../domain/result.ts";

/** Highest deposit index: BIP-32 non-hardened children end at 2^31 - 1. */
export const MAX_DEPOSIT_INDEX = 2 ** 31 - 1;

/** A wallet whose deposit keys are derived here (WALLET_MNEMONIC). */
export interface LocalWallet extends Wallet {
  readonly deposits: DepositKeys;
}

/** The Signer of a key held in this process. */
export function localSigner(account: HDAccount): Signer {
  return { address: account.address, signTransaction: (tx) => account.signTransaction(tx) };
}

export function hdWallet(phrase: string): LocalWallet {
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
  const signer = localSigner(hot);
  return {
    // One key signs on every network.
    hot: () => signer,
    hotAddress: hot.address,
    signers: null,
    deposits: {
      key: (index) => {
        assert(index >= 1, "deposit indexes start at 1 (0 is the hot wallet)");
        return account(index);
      },
      address: (index) => account(index).address,
    },
  };
}
