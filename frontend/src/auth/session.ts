// Whether the dashboard must ask the user to sign in. Any API answer 401 (no session, or it ended: signed out
// elsewhere, expired, password changed) marks the session ended; the app then shows the sign-in page in place
// of the page, keeping the hash route, so that signing in again lands on the same permalink.
import { useSyncExternalStore } from "react";

export type SessionState = "unknown" | "signedIn" | "ended";

/** Why the sign-in page is shown: first visit, the session ended under the user, or they signed out. */
export type EndReason = "none" | "expired" | "signedOut";

let state: SessionState = "unknown";
let reason: EndReason = "none";
const listeners = new Set<() => void>();

function set(next: SessionState, why: EndReason = "none"): void {
  if (next === state && why === reason) return;
  state = next;
  reason = why;
  for (const listener of listeners) listener();
}

/** An API call answered 401: show the sign-in page (several at once: the first one says why). */
export function sessionEnded(): void {
  if (state !== "ended") set("ended", state === "signedIn" ? "expired" : "none");
}

/** The user pressed "Sign out". */
export function signedOut(): void {
  set("ended", "signedOut");
}

export function signedIn(): void {
  set("signedIn");
}

export function endReason(): EndReason {
  return reason;
}

function subscribe(onChange: () => void): () => void {
  listeners.add(onChange);
  return () => {
    listeners.delete(onChange);
  };
}

export function useSessionState(): SessionState {
  return useSyncExternalStore(subscribe, () => state);
}

/**
 * The 401 answers that do not mean "signed out": a wrong password on the sign-in form, and a wrong current
 * password when changing it.
 */
const NOT_A_SESSION_END = ["/api/v1/auth/login", "/api/v1/auth/password"];

export function endsSession(status: number, url: string): boolean {
  if (status !== 401) return false;
  const path = new URL(url, "http://localhost").pathname;
  return !NOT_A_SESSION_END.includes(path);
}
