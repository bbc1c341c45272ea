// Payout destinations that can never reach the payer (issue 42): the zero address, a token's contract and the service's own addresses are refused as invalid_address.
import type { Wallet } from "../domain/chain.ts";
import { addressKey } from "../domain/evmAddress.ts";
import {
  DEPLOYMENT_PROXY,
  FACTORY_VERSIONS,
  factoryAddress,
  forwarderImplementationAddress,
} from "../domain/forwarders.ts";
import { type RecordedAddressKind, recordedAddressKind } from "../store/serviceAddresses.ts";
import type { Tx } from "../store/store.ts";

const ZERO_ADDRESS = "0x0000000000000000000000000000000000000000";

type DestinationKind = RecordedAddressKind | "zero" | "contract";

/** Why each kind cannot receive a payer's money: the refusal's detail. */
const WHY: Readonly<Record<DestinationKind, string>> = {
  zero: "the zero address burns what it receives",
  token_contract: "it is a token's contract, not a wallet: a transfer to it is lost",
  contract: "it is a contract this service uses, not a wallet",
  deposit_address: "it is a deposit address of this service, not the payer's",
  factory: "it is this service's forwarder factory, not the payer's",
  hot_wallet: "it is this service's hot wallet, not the payer's",
};

/** What the current hot wallet makes, known without the database: the wallet, its factories (every version) and their forwarder implementations. */
function computedKind(wallet: Wallet | null, key: string): DestinationKind | null {
  if (key === ZERO_ADDRESS) return "zero";
  if (key === DEPLOYMENT_PROXY) return "contract";
  if (wallet === null) return null;
  if (addressKey(wallet.hotAddress) === key) return "hot_wallet";
  for (const version of FACTORY_VERSIONS) {
    const factory = factoryAddress(wallet.hotAddress, version);
    if (addressKey(factory) === key) return "factory";
    if (addressKey(forwarderImplementationAddress(factory)) === key) return "contract";
  }
  return null;
}

/**
 * Why `address` (checksummed) cannot be a payer's destination, or null when nothing says so. The
 * payer must give an address they control; these would keep or burn the money (a hot wallet or a
 * forwarder would credit the service itself, and a deposit forwarder's money flows back to it).
 */
export async function destinationNotThePayers(tx: Tx, wallet: Wallet | null, address: string): Promise<string | null> {
  const kind = computedKind(wallet, addressKey(address)) ?? (await recordedAddressKind(tx, address));
  return kind === null ? null : WHY[kind];
}
