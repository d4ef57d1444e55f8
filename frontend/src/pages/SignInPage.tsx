import { useState, type SubmitEvent } from "react";
import { ApiError } from "../api/http";
import { useSignIn } from "../api/auth";
import { signedIn, type EndReason } from "../auth/session";
import { Layout } from "../components/Layout";

const NOTES: Record<EndReason, string | null> = {
  none: null,
  expired: "Your session has ended. Sign in again to go on where you were.",
  signedOut: "You signed out.",
};

function message(error: unknown): string {
  if (error instanceof ApiError && error.status === 401) return "Wrong username or password.";
  return error instanceof Error ? error.message : String(error);
}

/** Shown in place of any page while nobody is signed in; the page's hash route stays, so signing in returns to it. */
export function SignInPage({ reason }: { reason: EndReason }) {
  const signIn = useSignIn();
  const [username, setUsername] = useState("");
  const [password, setPassword] = useState("");
  const note = NOTES[reason];
  const submit = (event: SubmitEvent<HTMLFormElement>) => {
    event.preventDefault();
    signIn.mutate(
      { username: username.trim(), password },
      {
        onSuccess: () => {
          signedIn();
        },
        onError: () => {
          setPassword("");
        },
      },
    );
  };
  return (
    <Layout crumbs={[]} title="Sign in">
      <form className="panel signin" onSubmit={submit} aria-labelledby="signin-heading" aria-busy={signIn.isPending}>
        <h2 id="signin-heading">Sign in to Kneeboard</h2>
        {note && (
          <p className="note" role="status">
            {note}
          </p>
        )}
        <label>
          Username
          <input
            name="username"
            autoComplete="username"
            autoCapitalize="none"
            spellCheck={false}
            autoFocus
            required
            maxLength={64}
            value={username}
            onChange={(e) => {
              setUsername(e.target.value);
            }}
          />
        </label>
        <label>
          Password
          <input
            name="password"
            type="password"
            autoComplete="current-password"
            required
            maxLength={1024}
            value={password}
            onChange={(e) => {
              setPassword(e.target.value);
            }}
          />
        </label>
        <div className="actions">
          <button type="submit" disabled={signIn.isPending || !username.trim() || !password}>
            {signIn.isPending ? "Signing in…" : "Sign in"}
          </button>
        </div>
        {signIn.isError && (
          <p className="error" role="alert">
            {message(signIn.error)}
          </p>
        )}
        <p className="muted small-text">
          No account yet? A site admin creates one. Scripts and CI use a personal API token instead (made on the Account
          page once signed in).
        </p>
      </form>
    </Layout>
  );
}
