// The merchant's dashboard: sign-in (with TOTP), invitations, overview, API keys, team, audit log and account.
import { render } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { ApiError, api, type Me, type ResponseBody, setCsrf } from "./api.ts";
import { ApiKeysPage } from "./apiKeys.tsx";
import { ApprovalsPage } from "./approvals.tsx";
import { CallbacksPage } from "./callbacks.tsx";
import { type OverviewChartData, OverviewCharts } from "./chart.tsx";
import { DepositAddressesPage } from "./depositAddresses.tsx";
import { InvoicesPage } from "./invoices.tsx";
import { LedgerPage, RefundsPage, WithdrawalMethodsPage, WithdrawalsPage } from "./money.tsx";
import "./styles.css";
import { SubscriptionsPage } from "./subscriptions.tsx";
import { ErrorNote, message, navigate, useActions, when, withStepUp } from "./ui.tsx";

type Page =
  | "overview"
  | "invoices"
  | "subscriptions"
  | "deposit-addresses"
  | "withdrawals"
  | "approvals"
  | "refunds"
  | "ledger"
  | "withdrawal-methods"
  | "api-keys"
  | "callbacks"
  | "team"
  | "audit"
  | "account";
const EVERYONE: Me["user"]["role"][] = ["owner", "developer", "viewer", "approver"];
const PAGES: { id: Page; label: string; roles: Me["user"]["role"][] }[] = [
  { id: "overview", label: "Overview", roles: EVERYONE },
  { id: "invoices", label: "Invoices", roles: EVERYONE },
  { id: "subscriptions", label: "Subscriptions", roles: EVERYONE },
  { id: "deposit-addresses", label: "Deposit addresses", roles: EVERYONE },
  { id: "withdrawals", label: "Withdrawals", roles: EVERYONE },
  { id: "approvals", label: "Approvals", roles: EVERYONE },
  { id: "refunds", label: "Refunds", roles: EVERYONE },
  { id: "ledger", label: "Ledger", roles: EVERYONE },
  { id: "withdrawal-methods", label: "Withdrawal methods", roles: EVERYONE },
  { id: "api-keys", label: "API keys", roles: EVERYONE },
  { id: "callbacks", label: "Callbacks", roles: EVERYONE },
  { id: "team", label: "Team", roles: EVERYONE },
  { id: "audit", label: "Audit log", roles: ["owner"] },
  { id: "account", label: "Account", roles: EVERYONE },
];

function currentPath(): string {
  return location.pathname.replace(/^\/dashboard\/?/, "").replace(/\/$/, "");
}

function SignIn({ onSignedIn }: { onSignedIn: (me: Me) => void }) {
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [code, setCode] = useState("");
  const [needCode, setNeedCode] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const codeInput = useRef<HTMLInputElement>(null);
  // The code step takes the focus, so a keyboard user types the code straight away.
  useEffect(() => {
    if (needCode) codeInput.current?.focus();
  }, [needCode]);
  const submit = async (event: Event) => {
    event.preventDefault();
    setError(null);
    try {
      onSignedIn(await api<Me>("POST", "/session", { email, password, ...(needCode ? { code } : {}) }));
    } catch (e) {
      if (e instanceof ApiError && e.problem.code === "totp_required") setNeedCode(true);
      else setError(message(e));
    }
  };
  return (
    <main class="auth">
      <form class="card" onSubmit={submit}>
        <h1>Sign in</h1>
        {needCode ? (
          <label>
            Authentication code
            <input
              name="code"
              inputMode="numeric"
              autoComplete="one-time-code"
              ref={codeInput}
              value={code}
              onInput={(e) => setCode(e.currentTarget.value)}
              required
            />
            <small>The 6-digit code from your authenticator app, or a recovery code.</small>
          </label>
        ) : (
          <>
            <label>
              Email
              <input
                name="email"
                type="email"
                autoComplete="username"
                value={email}
                onInput={(e) => setEmail(e.currentTarget.value)}
                required
              />
            </label>
            <label>
              Password
              <input
                name="password"
                type="password"
                autoComplete="current-password"
                value={password}
                onInput={(e) => setPassword(e.currentTarget.value)}
                required
              />
            </label>
          </>
        )}
        <ErrorNote error={error} />
        <button type="submit" class="primary">
          {needCode ? "Verify" : "Sign in"}
        </button>
      </form>
    </main>
  );
}

