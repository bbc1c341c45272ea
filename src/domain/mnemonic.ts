// WALLET_MNEMONIC's check, apart from the wallet: configuration reads it in every mode, and the wallet's modules (viem) load only in live mode.
import { validateMnemonic } from "@scure/bip39";
import { wordlist as english } from "@scure/bip39/wordlists/english";

/** The words of a BIP-39 phrase as written (single spaces, lowercase), or null when it is not a valid English phrase. */
export function normalizeMnemonic(phrase: string): string | null {
  const words = phrase.trim().toLowerCase().split(/\s+/);
  const normalized = words.join(" ");
  return validateMnemonic(normalized, english) ? normalized : null;
}
