// Pieces every dashboard page shares: navigation, error notes, the step-up retry and dates.
import { useState } from "preact/hooks";
import { ApiError, api } from "./api.ts";

export function navigate(path: string): void {
  history.pushState(null, "", `/dashboard/${path}`);
  dispatchEvent(new PopStateEvent("popstate"));
}

export function message(error: unknown): string {
  return error instanceof ApiError ? error.problem.detail : "Something went wrong; try again.";
}

export function ErrorNote({ error }: { error: string | null }) {
  return error ? (
    <p class="error" role="alert">
      {error}
    </p>
  ) : null;
}

/** Runs a sensitive action; when the server asks for a step-up, asks for the password and retries once. */
export async function withStepUp<T>(action: () => Promise<T>): Promise<T> {
  try {
    return await action();
  } catch (error) {
    if (!(error instanceof ApiError) || error.problem.code !== "step_up_required") throw error;
    const password = prompt("Confirm with your password (or a TOTP code)");
    if (!password) throw error;
    await api("POST", "/step-up", /^\d{6}$/.test(password) ? { code: password } : { password });
    return action();
  }
}

export function when(iso: string | null): string {
  return iso === null ? "—" : new Date(iso).toLocaleString();
}

/** A page's actions: `run` clears the notes, runs the work and shows its failure as the error note. */
export function useActions() {
  const [note, setNote] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const run = async (work: () => Promise<void>) => {
    setError(null);
    setNote(null);
    try {
      await work();
    } catch (e) {
      setError(message(e));
    }
  };
  return { note, setNote, error, setError, run };
}
