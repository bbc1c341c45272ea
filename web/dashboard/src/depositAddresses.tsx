// The deposit addresses page (product §30): the merchant's customers' addresses (filter by customer, create one, deactivate or activate it) and the deposits of the one selected.
import { useEffect, useState } from "preact/hooks";
import { api, type Me, type ResponseBody } from "./api.ts";
import { ErrorNote, useActions, when, withStepUp } from "./ui.tsx";

type DepositAddress = ResponseBody<"DashboardListDepositAddresses">["data"][number];
type Deposit = ResponseBody<"DashboardListDeposits">["data"][number];

/** "0x1234ab…cdef": the whole hash is its title. */
function short(hash: string): string {
  return hash.length <= 16 ? hash : `${hash.slice(0, 8)}…${hash.slice(-6)}`;
}

/** Green once credited, amber while it waits (confirming, screening, the merchant), red when blocked, grey otherwise. */
function DepositBadge({ status }: { status: Deposit["status"] }) {
  const tone: Record<Deposit["status"], string> = {
    completed: " ok",
    pending: " warn",
    aml_check: " warn",
    held: " warn",
    blocked: " bad",
    refunded: "",
    dust: "",
    reversed: "",
  };
  return <span class={`badge${tone[status]}`}>{status.replace("_", " ")}</span>;
}

export function DepositAddressesPage({ me }: { me: Me }) {
  const canManage = me.user.role === "owner" || me.user.role === "developer";
  const [creating, setCreating] = useState(false);
  const [customer, setCustomer] = useState("");
  const [filter, setFilter] = useState("");
  const [rows, setRows] = useState<DepositAddress[]>([]);
  const [hasMore, setHasMore] = useState(false);
  const [selected, setSelected] = useState<DepositAddress | null>(null);
  const { note, setNote, error, run } = useActions();
  const load = (after?: string) =>
    run(async () => {
      const params = new URLSearchParams({ limit: "25" });
      if (filter) params.set("customer", filter);
      if (after) params.set("starting_after", after);
      const page = await api<ResponseBody<"DashboardListDepositAddresses">>("GET", `/deposit-addresses?${params}`);
      setRows((old) => (after ? [...old, ...page.data] : page.data));
      setHasMore(page.has_more);
    });
  useEffect(() => {
    load();
  }, [filter]);
  const setActive = (address: DepositAddress, active: boolean) =>
    run(async () => {
      const done = await api<DepositAddress>("PATCH", `/deposit-addresses/${encodeURIComponent(address.id)}`, {
        active,
      });
      setRows((old) => old.map((row) => (row.id === done.id ? done : row)));
      if (selected?.id === done.id) setSelected(done);
      setNote(
        active
          ? `${done.customer}'s ${done.currency} address is active: its transfers are credited.`
          : `${done.customer}'s ${done.currency} address is inactive: its transfers are held for your decision.`,
      );
    });
  return (
    <section>
      <header class="row">
        <h1>Deposit addresses</h1>
        {canManage && (
          <button type="button" class="primary" onClick={() => setCreating(!creating)} aria-expanded={creating}>
            Create address
          </button>
        )}
      </header>
      <p class="muted">
        Each customer gets one address per currency, the same on every network of the currency; every confirmed transfer
        to it is a deposit credited to your balance with its fees.
      </p>
      {creating && (
        <AddressForm
          onCreated={async (made) => {
            setCreating(false);
            setSelected(made);
            // After the reload: loading clears the notes.
            await load();
            setNote(`${made.customer}'s ${made.currency} address: ${made.address}`);
          }}
        />
      )}
      <form
        class="row list-header"
        aria-label="Filter by customer"
        onSubmit={(e) => {
          e.preventDefault();
          setFilter(customer.trim());
        }}
      >
        <label>
          Customer
          <input
            name="customer"
            value={customer}
            onInput={(e) => setCustomer(e.currentTarget.value)}
            placeholder="your reference"
          />
        </label>
        <button type="submit">Filter</button>
        {filter && (
          <button
            type="button"
            onClick={() => {
              setCustomer("");
              setFilter("");
            }}
          >
            Clear
          </button>
        )}
      </form>
      <ErrorNote error={error} />
      {note && (
        <p class="note" role="status">
          {note}
        </p>
      )}
      <AddressTable
        rows={rows}
        selected={selected}
        onSelect={setSelected}
        onSetActive={canManage ? setActive : undefined}
      />
      {hasMore && (
        <p>
          <button type="button" onClick={() => load(rows.at(-1)?.id)}>
            Load more
          </button>
        </p>
      )}
      {selected && <DepositList key={selected.id} address={selected} canDecide={me.user.role === "owner"} />}
    </section>
  );
}

