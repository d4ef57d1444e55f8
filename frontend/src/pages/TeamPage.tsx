import { UsernameField } from "../auth/UsernameField";
import { useState, type SubmitEvent } from "react";
import { useProjects } from "../api/projects";
import { useAddMember, useChangeRole, useMembers, useRemoveMember, useTeam } from "../api/teams";
import type { Member, Role } from "../api/types";
import { useCurrentUser } from "../auth/context";
import { ROLE_HELP, ROLES } from "../auth/roles";
import { ConfirmButton } from "../components/ConfirmDialog";
import { Layout } from "../components/Layout";
import { Empty, ErrorMessage, QueryView } from "../components/QueryView";
import { TableHead } from "../components/TableHead";
import { formatTime } from "../lib/format";
import { href, type AuditQuery } from "../lib/route";
import { AuditTrail } from "../project/AuditTrail";

function RoleSelect({
  value,
  onChange,
  label,
  disabled,
}: {
  value: Role;
  onChange: (role: Role) => void;
  label: string;
  disabled?: boolean;
}) {
  return (
    <select
      aria-label={label}
      value={value}
      disabled={disabled}
      onChange={(e) => {
        const role = ROLES.find((r) => r === e.target.value);
        if (role) onChange(role);
      }}
    >
      {ROLES.map((r) => (
        <option key={r} value={r}>
          {r}
        </option>
      ))}
    </select>
  );
}

function AddMember({ teamId }: { teamId: string }) {
  const add = useAddMember(teamId);
  const [username, setUsername] = useState("");
  const [role, setRole] = useState<Role>("member");
  const submit = (event: SubmitEvent<HTMLFormElement>) => {
    event.preventDefault();
    add.mutate(
      { username: username.trim(), role },
      {
        onSuccess: () => {
          setUsername("");
        },
      },
    );
  };
  return (
    <form className="inline-form" onSubmit={submit} aria-label="Add a member">
      <UsernameField
        value={username}
        onChange={(value) => {
          setUsername(value);
          add.reset();
        }}
      />
      <label>
        Role
        <select
          value={role}
          onChange={(e) => {
            setRole(ROLES.find((r) => r === e.target.value) ?? "member");
          }}
        >
          {ROLES.map((r) => (
            <option key={r} value={r}>
              {r}
            </option>
          ))}
        </select>
      </label>
      <button type="submit" disabled={add.isPending || username.trim().length < 2}>
        Add member
      </button>
      {add.isError && <ErrorMessage error={add.error} />}
      {add.isSuccess && (
        <p className="ok" role="status">
          Added {add.data.username} as {add.data.role}.
        </p>
      )}
    </form>
  );
}

function Members({ teamId, teamName, isAdmin }: { teamId: string; teamName: string; isAdmin: boolean }) {
  const me = useCurrentUser();
  const members = useMembers(teamId);
  const changeRole = useChangeRole(teamId);
  const remove = useRemoveMember(teamId);
  const removeMember = (m: Member, close: () => void) => {
    remove.mutate(m.user_id, {
      onSuccess: () => {
        close();
        if (m.user_id === me.id) window.location.hash = href({ page: "projects" });
      },
    });
  };
  return (
    <section className="panel" aria-labelledby="members-heading">
      <h2 id="members-heading">Members</h2>
      <QueryView query={members} what="the members">
        {(items) => (
          <table className="table" aria-label="Members">
            <TableHead columns={["Username", "Role", "Added"]} actions />
            <tbody>
              {items.map((m) => {
                const self = m.user_id === me.id;
                return (
                  <tr key={m.user_id} data-user={m.username}>
                    <td>
                      {m.username} {self && <span className="muted">(you)</span>}
                    </td>
                    <td>
                      {isAdmin ? (
                        <RoleSelect
                          label={`Role of ${m.username}`}
                          value={m.role}
                          disabled={changeRole.isPending}
                          onChange={(role) => {
                            changeRole.mutate({ userId: m.user_id, role });
                          }}
                        />
                      ) : (
                        m.role
                      )}
                    </td>
                    <td>{formatTime(m.added_at)}</td>
                    <td>
                      {(isAdmin || self) && (
                        <ConfirmButton
                          text={self ? "Leave team" : "Remove"}
                          title={
                            self ? `Leave the team “${teamName}”?` : `Remove ${m.username} from the team “${teamName}”?`
                          }
                          confirm={self ? "Leave" : "Remove"}
                          disabled={remove.isPending}
                          pending={remove.isPending}
                          error={remove.error}
                          onConfirm={(close) => {
                            removeMember(m, close);
                          }}
                        >
                          <p>
                            {self
                              ? "You lose access to its projects until an admin adds you again."
                              : `${m.username} loses access to its projects; what they made stays. An admin can add them again.`}
                          </p>
                        </ConfirmButton>
                      )}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        )}
      </QueryView>
      {changeRole.isError && <ErrorMessage error={changeRole.error} />}
      {remove.isError && <ErrorMessage error={remove.error} />}
      {isAdmin && (
        <>
          <h3>Add a member</h3>
          <p className="muted small-text">
            The account must exist (a site admin creates accounts). Roles: viewer {ROLE_HELP.viewer}; member{" "}
            {ROLE_HELP.member}; admin {ROLE_HELP.admin}.
          </p>
          <AddMember teamId={teamId} />
        </>
      )}
    </section>
  );
}

function TeamProjects({ teamId }: { teamId: string }) {
  const projects = useProjects();
  return (
    <section className="panel" aria-labelledby="team-projects-heading">
      <h2 id="team-projects-heading">Projects</h2>
      <QueryView query={projects} what="the projects">
        {(all) => {
          const items = all.filter((p) => p.team_id === teamId);
          return items.length === 0 ? (
            <Empty>No projects in this team yet.</Empty>
          ) : (
            <ul className="plain">
              {items.map((p) => (
                <li key={p.id}>
                  <a href={href({ page: "project", projectId: p.id })}>{p.name}</a>
                </li>
              ))}
            </ul>
          );
        }}
      </QueryView>
    </section>
  );
}

export function TeamPage({ teamId, query }: { teamId: string; query: AuditQuery }) {
  const team = useTeam(teamId);
  const crumbs = [{ label: "Projects", href: href({ page: "projects" }) }, { label: team.data?.name ?? "Team" }];
  return (
    <Layout crumbs={crumbs} title={team.data ? `Team ${team.data.name}` : "Team"}>
      <QueryView query={team} what="the team">
        {(t) => {
          const isAdmin = t.role === "admin";
          return (
            <>
              <p className="lead">
                Your role: <span className="badge badge-muted">{t.role}</span> ({ROLE_HELP[t.role]}). Created{" "}
                {formatTime(t.created_at)}.
              </p>
              <div className="split">
                <Members teamId={teamId} teamName={t.name} isAdmin={isAdmin} />
                <TeamProjects teamId={teamId} />
              </div>
              {isAdmin ? (
                <AuditTrail teamId={teamId} query={query} />
              ) : (
                <p className="muted">The team&apos;s audit trail is readable by its admins.</p>
              )}
            </>
          );
        }}
      </QueryView>
    </Layout>
  );
}
