import { useState, type SubmitEvent } from "react";
import { useChangePassword, useCreateToken, useRevokeToken, useTokens } from "../api/auth";
import type { ApiTokenCreated } from "../api/types";
import { useCurrentUser } from "../auth/context";
import { ROLE_HELP } from "../auth/roles";
import { parseExpiryDays, tokenStatus, type TokenStatus } from "../auth/tokens";
import { ConfirmButton } from "../components/ConfirmDialog";
import { Layout } from "../components/Layout";
import { Empty, ErrorMessage, QueryView } from "../components/QueryView";
import { TableHead } from "../components/TableHead";
import { formatTime } from "../lib/format";
import { DEFAULT_AUDIT_QUERY, href } from "../lib/route";

const MIN_PASSWORD = 10;

function Profile() {
  const me = useCurrentUser();
  return (
    <section className="panel" aria-labelledby="profile-heading">
      <h2 id="profile-heading">Profile</h2>
      <dl className="facts">
        <div>
          <dt>Username</dt>
          <dd>{me.username}</dd>
        </div>
        <div>
          <dt>Site admin</dt>
          <dd>{me.is_site_admin ? "yes" : "no"}</dd>
        </div>
      </dl>
      <h3>Your teams</h3>
      {me.teams.length === 0 ? (
        <Empty>You are in no team yet: create one on the projects page, or ask a team admin to add you.</Empty>
      ) : (
        <ul className="plain team-list">
          {me.teams.map((t) => (
            <li key={t.id}>
              <a href={href({ page: "team", teamId: t.id, query: DEFAULT_AUDIT_QUERY })}>{t.name}</a>{" "}
              <span className="badge badge-muted">{t.role}</span>{" "}
              <span className="muted small-text">{ROLE_HELP[t.role]}</span>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

function ChangePassword() {
  const change = useChangePassword();
  const [current, setCurrent] = useState("");
  const [next, setNext] = useState("");
  const [repeat, setRepeat] = useState("");
  const mismatch = repeat !== "" && next !== repeat;
  const submit = (event: SubmitEvent<HTMLFormElement>) => {
    event.preventDefault();
    if (next !== repeat) return;
    change.mutate(
      { current_password: current, new_password: next },
      {
        onSuccess: () => {
          setCurrent("");
          setNext("");
          setRepeat("");
        },
      },
    );
  };
  return (
    <form className="panel" onSubmit={submit} aria-labelledby="password-heading">
      <h2 id="password-heading">Change your password</h2>
      <label>
        Current password
        <input
          type="password"
          autoComplete="current-password"
          required
          value={current}
          onChange={(e) => {
            setCurrent(e.target.value);
            change.reset();
          }}
        />
      </label>
      <label>
        <span>
          New password <span className="muted">(at least {MIN_PASSWORD} characters)</span>
        </span>
        <input
          type="password"
          autoComplete="new-password"
          required
          minLength={MIN_PASSWORD}
          maxLength={1024}
          value={next}
          onChange={(e) => {
            setNext(e.target.value);
            change.reset();
          }}
        />
      </label>
      <label>
        Repeat the new password
        <input
          type="password"
          autoComplete="new-password"
          required
          aria-invalid={mismatch}
          aria-describedby={mismatch ? "password-mismatch" : undefined}
          value={repeat}
          onChange={(e) => {
            setRepeat(e.target.value);
            change.reset();
          }}
        />
      </label>
      {mismatch && (
        <p className="error" id="password-mismatch">
          The two new passwords differ.
        </p>
      )}
      <div className="actions">
        <button type="submit" disabled={change.isPending || !current || next.length < MIN_PASSWORD || next !== repeat}>
          {change.isPending ? "Changing…" : "Change password"}
        </button>
      </div>
      {change.isError && <ErrorMessage error={change.error} />}
      {change.isSuccess && (
        <p className="ok" role="status">
          Password changed. Your other dashboard sessions were signed out; API tokens keep working.
        </p>
      )}
    </form>
  );
}

/** The secret of a token just created: shown here once, never again. */
function NewToken({ token, onDone }: { token: ApiTokenCreated; onDone: () => void }) {
  const [copied, setCopied] = useState<"no" | "yes" | "failed">("no");
  const copy = () => {
    // navigator.clipboard exists only in secure contexts (https, localhost).
    const clipboard = (navigator as Partial<Navigator>).clipboard;
    if (!clipboard) {
      setCopied("failed");
      return;
    }
    clipboard.writeText(token.token).then(
      () => {
        setCopied("yes");
      },
      () => {
        setCopied("failed");
      },
    );
  };
  return (
    <div className="new-token" role="region" aria-labelledby="new-token-heading">
      <h3 id="new-token-heading">Token “{token.name}” created</h3>
      <p className="warning">
        <strong>Copy it now: it will not be shown again.</strong> Kneeboard keeps only its hash.
      </p>
      <label>
        New token
        <input
          className="secret"
          readOnly
          value={token.token}
          spellCheck={false}
          onFocus={(e) => {
            e.target.select();
          }}
        />
      </label>
      <div className="actions">
        <button type="button" onClick={copy}>
          Copy
        </button>
        {copied === "yes" && (
          <span className="ok" role="status">
            Copied to the clipboard.
          </span>
        )}
        {copied === "failed" && (
          <span className="muted" role="status">
            The browser does not allow copying here: select the token and press Ctrl+C.
          </span>
        )}
        <button type="button" className="small" onClick={onDone}>
          Done, I stored it
        </button>
      </div>
    </div>
  );
}

function CreateToken() {
  const create = useCreateToken();
  const [name, setName] = useState("");
  const [days, setDays] = useState("");
  const expiry = parseExpiryDays(days);
  const submit = (event: SubmitEvent<HTMLFormElement>) => {
    event.preventDefault();
    if ("error" in expiry) return;
    create.mutate(
      { name: name.trim(), expires_in_days: expiry.days },
      {
        onSuccess: () => {
          setName("");
          setDays("");
        },
      },
    );
  };
  return (
    <>
      <form className="token-form" onSubmit={submit} aria-label="Create an API token">
        <label>
          Name
          <input
            value={name}
            placeholder="e.g. CI"
            required
            maxLength={200}
            onChange={(e) => {
              setName(e.target.value);
            }}
          />
        </label>
        <label>
          <span>
            Days to expiry <span className="muted">(optional)</span>
          </span>
          <input
            inputMode="numeric"
            value={days}
            placeholder="never"
            aria-invalid={"error" in expiry}
            onChange={(e) => {
              setDays(e.target.value);
            }}
          />
        </label>
        <button type="submit" disabled={create.isPending || !name.trim() || "error" in expiry}>
          {create.isPending ? "Creating…" : "Create token"}
        </button>
      </form>
      {"error" in expiry && <p className="error">{expiry.error}</p>}
      {create.isError && <ErrorMessage error={create.error} />}
      {create.data && (
        <NewToken
          token={create.data}
          onDone={() => {
            create.reset();
          }}
        />
      )}
    </>
  );
}

const STATUS_TONE: Record<TokenStatus, string> = { active: "good", expired: "muted", revoked: "bad" };

function Tokens() {
  const tokens = useTokens();
  const revoke = useRevokeToken();
  const origin = window.location.origin;
  return (
    <section className="panel" aria-labelledby="tokens-heading">
      <h2 id="tokens-heading">Personal API tokens</h2>
      <p className="lead">
        For scripts and CI, send one with every request:{" "}
        <code>curl -H &quot;Authorization: Bearer &lt;token&gt;&quot; {origin}/api/v1/projects</code>. It acts as you,
        with your roles; revoke it when it leaks or is no longer needed.
      </p>
      <CreateToken />
      <QueryView query={tokens} what="your tokens">
        {(items) =>
          items.length === 0 ? (
            <Empty>No tokens yet.</Empty>
          ) : (
            <table className="table" aria-label="API tokens">
              <TableHead columns={["Name", "Token", "Created", "Last used", "Expires", "Status"]} actions />
              <tbody>
                {items.map((t) => {
                  const status = tokenStatus(t);
                  return (
                    <tr key={t.id} data-token-id={t.id} data-status={status}>
                      <td>{t.name}</td>
                      <td>
                        <code>{t.prefix}…</code>
                      </td>
                      <td>{formatTime(t.created_at)}</td>
                      <td>{t.last_used_at ? formatTime(t.last_used_at) : <span className="muted">never</span>}</td>
                      <td>{t.expires_at ? formatTime(t.expires_at) : <span className="muted">never</span>}</td>
                      <td>
                        <span className={`badge badge-${STATUS_TONE[status]}`}>{status}</span>
                        {t.revoked_at && <span className="muted small-text"> {formatTime(t.revoked_at)}</span>}
                      </td>
                      <td>
                        {!t.revoked_at && (
                          <ConfirmButton
                            text="Revoke"
                            ariaLabel={`Revoke ${t.name}`}
                            title={`Revoke the token “${t.name}”?`}
                            confirm="Revoke"
                            disabled={revoke.isPending}
                            pending={revoke.isPending}
                            error={revoke.error}
                            onConfirm={(close) => {
                              revoke.mutate(t.id, { onSuccess: close });
                            }}
                          >
                            <p>
                              Whatever uses it (<code>{t.prefix}…</code>) stops working at once. This cannot be undone:
                              a new token has a new secret.
                            </p>
                          </ConfirmButton>
                        )}
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          )
        }
      </QueryView>
      {revoke.isError && <ErrorMessage error={revoke.error} />}
    </section>
  );
}

export function AccountPage() {
  return (
    <Layout
      crumbs={[{ label: "Projects", href: href({ page: "projects" }) }, { label: "Account" }]}
      title="Your account"
    >
      <div className="two-col">
        <Profile />
        <ChangePassword />
      </div>
      <Tokens />
    </Layout>
  );
}
