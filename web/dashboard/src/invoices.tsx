// The invoices pages: the list (filters, search, keyset paging, CSV export), payment links, and an invoice's detail with its callbacks.
import { useEffect, useState } from "preact/hooks";
import { api, type Me, type ResponseBody } from "./api.ts";
import { addDecimals } from "./decimal.ts";
import { ErrorNote, message, navigate, when } from "./ui.tsx";

export type Invoice = ResponseBody<"DashboardListInvoices">["data"][number];

export type CallbackEvent = Detail["callbacks"][number];

type Detail = ResponseBody<"DashboardGetInvoice">;

const STATUSES = [
  "pending",
  "processing",
  "completed",
  "partially_completed",
  "aml_check",
  "failed",
  "expired",
  "canceled",
] as const;

const GOOD = new Set(["completed", "delivered"]);

/**
 * The fees of an invoice as its amounts say (product §4, EstimateFees' summaryFee): the merchant
 * fee and the network and other fees together. Paid by the merchant, they come out of what it
 * receives; paid by the payer, they were added to the price and the merchant receives the amount.
 */
export function feeLine(i: {
  amount: string;
  currency: string | null;
  merchant_fee: string;
  network_and_other_fees: string;
  merchant_receive_amount: string;
}): string {
  const fees = addDecimals(i.merchant_fee, i.network_and_other_fees);
  const byPayer = i.merchant_receive_amount === i.amount && fees !== "0";
  return `fees ${fees} ${i.currency ?? ""}: merchant fee ${i.merchant_fee} + network and other fees ${i.network_and_other_fees}${
    byPayer ? ", paid by the payer" : ""
  }`;
}

export function StatusBadge({ status }: { status: string }) {
  return <span class={GOOD.has(status) ? "badge ok" : status === "failed" ? "badge bad" : "badge"}>{status}</span>;
}

export function InvoicesPage({ me, path }: { me: Me; path: string }) {
  const id = path.split("/")[1];
  return id ? <InvoiceDetail me={me} id={decodeURIComponent(id)} /> : <InvoiceList me={me} />;
}

interface Filters {
  status: string;
  from: string;
  to: string;
  q: string;
}

function filtersFromUrl(): Filters {
  const p = new URLSearchParams(location.search);
  return { status: p.get("status") ?? "", from: p.get("from") ?? "", to: p.get("to") ?? "", q: p.get("q") ?? "" };
}

