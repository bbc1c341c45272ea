// The approval queue (product §31): payouts waiting for approvals, approve or reject (approvers and owners, step-up), and the owner's payout policy editor.
import { useEffect, useState } from "preact/hooks";
import { api, type Me, type ResponseBody } from "./api.ts";
import { ErrorNote, useActions, when, withStepUp } from "./ui.tsx";

type Approval = ResponseBody<"DashboardListApprovals">[number];
type Policy = ResponseBody<"DashboardListPayoutPolicies">[number];

const REASONS: Record<Approval["reason"], string> = {
  per_payout_limit: "over the limit per payout",
  daily_limit: "over the 24-hour limit",
};

export function ApprovalsPage({ me }: { me: Me }) {
  const [items, setItems] = useState<Approval[]>([]);
  const { note, setNote, error, run } = useActions();
  const canDecide = me.user.role === "owner" || me.user.role === "approver";
  const fetchItems = async () => setItems(await api<Approval[]>("GET", "/approvals?all=true"));
  useEffect(() => {
    run(fetchItems);
  }, []);
  const decide = (a: Approval, decision: "approve" | "reject") =>
    run(async () => {
      const done = await withStepUp(() => api<Approval>("POST", `/approvals/${a.requestId}/${decision}`));
      await fetchItems();
      setNote(`${a.amount} ${a.currency}: ${done.state === "pending" ? "your approval is counted" : done.state}.`);
    });
  return (
    <section>
      <h1>Approvals</h1>
      <p class="muted">Payouts over your payout policy wait here, debited and held, until approved.</p>
      <ErrorNote error={error} />
      {note && (
        <p class="note" role="status">
          {note}
        </p>
      )}
      <table>
        <thead>
          <tr>
            <th>Created</th>
            <th>Payout</th>
            <th>Amount</th>
            <th>Why</th>
            <th>Approvals</th>
            <th>State</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {items.map((a) => {
            const approvals = a.decisions.filter((d) => d.decision === "approve").length;
            const mine = a.initiatorUserId === me.user.id || a.decisions.some((d) => d.userId === me.user.id);
            return (
              <tr key={a.requestId}>
                <td>{when(a.createdAt)}</td>
                <td>
                  {a.operation} to <code>{a.destination}</code>
                </td>
                <td>
                  {a.amount} {a.currency}
                </td>
                <td>{REASONS[a.reason]}</td>
                <td>
                  {approvals} of {a.approvalsRequired}
                </td>
                <td>{a.state}</td>
                <td>
                  {canDecide && a.state === "pending" && !mine && (
                    <>
                      <button type="button" onClick={() => decide(a, "approve")}>
                        Approve
                      </button>{" "}
                      <button type="button" class="danger" onClick={() => decide(a, "reject")}>
                        Reject
                      </button>
                    </>
                  )}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
      {items.length === 0 && <p class="muted">No payout waits for approval.</p>}
      <Policies me={me} />
    </section>
  );
}

function Policies({ me }: { me: Me }) {
  const [policies, setPolicies] = useState<Policy[]>([]);
  const [currency, setCurrency] = useState("USDT");
  const [perPayout, setPerPayout] = useState("");
  const [daily, setDaily] = useState("");
  const [approvals, setApprovals] = useState("1");
  const { note, setNote, error, run } = useActions();
  const fetchPolicies = async () => setPolicies(await api<Policy[]>("GET", "/payout-policies"));
  useEffect(() => {
    run(fetchPolicies);
  }, []);
  const save = (e: Event) => {
    e.preventDefault();
    run(async () => {
      const body = {
        perPayoutLimit: perPayout.trim() || null,
        dailyLimit: daily.trim() || null,
        approvalsRequired: Number(approvals),
      };
      const saved = await withStepUp(() => api<Policy>("PUT", `/payout-policies/${currency.trim()}`, body));
      await fetchPolicies();
      setNote(saved.pending ? `Saved; the looser limits apply from ${when(saved.pending.effectiveAt)}.` : "Saved.");
    });
  };
  return (
    <>
      <h2>Payout policies</h2>
      <ErrorNote error={error} />
      {note && (
        <p class="note" role="status">
          {note}
        </p>
      )}
      <table>
        <thead>
          <tr>
            <th>Currency</th>
            <th>Per payout</th>
            <th>Per 24 hours</th>
            <th>Approvals</th>
            <th>Pending loosening</th>
          </tr>
        </thead>
        <tbody>
          {policies.map((p) => (
            <tr key={p.currency}>
              <td>{p.currency}</td>
              <td>{p.perPayoutLimit ?? "—"}</td>
              <td>{p.dailyLimit ?? "—"}</td>
              <td>{p.approvalsRequired}</td>
              <td>{p.pending ? `from ${when(p.pending.effectiveAt)}` : "—"}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {me.user.role === "owner" && (
        <form class="fields" onSubmit={save} aria-label="Payout policy">
          <label>
            Currency <input value={currency} onInput={(e) => setCurrency((e.target as HTMLInputElement).value)} />
          </label>
          <label>
            Limit per payout{" "}
            <input value={perPayout} onInput={(e) => setPerPayout((e.target as HTMLInputElement).value)} />
          </label>
          <label>
            Limit per 24 hours <input value={daily} onInput={(e) => setDaily((e.target as HTMLInputElement).value)} />
          </label>
          <label>
            Approvals needed
            <select value={approvals} onChange={(e) => setApprovals((e.target as HTMLSelectElement).value)}>
              {["0", "1", "2", "3"].map((n) => (
                <option key={n} value={n}>
                  {n}
                </option>
              ))}
            </select>
          </label>
          <button type="submit">Save policy</button>
        </form>
      )}
    </>
  );
}
