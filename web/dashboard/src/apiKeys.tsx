// The API keys page: a new key, full or scoped (scopes and client address ranges, product §31), its secret shown once; the keys with their scopes, ranges and last use.
import { useEffect, useState } from "preact/hooks";
import { api, type Me, type ResponseBody } from "./api.ts";
import type { operations } from "./generated/api.ts";
import { ErrorNote, message, when, withStepUp } from "./ui.tsx";

type ApiKey = ResponseBody<"DashboardListApiKeys">[number];
type NewKey = NonNullable<operations["DashboardCreateApiKey"]["requestBody"]>["content"]["application/json"];
type Scope = NonNullable<NewKey["scopes"]>[number];

/** Every scope, in the order the form shows them, with what it lets a key do (docs/api-keys.md). */
const SCOPES: readonly { scope: Scope; label: string }[] = [
  { scope: "read", label: "Read everything (every GET)" },
  { scope: "invoices:read", label: "Read invoices" },
  { scope: "invoices:write", label: "Create invoices, estimate fees, x402" },
  { scope: "payment_links:write", label: "Create and change payment links" },
  { scope: "refunds:write", label: "Refunds" },
  { scope: "withdrawals:write", label: "Withdrawals" },
  { scope: "subscriptions:write", label: "Plans and subscriptions" },
  { scope: "deposit_addresses:write", label: "Deposit addresses" },
];

/** What the form asks for: no scope ticked is a full key, no range is anywhere. */
function newKeyBody(scopes: Scope[], ranges: string): NewKey {
  const allowed = ranges
    .split(/[\s,]+/)
    .map((r) => r.trim())
    .filter((r) => r !== "");
  return {
    ...(scopes.length > 0 ? { scopes } : {}),
    ...(allowed.length > 0 ? { allowedAddresses: allowed } : {}),
  };
}

function NewKeyForm({ onCreate }: { onCreate: (body: NewKey) => Promise<void> }) {
  const [scopes, setScopes] = useState<Scope[]>([]);
  const [ranges, setRanges] = useState("");
  const toggle = (scope: Scope, on: boolean) =>
    setScopes((now) => (on ? [...now, scope] : now.filter((s) => s !== scope)));
  return (
    <form
      class="card"
      data-testid="new-api-key-form"
      onSubmit={(e) => {
        e.preventDefault();
        onCreate(newKeyBody(scopes, ranges)).then(() => {
          setScopes([]);
          setRanges("");
        });
      }}
    >
      <h2>New key</h2>
      <fieldset class="scopes">
        <legend>Scopes (none ticked: a full key, allowed everything)</legend>
        {SCOPES.map(({ scope, label }) => (
          <label key={scope} class="scope-choice">
            <input
              type="checkbox"
              name="scope"
              value={scope}
              checked={scopes.includes(scope)}
              onChange={(e) => toggle(scope, e.currentTarget.checked)}
            />{" "}
            <code>{scope}</code> {label}
          </label>
        ))}
      </fieldset>
      <label>
        Allowed client addresses (CIDR ranges, comma-separated; empty: anywhere)
        <input
          name="allowedAddresses"
          value={ranges}
          placeholder="203.0.113.0/24, 2001:db8::/32"
          onInput={(e) => setRanges(e.currentTarget.value)}
        />
      </label>
      <button type="submit" class="primary">
        Create key
      </button>
    </form>
  );
}

function CreatedKey({ created, onDone }: { created: { apiKey: string; secretKey: string }; onDone: () => void }) {
  return (
    <div class="card reveal" role="status">
      <h2>Your new key</h2>
      <p>Copy the secret now: it is shown once and never again.</p>
      <label>
        API key
        <input readOnly value={created.apiKey} data-testid="new-api-key" onFocus={(e) => e.currentTarget.select()} />
      </label>
      <label>
        Secret key
        <input
          readOnly
          value={created.secretKey}
          data-testid="new-secret-key"
          onFocus={(e) => e.currentTarget.select()}
        />
      </label>
      <button type="button" onClick={() => navigator.clipboard?.writeText(created.secretKey)}>
        Copy secret
      </button>{" "}
      <button type="button" onClick={onDone}>
        Done
      </button>
    </div>
  );
}

function KeyRow({ k, onRevoke }: { k: ApiKey; onRevoke: ((id: string) => void) | null }) {
  return (
    <tr>
      <td>
        <code>{k.prefix}…</code>
      </td>
      <td data-testid="key-scopes">
        {k.scopes
          ? k.scopes.map((s) => (
              <code key={s} class="token">
                {s}
              </code>
            ))
          : "Full access"}
      </td>
      <td>
        {k.allowedAddresses
          ? k.allowedAddresses.map((r) => (
              <code key={r} class="token">
                {r}
              </code>
            ))
          : "Anywhere"}
      </td>
      <td>{when(k.createdAt)}</td>
      <td>
        {when(k.lastUsedAt)}
        {k.lastUsedFrom && (
          <>
            {" "}
            from <code>{k.lastUsedFrom}</code>
          </>
        )}
      </td>
      <td>{k.revokedAt ? <span class="badge">Revoked</span> : <span class="badge ok">Active</span>}</td>
      <td>
        {onRevoke && !k.revokedAt && (
          <button type="button" class="danger" onClick={() => onRevoke(k.id)} aria-label={`Revoke ${k.prefix}`}>
            Revoke
          </button>
        )}
      </td>
    </tr>
  );
}

export function ApiKeysPage({ me }: { me: Me }) {
  const [keys, setKeys] = useState<ApiKey[]>([]);
  const [created, setCreated] = useState<{ apiKey: string; secretKey: string } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const canManage = me.user.role !== "viewer";
  const load = () => api<ApiKey[]>("GET", "/api-keys").then(setKeys, (e) => setError(message(e)));
  useEffect(() => {
    load();
  }, []);
  const create = async (body: NewKey) => {
    setError(null);
    try {
      setCreated(await withStepUp(() => api<ResponseBody<"DashboardCreateApiKey">>("POST", "/api-keys", body)));
      await load();
    } catch (e) {
      setError(message(e));
      throw e;
    }
  };
  const revoke = async (id: string) => {
    if (!confirm("Revoke this key? Requests using it will fail at once.")) return;
    try {
      await api("DELETE", `/api-keys/${id}`);
      await load();
    } catch (e) {
      setError(message(e));
    }
  };
  return (
    <section>
      <h1>API keys</h1>
      <ErrorNote error={error} />
      {created && <CreatedKey created={created} onDone={() => setCreated(null)} />}
      {canManage && !created && <NewKeyForm onCreate={create} />}
      <table>
        <thead>
          <tr>
            <th>Key</th>
            <th>Scopes</th>
            <th>Allowed from</th>
            <th>Created</th>
            <th>Last used</th>
            <th>Status</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {keys.map((k) => (
            <KeyRow key={k.id} k={k} onRevoke={canManage ? revoke : null} />
          ))}
        </tbody>
      </table>
    </section>
  );
}
