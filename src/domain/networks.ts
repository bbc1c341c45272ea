// Rules of an operator's network configuration (product §12): names, confirmations, RPC and explorer URLs.
import { err, ok, type Result } from "./result.ts";

export const DEFAULT_CONFIRMATIONS = 12;
export const MAX_CONFIRMATIONS = 1000;

/** Catalog network names: lowercase words; `card` is the fiat rail, never a chain. */
export function checkNetworkName(name: string): Result<string, "invalid_network"> {
  if (!/^[a-z0-9][a-z0-9_-]{0,31}$/.test(name) || name === "card") {
    return err("invalid_network", "a network name is 1 to 32 lowercase letters, digits, - or _ (and not `card`)");
  }
  return ok(name);
}

export function checkRpcUrl(text: string): Result<string, "invalid_rpc_url"> {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return err("invalid_rpc_url", "rpcUrl must be an absolute http(s) URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return err("invalid_rpc_url", "rpcUrl must be an http(s) URL");
  }
  return ok(text);
}

/**
 * The RPC URL as it may be shown: scheme and host only. A provider key hides in the path, the
 * query or the user info, so none of them is shown.
 */
export function maskRpcUrl(text: string): string {
  try {
    const url = new URL(text);
    const hidden = url.pathname.length > 1 || url.search !== "" || url.username !== "" || url.password !== "";
    return `${url.protocol}//${url.host}${hidden ? "/…" : "/"}`;
  } catch {
    return "…";
  }
}

/**
 * An explorer URL template for transaction links: http(s), with `{tx}` where the transaction hash
 * goes, e.g. `https://etherscan.io/tx/{tx}`. Without `{tx}` the hash is appended.
 */
export function checkExplorerUrl(text: string): Result<string, "invalid_explorer_url"> {
  let url: URL;
  try {
    url = new URL(text.replaceAll("{tx}", "0"));
  } catch {
    return err("invalid_explorer_url", "explorerUrl must be an absolute http(s) URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return err("invalid_explorer_url", "explorerUrl must be an http(s) URL");
  }
  return ok(text);
}

/** The link to a transaction with an explorer template (see checkExplorerUrl). */
export function explorerTxUrl(template: string, txHash: string): string {
  return template.includes("{tx}") ? template.replaceAll("{tx}", txHash) : `${template.replace(/\/+$/, "")}/${txHash}`;
}
