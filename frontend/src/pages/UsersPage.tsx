import { UsernameField } from "../auth/UsernameField";
import { useState, type SubmitEvent } from "react";
import { useCreateUser, useUsers } from "../api/users";
import { useCurrentUser } from "../auth/context";
import { Checkbox } from "../components/Checkbox";
import { Layout } from "../components/Layout";
import { Empty, ErrorMessage, QueryView } from "../components/QueryView";
import { formatTime } from "../lib/format";
import { href } from "../lib/route";

const MIN_PASSWORD = 10;

function CreateUser() {
  const create = useCreateUser();
  const [username, setUsername] = useState("");
  const [password, setPassword] = useState("");
  const [siteAdmin, setSiteAdmin] = useState(false);
  const tooShort = password !== "" && password.length < MIN_PASSWORD;
  const submit = (event: SubmitEvent<HTMLFormElement>) => {
    event.preventDefault();
    create.mutate(
      { username: username.trim(), password: password || null, is_site_admin: siteAdmin },
      {
        onSuccess: () => {
          setUsername("");
          setPassword("");
          setSiteAdmin(false);
        },
      },
    );
  };
  return (
    <form className="panel" onSubmit={submit} aria-labelledby="create-user-heading">
      <h2 id="create-user-heading">New account</h2>
      <UsernameField
        value={username}
        onChange={(value) => {
          setUsername(value);
          create.reset();
        }}
      />
      <label>
        <span>
          Password <span className="muted">(optional, at least {MIN_PASSWORD} characters)</span>
        </span>
        <input
          type="password"
          autoComplete="new-password"
          minLength={MIN_PASSWORD}
          maxLength={1024}
          value={password}
          aria-describedby="password-help"
          onChange={(e) => {
            setPassword(e.target.value);
          }}
        />
      </label>
      <p className="muted small-text" id="password-help">
        Leave it empty for an account that cannot sign in to the dashboard and only uses API tokens (e.g. for CI:{" "}
        <code>kneeboard token create --user NAME</code>).
      </p>
      <Checkbox checked={siteAdmin} onChange={setSiteAdmin}>
        Site admin (manages accounts)
      </Checkbox>
      <div className="actions">
        <button type="submit" disabled={create.isPending || username.trim().length < 2 || tooShort}>
          Create account
        </button>
      </div>
      {create.isError && <ErrorMessage error={create.error} />}
      {create.isSuccess && (
        <p className="ok" role="status">
          Created {create.data.username}. A team admin adds it to a team on the team&apos;s page.
        </p>
      )}
    </form>
  );
}

export function UsersPage() {
  const me = useCurrentUser();
  const users = useUsers(me.is_site_admin);
  const crumbs = [{ label: "Projects", href: href({ page: "projects" }) }, { label: "Users" }];
  if (!me.is_site_admin)
    return (
      <Layout crumbs={crumbs} title="Users">
        <p className="error" role="alert">
          Only site admins manage accounts.
        </p>
      </Layout>
    );
  return (
    <Layout crumbs={crumbs} title="Users">
      <div className="split">
        <QueryView query={users} what="the accounts">
          {(items) =>
            items.length === 0 ? (
              <Empty>No accounts.</Empty>
            ) : (
              <table className="table" aria-label="Accounts">
                <thead>
                  <tr>
                    <th>Username</th>
                    <th>Site admin</th>
                    <th>Created</th>
                  </tr>
                </thead>
                <tbody>
                  {items.map((u) => (
                    <tr key={u.id}>
                      <td>
                        {u.username} {u.id === me.id && <span className="muted">(you)</span>}
                      </td>
                      <td>{u.is_site_admin ? "yes" : <span className="muted">—</span>}</td>
                      <td>{formatTime(u.created_at)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )
          }
        </QueryView>
        <CreateUser />
      </div>
    </Layout>
  );
}
