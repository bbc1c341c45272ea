// The subscriptions page (product §29): the merchant's plans (create, retire) and its subscriptions (filter by status, cancel now or at the period's end).
import { useEffect, useState } from "preact/hooks";
import { api, type Me, type ResponseBody } from "./api.ts";
import { ErrorNote, message, navigate, useActions } from "./ui.tsx";

type Plan = ResponseBody<"DashboardListPlans">["data"][number];
type Subscription = ResponseBody<"DashboardListSubscriptions">["data"][number];
type Status = Subscription["status"];

const STATUSES: Status[] = ["incomplete", "trialing", "active", "past_due", "unpaid", "canceled"];
const INTERVALS: Plan["interval"][] = ["day", "week", "month", "year"];

/** "12.5 USDT / month", "100 USDT every 2 weeks". */
export function priceOf(plan: Plan): string {
  const money = `${plan.amount} ${plan.currency}`;
  return plan.intervalCount === 1
    ? `${money} / ${plan.interval}`
    : `${money} every ${plan.intervalCount} ${plan.interval}s`;
}

function days(count: number): string {
  return count === 0 ? "—" : count === 1 ? "1 day" : `${count} days`;
}

/** A period's bound as a date: the time of day adds nothing to a monthly period. */
function day(iso: string): string {
  return new Date(iso).toLocaleDateString(undefined, { year: "numeric", month: "short", day: "numeric" });
}

/** Green while it runs, red while it is owed, grey when it waits for its first payment or has ended. */
function SubscriptionBadge({ status }: { status: Status }) {
  const tone = { active: " ok", trialing: " ok", past_due: " bad", unpaid: " bad", incomplete: "", canceled: "" }[
    status
  ];
  return <span class={`badge${tone}`}>{status.replace("_", " ")}</span>;
}

export function SubscriptionsPage({ me }: { me: Me }) {
  const canManage = me.user.role !== "viewer";
  const [plans, setPlans] = useState<Plan[]>([]);
  const [creating, setCreating] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const loadPlans = () =>
    api<ResponseBody<"DashboardListPlans">>("GET", "/plans?limit=100").then(
      (page) => setPlans(page.data),
      (e) => setError(message(e)),
    );
  useEffect(() => {
    loadPlans();
  }, []);
  return (
    <section>
      <header class="row">
        <h1>Subscriptions</h1>
        {canManage && (
          <button type="button" class="primary" onClick={() => setCreating(!creating)} aria-expanded={creating}>
            Create plan
          </button>
        )}
      </header>
      <ErrorNote error={error} />
      {creating && (
        <PlanForm
          onCreated={() => {
            setCreating(false);
            loadPlans();
          }}
        />
      )}
      <PlanList plans={plans} canManage={canManage} onChanged={loadPlans} />
      <SubscriptionList plans={plans} canManage={canManage} />
    </section>
  );
}

function PlanForm({ onCreated }: { onCreated: () => void }) {
  const [fields, setFields] = useState({
    name: "",
    currency: "USDT",
    amount: "",
    interval: "month",
    intervalCount: "1",
    trialDays: "0",
    graceDays: "3",
  });
  const { error, run } = useActions();
  const set = (name: keyof typeof fields) => (e: { currentTarget: { value: string } }) =>
    setFields({ ...fields, [name]: e.currentTarget.value });
  const submit = (e: Event) => {
    e.preventDefault();
    run(async () => {
      await api<Plan>("POST", "/plans", {
        name: fields.name.trim(),
        currency: fields.currency.trim(),
        amount: fields.amount.trim(),
        interval: fields.interval,
        intervalCount: Number(fields.intervalCount),
        trialDays: Number(fields.trialDays),
        graceDays: Number(fields.graceDays),
      });
      onCreated();
    });
  };
  const count = (name: "intervalCount" | "trialDays" | "graceDays", label: string, min: number, max: number) => (
    <label>
      {label}
      <input name={name} type="number" min={min} max={max} value={fields[name]} onInput={set(name)} required />
    </label>
  );
  return (
    <form class="card" onSubmit={submit} aria-label="Create a plan">
      <h2>New plan</h2>
      <div class="fields">
        <label>
          Name
          <input name="name" value={fields.name} onInput={set("name")} required maxLength={200} />
        </label>
        <label>
          Currency
          <input name="currency" value={fields.currency} onInput={set("currency")} required />
        </label>
        <label>
          Price per period
          <input name="amount" inputMode="decimal" value={fields.amount} onInput={set("amount")} required />
        </label>
        <label>
          Interval
          <select name="interval" value={fields.interval} onChange={set("interval")}>
            {INTERVALS.map((i) => (
              <option key={i} value={i}>
                {i}
              </option>
            ))}
          </select>
        </label>
        {count("intervalCount", "Intervals per period", 1, 366)}
        {count("trialDays", "Trial (days)", 0, 730)}
        {count("graceDays", "Grace (days)", 0, 14)}
      </div>
      <ErrorNote error={error} />
      <button type="submit" class="primary">
        Create plan
      </button>
    </form>
  );
}

