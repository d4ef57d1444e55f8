import type { ReactNode } from "react";
import { useSignOut } from "../api/auth";
import { useMaybeCurrentUser } from "../auth/context";
import { signedOut } from "../auth/session";
import { HeaderAlertsBadge } from "../budgets/OpenAlerts";
import { DEFAULT_AUDIT_QUERY, href } from "../lib/route";

export interface Crumb {
  label: string;
  href?: string;
}

/** The signed-in user in the header: their teams, their open budget alerts, Account, Users (site admins) and
 * Sign out. */
function UserNav() {
  const me = useMaybeCurrentUser();
  const signOut = useSignOut();
  if (me === null) return null;
  return (
    <nav className="user-nav" aria-label="Account">
      {me.teams.length > 0 && (
        <span className="user-teams">
          {me.teams.length === 1 ? "Team" : "Teams"}:{" "}
          {me.teams.map((t, i) => (
            <span key={t.id}>
              {i > 0 && ", "}
              <a href={href({ page: "team", teamId: t.id, query: DEFAULT_AUDIT_QUERY })} title={`your role: ${t.role}`}>
                {t.name}
              </a>
            </span>
          ))}
        </span>
      )}
      <HeaderAlertsBadge />
      <a href={href({ page: "account" })}>Account</a>
      {me.is_site_admin && <a href={href({ page: "users" })}>Users</a>}
      <span className="signed-in-as">
        Signed in as <strong className="user-name">{me.username}</strong>
      </span>
      <button
        type="button"
        className="small"
        disabled={signOut.isPending}
        onClick={() => {
          signOut.mutate(undefined, { onSettled: signedOut });
        }}
      >
        Sign out
      </button>
    </nav>
  );
}

/** The page frame: app header, breadcrumbs, the page's title and content. */
export function Layout({
  crumbs,
  title,
  actions,
  children,
}: {
  crumbs: Crumb[];
  title: ReactNode;
  actions?: ReactNode;
  children: ReactNode;
}) {
  return (
    <>
      <header className="top">
        <a className="brand" href="#/">
          Kneeboard
        </a>
        <span className="tagline">compressed models vs. their golden model</span>
        <a className="docs" href="/docs">
          API docs
        </a>
        <UserNav />
      </header>
      <main>
        {crumbs.length > 0 && (
          <nav aria-label="Breadcrumbs" className="crumbs">
            <ol>
              {crumbs.map((c) => (
                <li key={c.label}>{c.href ? <a href={c.href}>{c.label}</a> : c.label}</li>
              ))}
            </ol>
          </nav>
        )}
        <div className="page-head">
          <h1>{title}</h1>
          {actions}
        </div>
        {children}
      </main>
    </>
  );
}
