// The money pages: withdrawal methods, withdrawals (list, detail, withdraw form), refunds (list, detail, refund form) and the ledger of each balance.
import { useEffect, useState } from "preact/hooks";
import { api, type Me, type ResponseBody } from "./api.ts";
import { StatusBadge } from "./invoices.tsx";
import { ErrorNote, message, navigate, when, withStepUp } from "./ui.tsx";

type Method = ResponseBody<"DashboardListWithdrawalMethods">[number];

type Withdrawal = ResponseBody<"DashboardListWithdrawals">["data"][number];

type Refund = ResponseBody<"DashboardListRefunds">["data"][number];

type LedgerEntry = ResponseBody<"DashboardLedger">["items"][number];

/**
 * The request id of a money form: made once per form, so a double click or a retry after a lost
 * answer is the same operation. crypto.randomUUID needs a secure context; getRandomValues does not.
 */
function newRequestId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x40;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  const hex = [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

function usable(method: Method): boolean {
  return method.disabledAt === null && (method.usableFrom === null || Date.parse(method.usableFrom) <= Date.now());
}

function methodState(method: Method): string {
  if (method.disabledAt !== null) return "disabled";
  if (method.usableFrom !== null && Date.parse(method.usableFrom) > Date.now())
    return `cooling off until ${when(method.usableFrom)}`;
  return "active";
}

function Link({ to, children }: { to: string; children: preact.ComponentChildren }) {
  return (
    <a
      href={`/dashboard/${to}`}
      onClick={(e) => {
        e.preventDefault();
        navigate(to);
      }}
    >
      {children}
    </a>
  );
}

export function WithdrawalMethodsPage({ me }: { me: Me }) {
  const [methods, setMethods] = useState<Method[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [currency, setCurrency] = useState("USDT");
  const [address, setAddress] = useState("");
  const [label, setLabel] = useState("");
  const [note, setNote] = useState<string | null>(null);
  const isOwner = me.user.role === "owner";
  const load = () => api<Method[]>("GET", "/withdrawal-methods").then(setMethods, (e) => setError(message(e)));
  useEffect(() => {
    load();
  }, []);
  const act = async (work: () => Promise<unknown>, done: string) => {
    setError(null);
    setNote(null);
    try {
      await withStepUp(work);
      setNote(done);
      await load();
    } catch (e) {
      setError(message(e));
    }
  };
  const add = (e: Event) => {
    e.preventDefault();
    act(
      () =>
        api("POST", "/withdrawal-methods", {
          currency: currency.trim(),
          address: address.trim(),
          ...(label.trim() ? { label: label.trim() } : {}),
        }).then(() => {
          setAddress("");
          setLabel("");
        }),
      "Withdrawal method added.",
    );
  };
  const rename = (m: Method) => {
    const next = prompt("Label (empty to clear)", m.label ?? "");
    if (next === null) return;
    act(
      () => api("PATCH", `/withdrawal-methods/${m.id}`, { label: next.trim() === "" ? null : next.trim() }),
      "Label saved.",
    );
  };
  const disable = (m: Method) => {
    if (!confirm(`Disable method #${m.id}? It will take no new withdrawals.`)) return;
    act(() => api("POST", `/withdrawal-methods/${m.id}/disable`), "Withdrawal method disabled.");
  };
  return (
    <section>
      <h1>Withdrawal methods</h1>
      <ErrorNote error={error} />
      {note && (
        <p class="note" role="status">
          {note}
        </p>
      )}
      <table>
        <thead>
          <tr>
            <th>Id</th>
            <th>Currency</th>
            <th>Address</th>
            <th>Label</th>
            <th>State</th>
            {isOwner && <th>Actions</th>}
          </tr>
        </thead>
        <tbody>
          {methods.map((m) => (
            <tr key={m.id}>
              <td>#{m.id}</td>
              <td>{m.currency}</td>
              <td>
                <code>{m.address}</code>
              </td>
              <td>{m.label ?? "—"}</td>
              <td>
                <span class={m.disabledAt ? "badge bad" : usable(m) ? "badge ok" : "badge"}>{methodState(m)}</span>
              </td>
              {isOwner && (
                <td class="actions">
                  <button type="button" onClick={() => rename(m)}>
                    Label
                  </button>{" "}
                  {m.disabledAt === null && (
                    <button type="button" class="danger" onClick={() => disable(m)}>
                      Disable
                    </button>
                  )}
                </td>
              )}
            </tr>
          ))}
          {methods.length === 0 && (
            <tr>
              <td colSpan={isOwner ? 6 : 5} class="muted">
                No withdrawal methods yet.
              </td>
            </tr>
          )}
        </tbody>
      </table>
      {isOwner && (
        <form class="card" onSubmit={add} aria-label="Add a withdrawal method">
          <h2>Add a withdrawal method</h2>
          <p class="muted small">
            A method added here takes withdrawals only after the cooling-off period your operator set; every owner sees
            the change in the audit log.
          </p>
          <div class="fields">
            <label>
              Currency
              <input name="currency" value={currency} onInput={(e) => setCurrency(e.currentTarget.value)} required />
            </label>
            <label>
              Address
              <input
                name="address"
                value={address}
                onInput={(e) => setAddress(e.currentTarget.value)}
                placeholder="0x…"
                required
              />
            </label>
            <label>
              Label
              <input name="label" value={label} onInput={(e) => setLabel(e.currentTarget.value)} />
            </label>
          </div>
          <button type="submit" class="primary">
            Add method
          </button>
        </form>
      )}
    </section>
  );
}

interface Filters {
  status: string;
  from: string;
  to: string;
}

/** A list's query: dates are whole UTC days, the upper one included (as the invoices list). */
function listParams(filters: Filters, startingAfter?: string): URLSearchParams {
  const params = new URLSearchParams({ limit: "25" });
  if (filters.status) params.set("status", filters.status);
  if (filters.from) params.set("created_gte", `${filters.from}T00:00:00.000Z`);
  if (filters.to) {
    const next = new Date(`${filters.to}T00:00:00.000Z`);
    next.setUTCDate(next.getUTCDate() + 1);
    params.set("created_lt", next.toISOString());
  }
  if (startingAfter) params.set("starting_after", startingAfter);
  return params;
}

/** A newest-first list with status and date filters and a "Load more" button. */
function usePagedList<T extends { id: string }>(path: string) {
  const [filters, setFilters] = useState<Filters>({ status: "", from: "", to: "" });
  const [applied, setApplied] = useState<Filters>(filters);
  const [rows, setRows] = useState<T[]>([]);
  const [hasMore, setHasMore] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const load = async (which: Filters, after?: string) => {
    setError(null);
    try {
      const page = await api<{ data: T[]; has_more: boolean }>("GET", `${path}?${listParams(which, after)}`);
      setRows((old) => (after ? [...old, ...page.data] : page.data));
      setHasMore(page.has_more);
    } catch (e) {
      setError(message(e));
    }
  };
  useEffect(() => {
    load(applied);
  }, [applied]);
  return {
    filters,
    setFilters,
    rows,
    hasMore,
    error,
    apply: () => setApplied({ ...filters }),
    reload: () => load(applied),
    more: () => load(applied, rows.at(-1)?.id),
  };
}

function FilterForm({ list, label }: { list: ReturnType<typeof usePagedList>; label: string }) {
  const set = (field: keyof Filters) => (e: { currentTarget: { value: string } }) =>
    list.setFilters({ ...list.filters, [field]: e.currentTarget.value });
  return (
    <form
      class="card inline filters"
      aria-label={label}
      onSubmit={(e) => {
        e.preventDefault();
        list.apply();
      }}
    >
      <label>
        Status
        <select name="status" value={list.filters.status} onChange={set("status")}>
          <option value="">Any</option>
          <option value="processing">processing</option>
          <option value="completed">completed</option>
          <option value="failed">failed</option>
        </select>
      </label>
      <label>
        Created from
        <input type="date" name="from" value={list.filters.from} onInput={set("from")} />
      </label>
      <label>
        to
        <input type="date" name="to" value={list.filters.to} onInput={set("to")} />
      </label>
      <button type="submit">Apply</button>
    </form>
  );
}

function PayoutFacts({
  item,
}: {
  item: {
    status: string;
    payoutState: string;
    payoutProcessorStatus: string | null;
    payoutProcessorTxId: string | null;
    explorerUrl: string | null;
    createdAt: string;
    updatedAt: string;
  };
}) {
  return (
    <>
      <dt>Status</dt>
      <dd>
        <StatusBadge status={item.status} />
      </dd>
      <dt>Payout</dt>
      <dd>
        {item.payoutState}
        {item.payoutProcessorStatus ? ` (processor: ${item.payoutProcessorStatus})` : ""}
      </dd>
      <dt>Transaction</dt>
      <dd>
        {item.payoutProcessorTxId ? <code>{item.payoutProcessorTxId}</code> : "—"}
        {item.explorerUrl && (
          <>
            {" "}
            <a href={item.explorerUrl} target="_blank" rel="noopener noreferrer">
              View on the explorer
            </a>
          </>
        )}
      </dd>
      <dt>Created</dt>
      <dd>{when(item.createdAt)}</dd>
      <dt>Updated</dt>
      <dd>{when(item.updatedAt)}</dd>
    </>
  );
}

export function WithdrawalsPage({ me, path }: { me: Me; path: string }) {
  const id = path.split("/")[1];
  return id ? <WithdrawalDetail id={decodeURIComponent(id)} /> : <WithdrawalList me={me} />;
}

/** A column of a list: its heading and what a row shows in it. */
interface Column<T> {
  head: string;
  num?: boolean;
  cell: (row: T) => preact.ComponentChildren;
}

/** A money list: the owner's form above, the filters, the rows newest first and "Load more". */
function PagedList<T extends { id: string }>({
  title,
  path,
  noun,
  columns,
  form,
}: {
  title: string;
  path: string;
  noun: string;
  columns: Column<T>[];
  form?: ((reload: () => void) => preact.ComponentChildren) | undefined;
}) {
  const list = usePagedList<T>(path);
  return (
    <section>
      <h1>{title}</h1>
      {form?.(list.reload)}
      <FilterForm list={list as ReturnType<typeof usePagedList>} label={`Filter ${noun}`} />
      <ErrorNote error={list.error} />
      <table>
        <thead>
          <tr>
            {columns.map((c) => (
              <th key={c.head} class={c.num ? "num" : undefined}>
                {c.head}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {list.rows.map((row) => (
            <tr key={row.id}>
              {columns.map((c) => (
                <td key={c.head} class={c.num ? "num" : undefined}>
                  {c.cell(row)}
                </td>
              ))}
            </tr>
          ))}
          {list.rows.length === 0 && (
            <tr>
              <td colSpan={columns.length} class="muted">
                No {noun} match.
              </td>
            </tr>
          )}
        </tbody>
      </table>
      {list.hasMore && (
        <p>
          <button type="button" onClick={list.more}>
            Load more
          </button>
        </p>
      )}
    </section>
  );
}

function WithdrawalList({ me }: { me: Me }) {
  return (
    <PagedList<Withdrawal>
      title="Withdrawals"
      path="/withdrawals"
      noun="withdrawals"
      form={me.user.role === "owner" ? (reload) => <WithdrawForm onDone={reload} /> : undefined}
      columns={[
        { head: "Created", cell: (w) => when(w.createdAt) },
        {
          head: "Withdrawal",
          cell: (w) => (
            <Link to={`withdrawals/${encodeURIComponent(w.id)}`}>
              <code>{w.id}</code>
            </Link>
          ),
        },
        { head: "Method", cell: (w) => `#${w.withdrawalMethodId} ${w.methodLabel ?? ""}` },
        { head: "Status", cell: (w) => <StatusBadge status={w.status} /> },
        { head: "Amount", num: true, cell: (w) => `${w.amount} ${w.currency}` },
      ]}
    />
  );
}

/** A method's whole name, as the picker and the review show it: id, currency, label and address. */
export function methodName(m: Pick<Method, "id" | "currency" | "label" | "address">): string {
  return `#${m.id} ${m.currency} · ${m.label === null ? "" : `${m.label} · `}${m.address}`;
}

type Review = ResponseBody<"DashboardReviewWithdrawal">;

/**
 * Two steps: "Review" asks the server what the withdrawal would debit, charge and deliver (its
 * rules and the balance, checked now; nothing is sent), then "Send" sends exactly what was
 * reviewed. Changing a field drops the review.
 */
function WithdrawForm({ onDone }: { onDone: () => void }) {
  const [methods, setMethods] = useState<Method[]>([]);
  const [methodId, setMethodId] = useState("");
  const [amount, setAmount] = useState("");
  const [review, setReview] = useState<Review | null>(null);
  const [requestId, setRequestId] = useState(newRequestId);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [done, setDone] = useState<string | null>(null);
  useEffect(() => {
    api<Method[]>("GET", "/withdrawal-methods").then(
      (all) => {
        const open = all.filter(usable);
        setMethods(open);
        if (open[0]) setMethodId(String(open[0].id));
      },
      (e) => setError(message(e)),
    );
  }, []);
  const method = methods.find((m) => String(m.id) === methodId);
  const fields = () =>
    method ? { currency: method.currency, amount: amount.trim(), withdrawalMethodId: method.id } : null;
  const step = async (work: () => Promise<void>) => {
    if (busy) return;
    setError(null);
    setDone(null);
    setBusy(true);
    try {
      await work();
    } catch (err) {
      setError(message(err));
    } finally {
      setBusy(false);
    }
  };
  const askReview = (e: Event) => {
    e.preventDefault();
    const body = fields();
    if (!body) return;
    void step(async () => setReview(await api<Review>("POST", "/withdrawals/review", body)));
  };
  const send = () => {
    if (!review) return;
    const body = { currency: review.currency, amount: review.amount, withdrawalMethodId: review.withdrawalMethodId };
    void step(async () => {
      // The same requestId on every attempt of this form: a repeat is the same withdrawal.
      const answer = await withStepUp(() =>
        api<ResponseBody<"DashboardWithdraw">>("POST", "/withdrawals", {
          requestId,
          ...body,
        }),
      );
      setDone(`Withdrawal of ${answer.request.amount} ${answer.request.currency} accepted (${answer.request.id}).`);
      setAmount("");
      setReview(null);
      setRequestId(newRequestId());
      onDone();
    });
  };
  const edit = (apply: () => void) => {
    apply();
    setReview(null);
  };
  return (
    <form class="card" onSubmit={askReview} aria-label="Withdraw">
      <h2>Withdraw</h2>
      <div class="fields">
        <label class="wide">
          To
          <select
            name="method"
            value={methodId}
            onChange={(e) => edit(() => setMethodId(e.currentTarget.value))}
            required
          >
            {methods.map((m) => (
              <option key={m.id} value={String(m.id)}>
                {methodName(m)}
              </option>
            ))}
          </select>
          {method && (
            <small class="muted" data-testid="method-name">
              {methodName(method)}
            </small>
          )}
        </label>
        <label>
          Amount{method ? ` (${method.currency})` : ""}
          <input
            name="amount"
            inputMode="decimal"
            value={amount}
            onInput={(e) => edit(() => setAmount(e.currentTarget.value))}
            required
          />
        </label>
      </div>
      {methods.length === 0 && <p class="muted small">No withdrawal method takes withdrawals yet.</p>}
      <ErrorNote error={error} />
      {done && (
        <p class="note" role="status">
          {done}
        </p>
      )}
      {review ? (
        <section class="review" aria-label="Review the withdrawal">
          <h3>Review the withdrawal</h3>
          <dl data-testid="withdraw-review">
            <dt>To</dt>
            <dd>
              {methodName({
                id: review.withdrawalMethodId,
                currency: review.currency,
                label: review.methodLabel,
                address: review.destination,
              })}{" "}
              on {review.network}
            </dd>
            <dt>Amount</dt>
            <dd>
              {review.amount} {review.currency}
            </dd>
            <dt>Fee</dt>
            <dd data-testid="withdraw-fee">
              {review.fee} {review.currency}
            </dd>
            <dt>Received by the method</dt>
            <dd data-testid="withdraw-receive">
              {review.receiveAmount} {review.currency}
            </dd>
            <dt>Balance</dt>
            <dd>
              {review.balance} → {review.balanceAfter} {review.currency}
            </dd>
          </dl>
          <button type="button" class="primary" disabled={busy} onClick={send}>
            Send withdrawal
          </button>{" "}
          <button type="button" disabled={busy} onClick={() => setReview(null)}>
            Edit
          </button>
        </section>
      ) : (
        <button type="submit" class="primary" disabled={busy || !method}>
          Review withdrawal
        </button>
      )}
    </form>
  );
}

/** A withdrawal's or refund's page: its object fetched once, a link back to the list, and its facts. */
function DetailPage<T>({
  path,
  back,
  title,
  facts,
}: {
  path: string;
  back: { to: string; label: string };
  title: string;
  facts: (item: T) => preact.ComponentChildren;
}) {
  const [item, setItem] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    api<T>("GET", path).then(setItem, (e) => setError(message(e)));
  }, [path]);
  return (
    <section>
      <p>
        <Link to={back.to}>← {back.label}</Link>
      </p>
      <h1>{title}</h1>
      <ErrorNote error={error} />
      {item && <dl class="facts card">{facts(item)}</dl>}
    </section>
  );
}

function WithdrawalDetail({ id }: { id: string }) {
  return (
    <DetailPage<Withdrawal>
      path={`/withdrawals/${encodeURIComponent(id)}`}
      back={{ to: "withdrawals", label: "Withdrawals" }}
      title="Withdrawal"
      facts={(w) => (
        <>
          <dt>Id</dt>
          <dd>
            <code>{w.id}</code>
          </dd>
          <dt>Amount</dt>
          <dd>
            {w.amount} {w.currency} ({w.network})
          </dd>
          <dt>To</dt>
          <dd>
            #{w.withdrawalMethodId} {w.methodLabel ?? ""} <code>{w.destination}</code>
          </dd>
          <PayoutFacts item={w} />
        </>
      )}
    />
  );
}

export function RefundsPage({ me, path }: { me: Me; path: string }) {
  const id = path.split("/")[1];
  return id ? <RefundDetail id={decodeURIComponent(id)} /> : <RefundList me={me} />;
}

function RefundList({ me }: { me: Me }) {
  return (
    <PagedList<Refund>
      title="Refunds"
      path="/refunds"
      noun="refunds"
      form={
        me.user.role === "owner"
          ? (reload) => (
              <>
                <RefundForm onDone={reload} />
                <ResolveForm />
              </>
            )
          : undefined
      }
      columns={[
        { head: "Created", cell: (r) => when(r.createdAt) },
        {
          head: "Refund",
          cell: (r) => (
            <Link to={`refunds/${encodeURIComponent(r.id)}`}>
              <code>{r.id}</code>
            </Link>
          ),
        },
        {
          head: "Invoice",
          cell: (r) => (
            <Link to={`invoices/${encodeURIComponent(r.invoiceId)}`}>
              <code>{r.invoiceId}</code>
            </Link>
          ),
        },
        { head: "Type", cell: (r) => r.type },
        { head: "Status", cell: (r) => <StatusBadge status={r.status} /> },
        { head: "Amount", num: true, cell: (r) => `${r.amount} ${r.currency}` },
      ]}
    />
  );
}

/** Refunds a completed invoice; `?invoice=<id>` in the address fills the invoice in (a link from its detail). */
function RefundForm({ onDone }: { onDone: () => void }) {
  const [invoiceId, setInvoiceId] = useState(() => new URLSearchParams(location.search).get("invoice") ?? "");
  const [type, setType] = useState<"crypto" | "fiat">("crypto");
  const [toSender, setToSender] = useState(false);
  const [address, setAddress] = useState("");
  const [reason, setReason] = useState("");
  const [requestId, setRequestId] = useState(newRequestId);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const submit = async (e: Event) => {
    e.preventDefault();
    if (busy) return;
    setError(null);
    setDone(null);
    setBusy(true);
    const common = { requestId, invoiceId: invoiceId.trim(), ...(reason.trim() ? { reason: reason.trim() } : {}) };
    const body =
      type === "fiat"
        ? common
        : toSender
          ? { ...common, withdrawToSameAddress: true }
          : { ...common, address: address.trim() };
    try {
      const answer = await withStepUp(() =>
        api<ResponseBody<"DashboardRefundCrypto" | "DashboardRefundFiat">>("POST", `/refunds/${type}`, body),
      );
      setDone(`Refund of ${answer.request.amount} ${answer.request.currency} accepted (${answer.request.id}).`);
      setRequestId(newRequestId());
      setInvoiceId("");
      setAddress("");
      onDone();
    } catch (err) {
      setError(message(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="card" onSubmit={submit} aria-label="Refund an invoice">
      <h2>Refund a completed invoice</h2>
      <div class="fields">
        <label>
          Invoice id
          <input name="invoiceId" value={invoiceId} onInput={(e) => setInvoiceId(e.currentTarget.value)} required />
        </label>
        <label>
          Refund in
          <select name="type" value={type} onChange={(e) => setType(e.currentTarget.value as "crypto" | "fiat")}>
            <option value="crypto">crypto (the invoice's currency)</option>
            <option value="fiat">fiat (the settlement currency)</option>
          </select>
        </label>
        {type === "crypto" && (
          <>
            <label>
              <span>
                <input
                  type="checkbox"
                  name="toSender"
                  checked={toSender}
                  onChange={(e) => setToSender(e.currentTarget.checked)}
                />{" "}
                To the sender of the payment
              </span>
            </label>
            {!toSender && (
              <label>
                Address
                <input
                  name="address"
                  value={address}
                  onInput={(e) => setAddress(e.currentTarget.value)}
                  placeholder="0x…"
                  required
                />
              </label>
            )}
          </>
        )}
        <label>
          Reason
          <input name="reason" value={reason} onInput={(e) => setReason(e.currentTarget.value)} />
        </label>
      </div>
      <ErrorNote error={error} />
      {done && (
        <p class="note" role="status">
          {done}
        </p>
      )}
      <button type="submit" class="primary" disabled={busy}>
        Refund
      </button>
    </form>
  );
}

/** Resolves what a failed or expired invoice received (a late or partial payment): accept it, or refund it to an address. */
function ResolveForm() {
  const [invoiceId, setInvoiceId] = useState("");
  const [action, setAction] = useState<"accept" | "refund">("accept");
  const [address, setAddress] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const submit = async (e: Event) => {
    e.preventDefault();
    if (busy) return;
    setError(null);
    setDone(null);
    setBusy(true);
    try {
      const body = action === "accept" ? { action } : { action, address: address.trim() };
      const invoice = await withStepUp(() =>
        api<ResponseBody<"DashboardResolveInvoice">>(
          "POST",
          `/invoices/${encodeURIComponent(invoiceId.trim())}/resolve`,
          body,
        ),
      );
      setDone(`Invoice ${invoice.id} resolved (${action}); it is now ${invoice.status}.`);
      setInvoiceId("");
    } catch (err) {
      setError(message(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="card" onSubmit={submit} aria-label="Resolve a late or partial payment">
      <h2>Resolve a late or partial payment</h2>
      <p class="muted small">
        For a failed or expired invoice that received money: accept it (the invoice completes with what was paid) or
        refund it to the payer's address, less the network fee. Once per invoice.
      </p>
      <div class="fields">
        <label>
          Invoice id
          <input
            name="resolveInvoiceId"
            value={invoiceId}
            onInput={(e) => setInvoiceId(e.currentTarget.value)}
            required
          />
        </label>
        <label>
          Resolution
          <select
            name="action"
            value={action}
            onChange={(e) => setAction(e.currentTarget.value as "accept" | "refund")}
          >
            <option value="accept">accept the payment</option>
            <option value="refund">refund it to an address</option>
          </select>
        </label>
        {action === "refund" && (
          <label>
            Payer's address
            <input
              name="resolveAddress"
              value={address}
              onInput={(e) => setAddress(e.currentTarget.value)}
              placeholder="0x…"
              required
            />
          </label>
        )}
      </div>
      <ErrorNote error={error} />
      {done && (
        <p class="note" role="status">
          {done}
        </p>
      )}
      <button type="submit" disabled={busy}>
        Resolve
      </button>
    </form>
  );
}

function RefundDetail({ id }: { id: string }) {
  return (
    <DetailPage<Refund>
      path={`/refunds/${encodeURIComponent(id)}`}
      back={{ to: "refunds", label: "Refunds" }}
      title="Refund"
      facts={(r) => (
        <>
          <dt>Id</dt>
          <dd>
            <code>{r.id}</code>
          </dd>
          <dt>Invoice</dt>
          <dd>
            <Link to={`invoices/${encodeURIComponent(r.invoiceId)}`}>
              <code>{r.invoiceId}</code>
            </Link>
          </dd>
          <dt>Amount</dt>
          <dd>
            {r.amount} {r.currency} ({r.type}); debited {r.debitAmount} {r.debitCurrency}
          </dd>
          <dt>To</dt>
          <dd>
            {r.toAddress ? <code>{r.toAddress}</code> : "the payer, through the payment rails"}
            {r.withdrawToSameAddress ? " (the payment's sender)" : ""}
          </dd>
          <dt>Reason</dt>
          <dd>{r.reason ?? "—"}</dd>
          <PayoutFacts item={r} />
        </>
      )}
    />
  );
}

export function LedgerPage() {
  const [currencies, setCurrencies] = useState<string[]>([]);
  const [currency, setCurrency] = useState("");
  const [balance, setBalance] = useState<string | null>(null);
  const [entries, setEntries] = useState<LedgerEntry[]>([]);
  const [nextBefore, setNextBefore] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    api<ResponseBody<"DashboardOverview">>("GET", "/overview").then(
      (o) => {
        const tickers = o.balances.map((b) => b.currency);
        setCurrencies(tickers);
        setCurrency(tickers[0] ?? "");
      },
      (e) => setError(message(e)),
    );
  }, []);
  const load = async (before?: string) => {
    if (!currency) return;
    setError(null);
    try {
      const params = new URLSearchParams({ currency, limit: "50", ...(before ? { before } : {}) });
      const page = await api<ResponseBody<"DashboardLedger">>("GET", `/ledger?${params}`);
      setBalance(page.balance);
      setEntries((old) => (before ? [...old, ...page.items] : page.items));
      setNextBefore(page.nextBefore);
    } catch (e) {
      setError(message(e));
    }
  };
  useEffect(() => {
    load();
  }, [currency]);
  return (
    <section>
      <header class="row">
        <h1>Ledger</h1>
        {currency && (
          <a class="button" href={`/dashboard/v1/ledger/export?${new URLSearchParams({ currency })}`} download>
            Export CSV
          </a>
        )}
      </header>
      <ErrorNote error={error} />
      {currencies.length === 0 ? (
        <p class="muted">No balance has moved yet.</p>
      ) : (
        <div class="card inline">
          <label>
            Balance
            <select name="currency" value={currency} onChange={(e) => setCurrency(e.currentTarget.value)}>
              {currencies.map((c) => (
                <option key={c} value={c}>
                  {c}
                </option>
              ))}
            </select>
          </label>
          {balance !== null && (
            <p>
              Available: <strong data-testid="ledger-balance">{balance}</strong> {currency}
            </p>
          )}
        </div>
      )}
      <table>
        <thead>
          <tr>
            <th>Time</th>
            <th>Cause</th>
            <th>Reference</th>
            <th>Memo</th>
            <th class="num">Amount</th>
          </tr>
        </thead>
        <tbody>
          {entries.map((e) => (
            <tr key={e.id}>
              <td>{when(e.createdAt)}</td>
              <td>
                <span class="badge">{e.cause}</span>
              </td>
              <td>
                <code>{e.causeId}</code>
              </td>
              <td>{e.memo ?? "—"}</td>
              <td class="num">{e.amount}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {nextBefore && (
        <p>
          <button type="button" onClick={() => load(nextBefore)}>
            Load more
          </button>
        </p>
      )}
    </section>
  );
}