function AddressForm({ onCreated }: { onCreated: (made: DepositAddress) => Promise<void> }) {
  const [fields, setFields] = useState({ customer: "", currency: "USDT", callbackUrl: "" });
  const { error, run } = useActions();
  const set = (name: keyof typeof fields) => (e: { currentTarget: { value: string } }) =>
    setFields({ ...fields, [name]: e.currentTarget.value });
  const submit = (e: Event) => {
    e.preventDefault();
    run(async () => {
      const callbackUrl = fields.callbackUrl.trim();
      const made = await api<DepositAddress>("POST", "/deposit-addresses", {
        customer: fields.customer.trim(),
        currency: fields.currency.trim(),
        ...(callbackUrl === "" ? {} : { callbackUrl }),
      });
      await onCreated(made);
    });
  };
  return (
    <form class="card" onSubmit={submit} aria-label="Create a deposit address">
      <h2>New deposit address</h2>
      <div class="fields">
        <label>
          Customer (your reference)
          <input name="customer" value={fields.customer} onInput={set("customer")} required maxLength={200} />
        </label>
        <label>
          Currency
          <input name="currency" value={fields.currency} onInput={set("currency")} required />
        </label>
        <label>
          Callback URL (optional)
          <input name="callbackUrl" type="url" value={fields.callbackUrl} onInput={set("callbackUrl")} />
        </label>
      </div>
      <p class="muted small">The same customer and currency always answer the same address.</p>
      <ErrorNote error={error} />
      <button type="submit" class="primary">
        Create address
      </button>
    </form>
  );
}

function AddressTable({
  rows,
  selected,
  onSelect,
  onSetActive,
}: {
  rows: DepositAddress[];
  selected: DepositAddress | null;
  onSelect: (address: DepositAddress) => void;
  onSetActive: ((address: DepositAddress, active: boolean) => void) | undefined;
}) {
  return (
    <table aria-label="Deposit addresses">
      <thead>
        <tr>
          <th>Customer</th>
          <th>Currency</th>
          <th>Address</th>
          <th>Networks</th>
          <th>Status</th>
          <th>Created</th>
          <th />
        </tr>
      </thead>
      <tbody>
        {rows.map((a) => (
          <tr key={a.id} class={selected?.id === a.id ? "selected" : undefined}>
            <td>{a.customer}</td>
            <td>{a.currency}</td>
            <td>
              <code class="small">{a.address}</code>
              <div class="small">
                <a href={`/d/${encodeURIComponent(a.id)}`} target="_blank" rel="noopener">
                  Payer's page
                </a>
              </div>
            </td>
            <td>{a.networks.length === 0 ? <span class="muted">none now</span> : a.networks.join(", ")}</td>
            <td>{a.active ? <span class="badge ok">active</span> : <span class="badge warn">inactive</span>}</td>
            <td class="nowrap">{when(a.createdAt)}</td>
            <td>
              <div class="stack">
                <button
                  type="button"
                  onClick={() => onSelect(a)}
                  aria-pressed={selected?.id === a.id}
                  aria-label={`Deposits of ${a.customer} in ${a.currency}`}
                >
                  Deposits
                </button>
                {onSetActive && (
                  <button
                    type="button"
                    class={a.active ? "danger" : undefined}
                    onClick={() => onSetActive(a, !a.active)}
                    aria-label={`${a.active ? "Deactivate" : "Activate"} ${a.customer}'s ${a.currency} address`}
                  >
                    {a.active ? "Deactivate" : "Activate"}
                  </button>
                )}
              </div>
            </td>
          </tr>
        ))}
        {rows.length === 0 && (
          <tr>
            <td colSpan={7} class="muted">
              No deposit addresses match.
            </td>
          </tr>
        )}
      </tbody>
    </table>
  );
}