function AcceptInvitation({ onSignedIn }: { onSignedIn: (me: Me) => void }) {
  const token = new URLSearchParams(location.hash.slice(1)).get("token") ?? "";
  const [password, setPassword] = useState("");
  // An existing login with TOTP confirms with its code too, as at sign-in.
  const [code, setCode] = useState("");
  const [needCode, setNeedCode] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const submit = async (event: Event) => {
    event.preventDefault();
    setError(null);
    try {
      const me = await api<Me>("POST", "/invitations/accept", { token, password, ...(needCode ? { code } : {}) });
      history.replaceState(null, "", "/dashboard/overview");
      onSignedIn(me);
    } catch (e) {
      if (e instanceof ApiError && e.problem.code === "totp_required") setNeedCode(true);
      else setError(message(e));
    }
  };
  return (
    <main class="auth">
      <form class="card" onSubmit={submit}>
        <h1>Welcome</h1>
        <p>Choose a password to finish setting up your account.</p>
        <label>
          New password
          <input
            name="password"
            type="password"
            autoComplete="new-password"
            minLength={12}
            value={password}
            onInput={(e) => setPassword(e.currentTarget.value)}
            required
          />
          <small>At least 12 characters.</small>
        </label>
        {needCode && (
          <label>
            Authentication code
            <input
              name="code"
              inputMode="numeric"
              autoComplete="one-time-code"
              value={code}
              onInput={(e) => setCode(e.currentTarget.value)}
              required
            />
          </label>
        )}
        <ErrorNote error={error} />
        <button type="submit" class="primary">
          {needCode ? "Verify" : "Set password"}
        </button>
      </form>
    </main>
  );
}

type Activity = ResponseBody<"DashboardOverview">["recent"][number];

/** Where an event's subject is shown: invoices, withdrawals and refunds each have a detail page; subscriptions and deposits their list. */
function subjectPath(activity: Activity): string {
  const kind = activity.type.split(".")[0];
  if (kind === "subscription") return "subscriptions";
  if (kind === "deposit") return "deposit-addresses";
  const section = kind === "withdrawal" ? "withdrawals" : kind === "refund" ? "refunds" : "invoices";
  return `${section}/${encodeURIComponent(activity.subjectId)}`;
}