function PlanList({ plans, canManage, onChanged }: { plans: Plan[]; canManage: boolean; onChanged: () => void }) {
  const { error, run } = useActions();
  const setActive = (plan: Plan, active: boolean) =>
    run(async () => {
      await api("PATCH", `/plans/${encodeURIComponent(plan.id)}`, { active });
      onChanged();
    });
  return (
    <>
      <h2>Plans</h2>
      <ErrorNote error={error} />
      <table aria-label="Plans">
        <thead>
          <tr>
            <th>Plan</th>
            <th>Price</th>
            <th>Trial</th>
            <th>Grace</th>
            <th>Status</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {plans.map((plan) => (
            <tr key={plan.id}>
              <td>
                {plan.name}
                <div class="muted small nowrap">
                  <code>{plan.id}</code>
                </div>
              </td>
              <td class="nowrap">{priceOf(plan)}</td>
              <td class="nowrap">{days(plan.trialDays)}</td>
              <td class="nowrap">{days(plan.graceDays)}</td>
              <td>{plan.active ? <span class="badge ok">active</span> : <span class="badge">retired</span>}</td>
              <td>
                {canManage && (
                  <button
                    type="button"
                    onClick={() => setActive(plan, !plan.active)}
                    aria-label={`${plan.active ? "Retire" : "Reactivate"} ${plan.name}`}
                  >
                    {plan.active ? "Retire" : "Reactivate"}
                  </button>
                )}
              </td>
            </tr>
          ))}
          {plans.length === 0 && (
            <tr>
              <td colSpan={6} class="muted">
                No plans yet: a plan is a price per period that customers subscribe to.
              </td>
            </tr>
          )}
        </tbody>
      </table>
    </>
  );
}

function SubscriptionList({ plans, canManage }: { plans: Plan[]; canManage: boolean }) {
  const [status, setStatus] = useState("");
  const [rows, setRows] = useState<Subscription[]>([]);
  const [hasMore, setHasMore] = useState(false);
  const { note, setNote, error, run } = useActions();
  const load = (after?: string) =>
    run(async () => {
      const params = new URLSearchParams({ limit: "25" });
      if (status) params.set("status", status);
      if (after) params.set("starting_after", after);
      const page = await api<ResponseBody<"DashboardListSubscriptions">>("GET", `/subscriptions?${params}`);
      setRows((old) => (after ? [...old, ...page.data] : page.data));
      setHasMore(page.has_more);
    });
  useEffect(() => {
    load();
  }, [status]);
  const cancel = (s: Subscription, atPeriodEnd: boolean) => {
    const question = atPeriodEnd
      ? `Cancel ${s.customer.reference}'s subscription at the end of its period (${day(s.currentPeriodEnd)})?`
      : `Cancel ${s.customer.reference}'s subscription now? Its open invoice is closed.`;
    if (!confirm(question)) return;
    run(async () => {
      const done = await api<Subscription>("POST", `/subscriptions/${encodeURIComponent(s.id)}/cancel`, {
        atPeriodEnd,
      });
      setRows((old) => old.map((row) => (row.id === done.id ? done : row)));
      setNote(
        atPeriodEnd
          ? `${s.customer.reference}'s subscription ends on ${day(done.currentPeriodEnd)}.`
          : `${s.customer.reference}'s subscription is canceled.`,
      );
    });
  };
  const planName = (id: string) => plans.find((p) => p.id === id)?.name ?? id;
  return (
    <>
      <header class="row list-header">
        <h2>Customers' subscriptions</h2>
        <label>
          Status
          <select name="status" value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
            <option value="">Any</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s.replace("_", " ")}
              </option>
            ))}
          </select>
        </label>
      </header>
      <ErrorNote error={error} />
      {note && (
        <p class="note" role="status">
          {note}
        </p>
      )}
      <table aria-label="Subscriptions">
        <thead>
          <tr>
            <th>Customer</th>
            <th>Plan</th>
            <th>Status</th>
            <th>Current period</th>
            <th>Open invoice</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {rows.map((s) => (
            <SubscriptionRow
              key={s.id}
              s={s}
              planName={planName}
              onCancel={canManage ? (atPeriodEnd) => cancel(s, atPeriodEnd) : undefined}
            />
          ))}
          {rows.length === 0 && (
            <tr>
              <td colSpan={6} class="muted">
                No subscriptions match.
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

function SubscriptionRow({
  s,
  planName,
  onCancel,
}: {
  s: Subscription;
  planName: (id: string) => string;
  onCancel: ((atPeriodEnd: boolean) => void) | undefined;
}) {
  const invoice = s.openInvoice;
  const ended = s.status === "canceled" || s.status === "unpaid";
  return (
    <tr>
      <td>
        {s.customer.reference}
        {s.customer.email && <div class="muted small">{s.customer.email}</div>}
      </td>
      <td>
        {planName(s.planId)}
        {s.nextPlanId && <div class="muted small">then {planName(s.nextPlanId)}</div>}
      </td>
      <td>
        <SubscriptionBadge status={s.status} />
        {s.cancelAtPeriodEnd && !ended && <div class="muted small">ends with this period</div>}
      </td>
      <td>
        <span class="nowrap">{day(s.currentPeriodStart)}</span> – <span class="nowrap">{day(s.currentPeriodEnd)}</span>
      </td>
      <td>
        {invoice ? (
          <>
            <a
              class="nowrap"
              href={`/dashboard/invoices/${encodeURIComponent(invoice.id)}`}
              onClick={(e) => {
                e.preventDefault();
                navigate(`invoices/${encodeURIComponent(invoice.id)}`);
              }}
            >
              {invoice.amount} {invoice.currency}
            </a>
            <div class="muted small nowrap">
              {invoice.status}, period {invoice.period}
            </div>
          </>
        ) : (
          "—"
        )}
      </td>
      <td>
        <div class="stack">
          {onCancel && !ended && !s.cancelAtPeriodEnd && (
            <button
              type="button"
              onClick={() => onCancel(true)}
              aria-label={`Cancel ${s.customer.reference} at period end`}
            >
              Cancel at period end
            </button>
          )}
          {onCancel && !ended && (
            <button
              type="button"
              class="danger"
              onClick={() => onCancel(false)}
              aria-label={`Cancel ${s.customer.reference} now`}
            >
              Cancel now
            </button>
          )}
        </div>
      </td>
    </tr>
  );
}
