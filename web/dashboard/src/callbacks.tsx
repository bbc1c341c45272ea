// The callbacks page: the default callback URL, the callback secret (revealed or rotated after a step-up), and a test event.
import { useEffect, useState } from "preact/hooks";
import { api, type Me, type ResponseBody } from "./api.ts";
import { type CallbackEvent, CallbackEventCard } from "./invoices.tsx";
import { ErrorNote, message, useActions, when, withStepUp } from "./ui.tsx";

type Settings = ResponseBody<"DashboardCallbackSettings">;

export function CallbacksPage({ me }: { me: Me }) {
  const [settings, setSettings] = useState<Settings | null>(null);
  const [url, setUrl] = useState("");
  const [secret, setSecret] = useState<string | null>(null);
  const [testEvent, setTestEvent] = useState<CallbackEvent | null>(null);
  const { note, setNote, error, setError, run } = useActions();
  const canManage = me.user.role === "owner" || me.user.role === "developer";
  const show = (s: Settings) => {
    setSettings(s);
    setUrl(s.defaultCallbackUrl ?? "");
  };
  useEffect(() => {
    api<Settings>("GET", "/callbacks").then(show, (e) => setError(message(e)));
  }, []);
  const saveUrl = (e: Event) => {
    e.preventDefault();
    run(async () => {
      show(await api<Settings>("PUT", "/callbacks/url", { callbackUrl: url.trim() === "" ? null : url.trim() }));
      setNote(url.trim() === "" ? "Default callback URL cleared." : "Default callback URL saved.");
    });
  };
  const reveal = () =>
    run(async () => {
      const s = await withStepUp(() =>
        api<ResponseBody<"DashboardRevealCallbackSecret">>("POST", "/callbacks/secret/reveal"),
      );
      setSecret(s.callbackSecret);
    });
  const rotate = () => {
    if (!confirm("Rotate the callback secret? For 24 hours callbacks carry signatures with both secrets.")) return;
    run(async () => {
      const s = await withStepUp(() =>
        api<ResponseBody<"DashboardRotateCallbackSecret">>("POST", "/callbacks/secret/rotate"),
      );
      setSecret(s.callbackSecret);
      setSettings((old) => old && { ...old, secretRotatedAt: s.rotatedAt });
      setNote("Secret rotated. Update your endpoint within 24 hours.");
    });
  };
  const sendTest = () =>
    run(async () => {
      setTestEvent(await api<CallbackEvent>("POST", "/callbacks/test"));
    });
  const refreshTest = () =>
    run(async () => {
      if (testEvent) setTestEvent(await api<CallbackEvent>("GET", `/callback-events/${testEvent.id}`));
    });

  if (!settings) {
    return (
      <section>
        <h1>Callbacks</h1>
        <ErrorNote error={error} />
        {!error && <p class="muted">Loading…</p>}
      </section>
    );
  }
  return (
    <section>
      <h1>Callbacks</h1>
      <ErrorNote error={error} />
      {note && (
        <p class="note" role="status">
          {note}
        </p>
      )}
      <form class="card" onSubmit={saveUrl}>
        <h2>Default callback URL</h2>
        <p class="muted">
          Withdrawal, refund and test events are sent here. An invoice's events go to the callbackUrl it was created
          with.
        </p>
        <label>
          URL
          <input
            type="url"
            name="callbackUrl"
            placeholder="https://shop.example/callbacks"
            value={url}
            onInput={(e) => setUrl(e.currentTarget.value)}
            readOnly={!canManage}
          />
        </label>
        {canManage && (
          <button type="submit" class="primary">
            Save
          </button>
        )}
      </form>

      <div class="card">
        <h2>Signing secret</h2>
        <p class="muted">
          Every callback is signed with this secret (Standard Webhooks). Last rotated:{" "}
          {settings.secretRotatedAt ? when(settings.secretRotatedAt) : "never"}.
        </p>
        {secret && (
          <div class="reveal-link">
            <label>
              Secret
              <input readOnly value={secret} data-testid="callback-secret" onFocus={(e) => e.currentTarget.select()} />
            </label>
            <button type="button" onClick={() => navigator.clipboard?.writeText(secret)}>
              Copy secret
            </button>{" "}
            <button type="button" onClick={() => setSecret(null)}>
              Hide
            </button>
          </div>
        )}
        {canManage && (
          <p class="actions">
            {!secret && (
              <button type="button" onClick={reveal}>
                Reveal secret
              </button>
            )}{" "}
            <button type="button" class="danger" onClick={rotate}>
              Rotate secret
            </button>
          </p>
        )}
      </div>

      <div class="card">
        <h2>Test event</h2>
        <p class="muted">Sends a signed test event to the default callback URL, recorded like any callback.</p>
        {canManage && (
          <p class="actions">
            <button type="button" class="primary" onClick={sendTest} disabled={!settings.defaultCallbackUrl}>
              Send test event
            </button>{" "}
            {testEvent && (
              <button type="button" onClick={refreshTest}>
                Refresh
              </button>
            )}
          </p>
        )}
        {testEvent && <CallbackEventCard event={testEvent} />}
      </div>
    </section>
  );
}