/** The list's query: dates are whole UTC days, the upper one included. */
function query(filters: Filters, startingAfter?: string): URLSearchParams {
  const params = new URLSearchParams();
  if (filters.q.trim() !== "") {
    params.set("q", filters.q.trim());
    return params;
  }
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

function InvoiceList({ me }: { me: Me }) {
  // The filters live in the page's URL too, so a reload, a bookmark or a shared link keeps them.
  const [filters, setFilters] = useState<Filters>(filtersFromUrl);
  const [applied, setApplied] = useState<Filters>(filters);
  const [rows, setRows] = useState<Invoice[]>([]);
  const [hasMore, setHasMore] = useState(false);
  const [loading, setLoading] = useState(false);
  const [creating, setCreating] = useState(false);
  const [linksVersion, setLinksVersion] = useState(0);
  const [error, setError] = useState<string | null>(null);
  const canCreate = me.user.role !== "viewer";

  const load = async (which: Filters, after?: string) => {
    setLoading(true);
    setError(null);
    try {
      const params = query(which, after);
      params.set("limit", "25");
      const page = await api<ResponseBody<"DashboardListInvoices">>("GET", `/invoices?${params}`);
      setRows((old) => (after ? [...old, ...page.data] : page.data));
      setHasMore(page.has_more);
    } catch (e) {
      setError(message(e));
    } finally {
      setLoading(false);
    }
  };
  useEffect(() => {
    const search = new URLSearchParams(Object.entries(applied).filter(([, v]) => v !== "")).toString();
    history.replaceState(null, "", `/dashboard/invoices${search ? `?${search}` : ""}`);
    load(applied);
  }, [applied]);
  const set = (field: keyof Filters) => (e: { currentTarget: { value: string } }) =>
    setFilters({ ...filters, [field]: e.currentTarget.value });
  const exportParams = query({ ...applied, q: "" });

  return (
    <section>
      <header class="row">
        <h1>Invoices</h1>
        {canCreate && (
          <button type="button" class="primary" onClick={() => setCreating(!creating)} aria-expanded={creating}>
            Create payment link
          </button>
        )}
      </header>
      {creating && <PaymentLinkForm onCreated={() => setLinksVersion(linksVersion + 1)} />}
      <PaymentLinkList canManage={canCreate} version={linksVersion} />
      <form
        class="card inline filters"
        aria-label="Filter invoices"
        onSubmit={(e) => {
          e.preventDefault();
          setApplied({ ...filters });
        }}
      >
        <label>
          Search
          <input type="search" name="q" placeholder="Invoice id or order number" value={filters.q} onInput={set("q")} />
        </label>
        <label>
          Status
          <select name="status" value={filters.status} onChange={set("status")}>
            <option value="">Any</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label>
          Created from (UTC)
          <input type="date" name="from" value={filters.from} onInput={set("from")} />
        </label>
        <label>
          Created until (UTC)
          <input type="date" name="to" value={filters.to} onInput={set("to")} />
        </label>
        <button type="submit">Apply</button>
        <a class="button" href={`/dashboard/v1/invoices/export.csv?${exportParams}`} download>
          Export CSV
        </a>
      </form>
      <ErrorNote error={error} />
      <table>
        <thead>
          <tr>
            <th>Created</th>
            <th>Invoice</th>
            <th>Order</th>
            <th>Status</th>
            <th class="num">Amount</th>
            <th class="num">Paid</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((i) => (
            <tr key={i.id}>
              <td>{when(i.created_at)}</td>
              <td>
                <a
                  href={`/dashboard/invoices/${encodeURIComponent(i.id)}`}
                  onClick={(e) => {
                    e.preventDefault();
                    navigate(`invoices/${encodeURIComponent(i.id)}`);
                  }}
                >
                  <code>{i.id}</code>
                </a>
              </td>
              <td>{i.order_no ?? "—"}</td>
              <td>
                <StatusBadge status={i.status} />
              </td>
              <td class="num">
                {i.amount} {i.currency}
              </td>
              <td class="num">{i.paid_amount}</td>
            </tr>
          ))}
          {rows.length === 0 && !loading && (
            <tr>
              <td colSpan={6} class="muted">
                No invoices match.
              </td>
            </tr>
          )}
        </tbody>
      </table>
      {hasMore && (
        <p>
          <button type="button" disabled={loading} onClick={() => load(applied, rows.at(-1)?.id)}>
            Load more
          </button>
        </p>
      )}
    </section>
  );
}

/** A payment link (product §25): the merchant API's object. */
type PaymentLink = ResponseBody<"DashboardListPaymentLinks">["data"][number];

type LinkInvoice = ResponseBody<"DashboardListPaymentLinkInvoices">["data"][number];

function priceOf(link: PaymentLink): string {
  return link.amount !== null
    ? `${link.amount} ${link.currency}`
    : `${link.min_amount}–${link.max_amount} ${link.currency} (payer chooses)`;
}