function Overview() {
  const [overview, setOverview] = useState<ResponseBody<"DashboardOverview"> | null>(null);
  const [chart, setChart] = useState<OverviewChartData | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    api<ResponseBody<"DashboardOverview">>("GET", "/overview").then(setOverview, (e) => setError(message(e)));
    api<OverviewChartData>("GET", "/overview/chart").then(setChart, (e) => setError(message(e)));
  }, []);
  return (
    <section>
      <h1>Overview</h1>
      <ErrorNote error={error} />
      <h2>Balances</h2>
      <div class="tiles">
        {(overview?.balances ?? []).map((b) => (
          <div class="tile" key={b.currency}>
            <span class="muted">{b.currency}</span>
            <strong>{b.available}</strong>
            {/* A ticker on several networks: its total, then each network's part (balances are per network). */}
            {b.networks.length > 1 && (
              <ul class="tile-networks muted" aria-label={`${b.currency} by network`}>
                {b.networks.map((n) => (
                  <li key={n.internalTicker} data-network={n.network}>
                    {n.network}: {n.available}
                  </li>
                ))}
              </ul>
            )}
          </div>
        ))}
      </div>
      <h2>Last 30 days</h2>
      {chart && <OverviewCharts chart={chart} />}
      <h2>Recent activity</h2>
      {overview && overview.recent.length === 0 ? (
        <p class="muted">Nothing yet: invoices, withdrawals and refunds appear here as they change.</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">What happened</th>
              <th scope="col">Details</th>
            </tr>
          </thead>
          <tbody>
            {(overview?.recent ?? []).map((a) => (
              <tr key={a.id}>
                <td>{when(a.createdAt)}</td>
                <td>{a.summary}</td>
                <td>
                  <a
                    href={`/dashboard/${subjectPath(a)}`}
                    onClick={(e) => {
                      e.preventDefault();
                      navigate(subjectPath(a));
                    }}
                  >
                    <code>{a.subjectId}</code>
                  </a>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

type Member = ResponseBody<"DashboardListTeam">[number];

function Team({ me }: { me: Me }) {
  const [members, setMembers] = useState<Member[]>([]);
  const [email, setEmail] = useState("");
  const [role, setRole] = useState("developer");
  const [invite, setInvite] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const owner = me.user.role === "owner";
  const load = () => api<Member[]>("GET", "/team").then(setMembers, (e) => setError(message(e)));
  useEffect(() => {
    load();
  }, []);
  const act = async (work: () => Promise<unknown>) => {
    setError(null);
    try {
      await withStepUp(work);
      await load();
    } catch (e) {
      setError(message(e));
    }
  };
  return (
    <section>
      <h1>Team</h1>
      <ErrorNote error={error} />
      {owner && (
        <form
          class="card inline"
          onSubmit={(e) => {
            e.preventDefault();
            act(async () => {
              const made = await api<ResponseBody<"DashboardInvite">>("POST", "/team", { email, role });
              setInvite(made.inviteUrl);
              setEmail("");
            });
          }}
        >
          <label>
            Email
            <input type="email" value={email} onInput={(e) => setEmail(e.currentTarget.value)} required />
          </label>
          <label>
            Role
            <select value={role} onChange={(e) => setRole(e.currentTarget.value)}>
              <option value="owner">Owner</option>
              <option value="developer">Developer</option>
              <option value="viewer">Viewer</option>
            </select>
          </label>
          <button type="submit" class="primary">
            Invite
          </button>
        </form>
      )}
      {invite && (
        <p class="card" role="status">
          Send this single-use link (valid 72 hours): <code>{invite}</code>
        </p>
      )}
      <table>
        <thead>
          <tr>
            <th>Email</th>
            <th>Role</th>
            <th>Status</th>
            <th>TOTP</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {members.map((m) => (
            <tr key={m.id}>
              <td>{m.email}</td>
              <td>
                {owner && m.id !== me.user.id ? (
                  <select
                    aria-label={`Role of ${m.email}`}
                    value={m.role}
                    onChange={(e) => {
                      const next = e.currentTarget.value;
                      act(() => api("PATCH", `/team/${m.id}`, { role: next }));
                    }}
                  >
                    <option value="owner">Owner</option>
                    <option value="developer">Developer</option>
                    <option value="viewer">Viewer</option>
                  </select>
                ) : (
                  m.role
                )}
              </td>
              <td>
                <span class={m.status === "active" ? "badge ok" : "badge"}>{m.status}</span>
              </td>
              <td>{m.totpEnabled ? "On" : "Off"}</td>
              <td>
                {owner && m.id !== me.user.id && (
                  <button
                    type="button"
                    class="danger"
                    onClick={() => confirm(`Remove ${m.email}?`) && act(() => api("DELETE", `/team/${m.id}`))}
                  >
                    Remove
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

type AuditItem = ResponseBody<"DashboardAuditLog">["items"][number];

function Audit() {
  const [items, setItems] = useState<AuditItem[]>([]);
  const [next, setNext] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const load = async (before?: string) => {
    try {
      const page = await api<ResponseBody<"DashboardAuditLog">>(
        "GET",
        `/audit?limit=50${before ? `&before=${encodeURIComponent(before)}` : ""}`,
      );
      setItems((old) => (before ? [...old, ...page.items] : page.items));
      setNext(page.nextBefore);
    } catch (e) {
      setError(message(e));
    }
  };
  useEffect(() => {
    load();
  }, []);
  return (
    <section>
      <h1>Audit log</h1>
      <ErrorNote error={error} />
      <table>
        <thead>
          <tr>
            <th>Time</th>
            <th>User</th>
            <th>Action</th>
            <th>Target</th>
            <th>Address</th>
          </tr>
        </thead>
        <tbody>
          {items.map((i) => (
            <tr key={i.id}>
              <td>{when(i.createdAt)}</td>
              <td>{i.userEmail ?? "—"}</td>
              <td>
                <code>{i.action}</code>
              </td>
              <td>{i.target ?? "—"}</td>
              <td>{i.address ?? "—"}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {next && (
        <button type="button" onClick={() => load(next)}>
          Load more
        </button>
      )}
    </section>
  );
}

function Account({ me, onChange }: { me: Me; onChange: () => void }) {
  const [current, setCurrent] = useState("");
  const [next, setNext] = useState("");
  const [enrolment, setEnrolment] = useState<{ secret: string; qrCodeSvg: string } | null>(null);
  const [code, setCode] = useState("");
  const [recovery, setRecovery] = useState<string[] | null>(null);
  const { note, setNote, error, run } = useActions();
  return (
    <section>
      <h1>Account</h1>
      <p class="muted">{me.user.email}</p>
      <ErrorNote error={error} />
      {note && (
        <p class="note" role="status">
          {note}
        </p>
      )}
      <form
        class="card"
        onSubmit={(e) => {
          e.preventDefault();
          run(async () => {
            await api("POST", "/account/password", { currentPassword: current, newPassword: next });
            setCurrent("");
            setNext("");
            setNote("Password changed. Your other sessions were signed out.");
          });
        }}
      >
        <h2>Password</h2>
        <label>
          Current password
          <input
            type="password"
            autoComplete="current-password"
            value={current}
            onInput={(e) => setCurrent(e.currentTarget.value)}
            required
          />
        </label>
        <label>
          New password
          <input
            type="password"
            autoComplete="new-password"
            minLength={12}
            value={next}
            onInput={(e) => setNext(e.currentTarget.value)}
            required
          />
        </label>
        <button type="submit" class="primary">
          Change password
        </button>
      </form>
      <div class="card">
        <h2>Two-factor authentication</h2>
        {recovery ? (
          <>
            <p>TOTP is on. Keep these recovery codes somewhere safe; each works once, and they are shown only now.</p>
            <ul class="codes" data-testid="recovery-codes">
              {recovery.map((c) => (
                <li key={c}>
                  <code>{c}</code>
                </li>
              ))}
            </ul>
            <button
              type="button"
              onClick={() => {
                setRecovery(null);
                onChange();
              }}
            >
              Done
            </button>
          </>
        ) : me.user.totpEnabled ? (
          <form
            onSubmit={(e) => {
              e.preventDefault();
              const code = (e.currentTarget.elements.namedItem("disable-code") as HTMLInputElement).value;
              run(async () => {
                await api("POST", "/account/totp/disable", { code });
                onChange();
              });
            }}
          >
            <p>TOTP is on: every sign-in asks for a code.</p>
            <label>
              Code from your authenticator app, or a recovery code
              <input name="disable-code" autoComplete="one-time-code" required maxLength={32} />
            </label>
            <button type="submit" class="danger">
              Turn off TOTP
            </button>
          </form>
        ) : enrolment ? (
          <form
            onSubmit={(e) => {
              e.preventDefault();
              run(async () => {
                const done = await api<ResponseBody<"DashboardTotpEnable">>("POST", "/account/totp/enable", { code });
                setEnrolment(null);
                setRecovery(done.recoveryCodes);
              });
            }}
          >
            <p>Scan this code with your authenticator app, then enter the code it shows.</p>
            <img
              class="qr"
              alt="QR code of the TOTP secret"
              src={`data:image/svg+xml;utf8,${encodeURIComponent(enrolment.qrCodeSvg)}`}
            />
            <p>
              Or enter this key by hand: <code data-testid="totp-secret">{enrolment.secret}</code>
            </p>
            <label>
              Code
              <input
                name="code"
                inputMode="numeric"
                autoComplete="one-time-code"
                value={code}
                onInput={(e) => setCode(e.currentTarget.value)}
                required
              />
            </label>
            <button type="submit" class="primary">
              Turn on TOTP
            </button>
          </form>
        ) : (
          <>
            <p>Protect your account with a code from an authenticator app at every sign-in.</p>
            <button
              type="button"
              class="primary"
              onClick={() => run(async () => setEnrolment(await withStepUp(() => api("POST", "/account/totp/setup"))))}
            >
              Set up TOTP
            </button>
          </>
        )}
      </div>
    </section>
  );
}

function Shell({
  me,
  page,
  path,
  onSignOut,
  onSwitch,
  reload,
}: {
  me: Me;
  page: Page;
  path: string;
  onSignOut: () => void;
  onSwitch: (merchantId: string) => void;
  reload: () => void;
}) {
  const visible = PAGES.filter((p) => p.roles.includes(me.user.role));
  return (
    <div class="shell">
      <nav aria-label="Dashboard">
        {me.merchants.length > 1 ? (
          <label class="brand switcher">
            <span class="muted">Account</span>
            <select value={me.merchant.id} onChange={(e) => onSwitch((e.target as HTMLSelectElement).value)}>
              {me.merchants.map((m) => (
                <option key={m.id} value={m.id}>
                  {m.name ?? m.id}
                </option>
              ))}
            </select>
          </label>
        ) : (
          <div class="brand">{me.merchant.name ?? "Dashboard"}</div>
        )}
        <ul>
          {visible.map((p) => (
            <li key={p.id}>
              <a
                href={`/dashboard/${p.id}`}
                aria-current={p.id === page ? "page" : undefined}
                onClick={(e) => {
                  e.preventDefault();
                  navigate(p.id);
                }}
              >
                {p.label}
              </a>
            </li>
          ))}
        </ul>
        <div class="who">
          <span>{me.user.email}</span>
          <span class="muted">{me.user.role}</span>
          <button type="button" onClick={onSignOut}>
            Sign out
          </button>
        </div>
      </nav>
      {/* Keyed by merchant: switching accounts starts every page afresh, with nothing of the other merchant. */}
      <main key={me.merchant.id}>
        {page === "overview" && <Overview />}
        {page === "invoices" && <InvoicesPage me={me} path={path} />}
        {page === "subscriptions" && <SubscriptionsPage me={me} />}
        {page === "deposit-addresses" && <DepositAddressesPage me={me} />}
        {page === "withdrawals" && <WithdrawalsPage me={me} path={path} />}
        {page === "approvals" && <ApprovalsPage me={me} />}
        {page === "refunds" && <RefundsPage me={me} path={path} />}
        {page === "ledger" && <LedgerPage />}
        {page === "withdrawal-methods" && <WithdrawalMethodsPage me={me} />}
        {page === "api-keys" && <ApiKeysPage me={me} />}
        {page === "callbacks" && <CallbacksPage me={me} />}
        {page === "team" && <Team me={me} />}
        {page === "audit" && <Audit />}
        {page === "account" && <Account me={me} onChange={reload} />}
      </main>
    </div>
  );
}

function App() {
  const [me, setMe] = useState<Me | null | undefined>(undefined);
  const [path, setPath] = useState(currentPath());
  const signedIn = (value: Me) => {
    setCsrf(value.csrfToken);
    setMe(value);
  };
  const reload = () => api<Me>("GET", "/session").then(signedIn, () => setMe(null));
  useEffect(() => {
    const onPop = () => setPath(currentPath());
    addEventListener("popstate", onPop);
    if (currentPath() !== "accept") reload();
    else setMe(null);
    return () => removeEventListener("popstate", onPop);
  }, []);
  if (path === "accept" && !me) return <AcceptInvitation onSignedIn={signedIn} />;
  if (me === undefined) return <p class="loading">Loading…</p>;
  if (me === null) return <SignIn onSignedIn={signedIn} />;
  const section = path.split("/")[0];
  const page = (PAGES.find((p) => p.id === section && p.roles.includes(me.user.role))?.id ?? "overview") as Page;
  const signOut = async () => {
    await api("DELETE", "/session").catch(() => undefined);
    setMe(null);
    history.replaceState(null, "", "/dashboard/");
    setPath("");
  };
  const switchTo = async (merchantId: string) => {
    signedIn(await api<Me>("POST", "/session/merchant", { merchantId }));
    history.pushState(null, "", "/dashboard/");
    setPath("");
  };
  return <Shell me={me} page={page} path={path} onSignOut={signOut} onSwitch={switchTo} reload={reload} />;
}

const root = document.getElementById("app");
if (root) render(<App />, root);