/** A held deposit's decision (owner only): credit it, or refund it by claim link, whose link shows once. */
function HeldDecision({
  deposit,
  onDecided,
}: {
  deposit: Deposit;
  onDecided: (d: Deposit, claimUrl?: string) => void;
}) {
  const { error, run } = useActions();
  const decide = (action: "credit" | "refund") =>
    run(async () => {
      const done = await withStepUp(() =>
        api<ResponseBody<"DashboardResolveDeposit">>("POST", `/deposits/${encodeURIComponent(deposit.id)}/resolve`, {
          action,
        }),
      );
      const { claimUrl, ...refund } = done.refund ?? { claimUrl: undefined };
      onDecided({ ...done, refund: done.refund ? (refund as Deposit["refund"]) : null }, claimUrl);
    });
  return (
    <div class="actions">
      <button type="button" onClick={() => decide("credit")} aria-label={`Credit deposit ${deposit.id}`}>
        Credit
      </button>
      <button type="button" onClick={() => decide("refund")} aria-label={`Refund deposit ${deposit.id}`}>
        Refund
      </button>
      <ErrorNote error={error} />
    </div>
  );
}

/** Where a deposit's refund by claim link is: waiting for the payer, paid, or ended (the deposit held again). */
function RefundLine({ refund }: { refund: NonNullable<Deposit["refund"]> }) {
  const to = refund.toAddress ? ` to ${short(refund.toAddress)}` : "";
  return (
    <div class="muted small">
      refund {refund.amount} {refund.status.replace("_", " ")}
      {to}
    </div>
  );
}

function DepositList({ address, canDecide }: { address: DepositAddress; canDecide: boolean }) {
  const [rows, setRows] = useState<Deposit[]>([]);
  const [hasMore, setHasMore] = useState(false);
  const [claim, setClaim] = useState<{ deposit: string; url: string } | null>(null);
  const { error, run } = useActions();
  const decided = (done: Deposit, claimUrl?: string) => {
    setRows((old) => old.map((row) => (row.id === done.id ? done : row)));
    setClaim(claimUrl ? { deposit: done.id, url: claimUrl } : null);
  };
  const load = (after?: string) =>
    run(async () => {
      const params = new URLSearchParams({ limit: "25", depositAddressId: address.id });
      if (after) params.set("starting_after", after);
      const page = await api<ResponseBody<"DashboardListDeposits">>("GET", `/deposits?${params}`);
      setRows((old) => (after ? [...old, ...page.data] : page.data));
      setHasMore(page.has_more);
    });
  useEffect(() => {
    load();
  }, []);
  const label = `Deposits of ${address.customer} in ${address.currency}`;
  return (
    <>
      <h2>{label}</h2>
      <ErrorNote error={error} />
      {claim && (
        <p class="note" role="status">
          Send this link to the payer of deposit {claim.deposit}; it is shown only now:{" "}
          <code class="small">{claim.url}</code>
        </p>
      )}
      <table aria-label={label}>
        <thead>
          <tr>
            <th>Status</th>
            <th>Amount</th>
            <th>Fees</th>
            <th>Credited</th>
            <th>Network</th>
            <th>Transaction</th>
            <th>Seen</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((d) => (
            <tr key={d.id}>
              <td>
                <DepositBadge status={d.status} />
                {d.refund && <RefundLine refund={d.refund} />}
                {canDecide && d.status === "held" && <HeldDecision deposit={d} onDecided={decided} />}
              </td>
              <td class="nowrap">
                {d.amount} {d.currency}
              </td>
              <td class="nowrap">
                {d.merchantFee === null ? (
                  "—"
                ) : (
                  <>
                    {d.merchantFee} + {d.networkFee ?? "0"} network
                  </>
                )}
              </td>
              <td class="nowrap">{d.creditedAmount ?? "—"}</td>
              <td>{d.network}</td>
              <td>
                <code class="small" title={d.txHash}>
                  {short(d.txHash)}
                </code>
                <div class="muted small">from {short(d.fromAddress)}</div>
              </td>
              <td class="nowrap">{when(d.createdAt)}</td>
            </tr>
          ))}
          {rows.length === 0 && (
            <tr>
              <td colSpan={7} class="muted">
                No deposits yet: a transfer to {address.address} shows here once the network has it.
              </td>
            </tr>
          )}
        </tbody>
      </table>
      {hasMore && (
        <p>
          <button type="button" onClick={() => load(rows.at(-1)?.id)}>
            Load more
          </button>
        </p>
      )}
    </>
  );
}