function PaymentLinkForm({ onCreated }: { onCreated: () => void }) {
  const [currency, setCurrency] = useState("USDT");
  const [amount, setAmount] = useState("");
  const [open, setOpen] = useState(false);
  const [minAmount, setMinAmount] = useState("");
  const [maxAmount, setMaxAmount] = useState("");
  const [description, setDescription] = useState("");
  const [created, setCreated] = useState<PaymentLink | null>(null);
  const [error, setError] = useState<string | null>(null);
  const submit = async (e: Event) => {
    e.preventDefault();
    setError(null);
    try {
      const link = await api<PaymentLink>("POST", "/links", {
        currency: currency.trim(),
        ...(open ? { minAmount: minAmount.trim(), maxAmount: maxAmount.trim() } : { amount: amount.trim() }),
        ...(description.trim() ? { description: description.trim() } : {}),
      });
      setCreated(link);
      onCreated();
    } catch (err) {
      setError(message(err));
    }
  };
  return (
    <form class="card" onSubmit={submit} aria-label="Create a payment link">
      <h2>New payment link</h2>
      <div class="fields">
        <label>
          Currency
          <input name="currency" value={currency} onInput={(e) => setCurrency(e.currentTarget.value)} required />
        </label>
        <label>
          <input type="checkbox" checked={open} onChange={(e) => setOpen(e.currentTarget.checked)} /> The payer chooses
          the amount
        </label>
        {open ? (
          <>
            <label>
              Minimum
              <input
                name="minAmount"
                inputMode="decimal"
                value={minAmount}
                onInput={(e) => setMinAmount(e.currentTarget.value)}
                required
              />
            </label>
            <label>
              Maximum
              <input
                name="maxAmount"
                inputMode="decimal"
                value={maxAmount}
                onInput={(e) => setMaxAmount(e.currentTarget.value)}
                required
              />
            </label>
          </>
        ) : (
          <label>
            Amount
            <input
              name="amount"
              inputMode="decimal"
              value={amount}
              onInput={(e) => setAmount(e.currentTarget.value)}
              required
            />
          </label>
        )}
        <label>
          Description
          <input name="description" value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
        </label>
      </div>
      <ErrorNote error={error} />
      <button type="submit" class="primary">
        Create link
      </button>
      {created && (
        <div class="reveal-link" role="status">
          <label>
            Payment link (one invoice per payer visit)
            <input readOnly value={created.url} data-testid="payment-link" onFocus={(e) => e.currentTarget.select()} />
          </label>
          <button type="button" onClick={() => navigator.clipboard?.writeText(created.url)}>
            Copy link
          </button>
        </div>
      )}
    </form>
  );
}

/** The merchant's payment links: copy, deactivate, and the invoices each made. */
function PaymentLinkList({ canManage, version }: { canManage: boolean; version: number }) {
  const [links, setLinks] = useState<PaymentLink[]>([]);
  const [invoices, setInvoices] = useState<Record<string, LinkInvoice[]>>({});
  const [error, setError] = useState<string | null>(null);
  const load = () =>
    api<ResponseBody<"DashboardListPaymentLinks">>("GET", "/links?limit=100").then(
      (page) => setLinks(page.data),
      (e) => setError(message(e)),
    );
  useEffect(() => {
    load();
  }, [version]);
  const deactivate = async (id: string) => {
    setError(null);
    try {
      await api("PATCH", `/links/${encodeURIComponent(id)}`, { active: false });
      await load();
    } catch (e) {
      setError(message(e));
    }
  };
  const showInvoices = async (id: string) => {
    try {
      const made = await api<ResponseBody<"DashboardListPaymentLinkInvoices">>(
        "GET",
        `/links/${encodeURIComponent(id)}/invoices`,
      );
      setInvoices({ ...invoices, [id]: made.data });
    } catch (e) {
      setError(message(e));
    }
  };
  if (links.length === 0 && error === null) return null;
  return (
    <section class="card" aria-label="Payment links">
      <h2>Payment links</h2>
      <ErrorNote error={error} />
      <table>
        <thead>
          <tr>
            <th>Link</th>
            <th>Price</th>
            <th>Status</th>
            <th>Actions</th>
          </tr>
        </thead>
        <tbody>
          {links.map((link) => (
            <tr key={link.id}>
              <td>
                <code>{link.url}</code>
                {link.description && <div class="muted">{link.description}</div>}
                {invoices[link.id] && (
                  <ul aria-label={`Invoices of ${link.url}`}>
                    {invoices[link.id]?.map((i) => (
                      <li key={i.id}>
                        <a href={`/dashboard/invoices/${i.id}`}>
                          {i.amount} {i.currency}
                        </a>{" "}
                        <StatusBadge status={i.status} /> {when(i.created_at)}
                      </li>
                    ))}
                    {invoices[link.id]?.length === 0 && <li class="muted">No invoice yet.</li>}
                  </ul>
                )}
              </td>
              <td>{priceOf(link)}</td>
              <td>{link.active ? "active" : "inactive"}</td>
              <td>
                <button type="button" onClick={() => navigator.clipboard?.writeText(link.url)}>
                  Copy URL
                </button>{" "}
                <button type="button" onClick={() => showInvoices(link.id)}>
                  Invoices
                </button>{" "}
                {canManage && link.active && (
                  <button type="button" onClick={() => deactivate(link.id)}>
                    Deactivate
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

function InvoiceDetail({ me, id }: { me: Me; id: string }) {
  const [detail, setDetail] = useState<Detail | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [note, setNote] = useState<string | null>(null);
  const canRedeliver = me.user.role !== "viewer";
  const load = () =>
    api<Detail>("GET", `/invoices/${encodeURIComponent(id)}`).then(setDetail, (e) => setError(message(e)));
  useEffect(() => {
    load();
  }, [id]);
  const redeliver = async (eventId: string) => {
    setError(null);
    setNote(null);
    try {
      await api("POST", `/callback-events/${encodeURIComponent(eventId)}/redeliver`);
      setNote("Scheduled: the event is sent again now, with the same id and body.");
      await load();
    } catch (e) {
      setError(message(e));
    }
  };
  const back = (
    <a
      href="/dashboard/invoices"
      onClick={(e) => {
        e.preventDefault();
        navigate("invoices");
      }}
    >
      ← Invoices
    </a>
  );
  if (!detail) {
    return (
      <section>
        {back}
        <ErrorNote error={error} />
      </section>
    );
  }
  const i = detail.invoice;
  return (
    <section>
      {back}
      <header class="row">
        <h1>
          Invoice <StatusBadge status={i.status} />
        </h1>
        <span class="header-actions">
          {/* Only a completed invoice can be refunded (the interface's rule), and only owners move money. */}
          {me.user.role === "owner" && i.status === "completed" && (
            <a
              class="button"
              href={`/dashboard/refunds?invoice=${encodeURIComponent(i.id)}`}
              onClick={(e) => {
                e.preventDefault();
                navigate(`refunds?invoice=${encodeURIComponent(i.id)}`);
              }}
            >
              Refund…
            </a>
          )}
          <button type="button" onClick={load}>
            Refresh
          </button>
        </span>
      </header>
      <ErrorNote error={error} />
      {note && (
        <p class="note" role="status">
          {note}
        </p>
      )}
      <dl class="card facts">
        <dt>Id</dt>
        <dd>
          <code>{i.id}</code>
        </dd>
        <dt>Amount</dt>
        <dd>
          {i.amount} {i.currency} (to pay {i.final_amount}, paid {i.paid_amount})
        </dd>
        <dt>You receive</dt>
        <dd>
          {i.merchant_receive_amount} {i.currency} ({feeLine(i)})
        </dd>
        <dt>Order</dt>
        <dd>{i.order_no ?? "—"}</dd>
        <dt>Description</dt>
        <dd>{i.description ?? "—"}</dd>
        <dt>Created</dt>
        <dd>{when(i.created_at)}</dd>
        <dt>Expires</dt>
        <dd>{when(i.expires_at)}</dd>
        <dt>Payment page</dt>
        <dd>
          <a href={i.invoice_url}>{i.invoice_url}</a>
        </dd>
        <dt>Callback URL</dt>
        <dd>{i.callback_url ? <code>{i.callback_url}</code> : "—"}</dd>
        <dt>Quote</dt>
        <dd>
          {detail.quote.fixed
            ? detail.quote.rates.map((r) => (
                <div key={r.currency}>
                  1 {r.currency} = {r.rate_usd} USD{" "}
                  <span class="muted">
                    ({r.source}
                    {r.updated_at ? `, feed at ${when(r.updated_at)}` : ""})
                  </span>
                </div>
              ))
            : "Catalog rates (created before quotes were fixed)"}
        </dd>
      </dl>

      <h2>Status history</h2>
      <ol class="card timeline">
        {detail.history.map((h) => (
          <li key={`${h.status}-${h.at}`}>
            <StatusBadge status={h.status} /> <span class="muted">{when(h.at)}</span>
          </li>
        ))}
      </ol>

      <h2>Payments</h2>
      <table>
        <thead>
          <tr>
            <th>Received</th>
            <th>Transaction</th>
            <th class="num">Amount</th>
            <th>Confirmed</th>
            <th class="num">USD at confirmation</th>
            <th class="num">USD at live rate</th>
            <th>AML</th>
          </tr>
        </thead>
        <tbody>
          {detail.payments.map((p) => (
            <tr key={p.id}>
              <td>{when(p.createdAt)}</td>
              <td>
                <code>{p.txId}</code>
              </td>
              <td class="num">{p.amount}</td>
              <td>{p.confirmed ? "Yes" : "No"}</td>
              <td class="num">{p.valueUsd ?? "—"}</td>
              <td class="num" title={p.liveRateUsd ? `rate ${p.liveRateUsd}` : undefined}>
                {p.liveValueUsd ?? "—"}
              </td>
              <td>{p.amlStatus}</td>
            </tr>
          ))}
          {detail.payments.length === 0 && (
            <tr>
              <td colSpan={7} class="muted">
                No payments yet.
              </td>
            </tr>
          )}
        </tbody>
      </table>

      {detail.disputes.length > 0 && (
        <>
          <h2>Disputes</h2>
          <table class="disputes">
            <thead>
              <tr>
                <th>Dispute</th>
                <th class="num">Disputed</th>
                <th class="num">Held</th>
                <th class="num">Owed to the operator</th>
                <th>Status</th>
                <th>Outcome</th>
              </tr>
            </thead>
            <tbody>
              {detail.disputes.map((d) => (
                <tr key={d.id}>
                  <td>
                    <code>{d.id}</code> <span class="muted">{d.reason}</span>
                  </td>
                  <td class="num">
                    {d.amount} {d.currency}
                  </td>
                  <td class="num">
                    {d.outcome === null
                      ? `${d.held_amount} ${d.hold_currency}`
                      : d.outcome === "won"
                        ? "released"
                        : "returned to the payer"}
                  </td>
                  <td class="num">
                    {d.receivable_amount} {d.hold_currency}
                  </td>
                  <td>{d.status}</td>
                  <td>{d.outcome ?? "open"}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}

      <h2>Callback deliveries</h2>
      {detail.callbacks.length === 0 && <p class="muted">No callbacks: this invoice has no callback URL.</p>}
      {detail.callbacks.map((e) => (
        <CallbackEventCard key={e.id} event={e} onRedeliver={canRedeliver ? () => redeliver(e.id) : undefined} />
      ))}
    </section>
  );
}

export function CallbackEventCard({ event, onRedeliver }: { event: CallbackEvent; onRedeliver?: () => void }) {
  return (
    <article class="card event" aria-label={`Callback ${event.type}`}>
      <header class="row">
        <div>
          <code>{event.type}</code> <StatusBadge status={event.status} />
          <div class="muted small">
            <code>{event.id}</code> to <code>{event.url}</code>
          </div>
        </div>
        {onRedeliver && (
          <button type="button" onClick={onRedeliver} aria-label={`Redeliver ${event.type}`}>
            Redeliver
          </button>
        )}
      </header>
      <table>
        <thead>
          <tr>
            <th>#</th>
            <th>Started</th>
            <th>Answer</th>
            <th class="num">Time</th>
          </tr>
        </thead>
        <tbody>
          {event.attempts.map((a) => (
            <tr key={a.number}>
              <td>{a.number}</td>
              <td>{when(a.startedAt)}</td>
              <td>{a.statusCode !== null ? `HTTP ${a.statusCode}` : (a.error ?? "no answer")}</td>
              <td class="num">{a.durationMs} ms</td>
            </tr>
          ))}
          {event.attempts.length === 0 && (
            <tr>
              <td colSpan={4} class="muted">
                Not attempted yet{event.nextAttemptAt ? ` (due ${when(event.nextAttemptAt)})` : ""}.
              </td>
            </tr>
          )}
        </tbody>
      </table>
    </article>
  );
}
