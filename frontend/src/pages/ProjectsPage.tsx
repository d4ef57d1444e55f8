import { useState, type SubmitEvent } from "react";
import { useCreateProject, useProjects } from "../api/projects";
import { useCreateTeam } from "../api/teams";
import { useCurrentUser } from "../auth/context";
import { teamLabel, writableTeams } from "../auth/roles";
import { ProjectAlertsBadge } from "../budgets/OpenAlerts";
import { Layout } from "../components/Layout";
import { Empty, ErrorMessage, QueryView } from "../components/QueryView";
import { formatTime } from "../lib/format";
import { DEFAULT_AUDIT_QUERY, href } from "../lib/route";

function CreateProject() {
  const me = useCurrentUser();
  const create = useCreateProject();
  const teams = writableTeams(me);
  const [name, setName] = useState("");
  const [description, setDescription] = useState("");
  const [chosenTeam, setChosenTeam] = useState("");
  // The team that will own the project: the one chosen, else the only (or first) one the user can create in.
  const teamId = teams.find((t) => t.id === chosenTeam)?.id ?? teams[0]?.id ?? null;
  if (teamId === null)
    return (
      <section className="panel" aria-labelledby="create-heading">
        <h2 id="create-heading">New project</h2>
        <p className="muted">
          {me.teams.length === 0
            ? "You are in no team yet: create one below, or ask a team admin to add you."
            : "You are a viewer in your teams: ask a team admin for the member role to create projects, or create a team of your own below."}
        </p>
      </section>
    );
  const submit = (event: SubmitEvent<HTMLFormElement>) => {
    event.preventDefault();
    create.mutate(
      { name: name.trim(), description: description.trim(), team_id: teamId },
      {
        onSuccess: (project) => {
          window.location.hash = href({ page: "project", projectId: project.id });
        },
      },
    );
  };
  return (
    <form className="panel" onSubmit={submit} aria-labelledby="create-heading">
      <h2 id="create-heading">New project</h2>
      {teams.length > 1 ? (
        <label>
          Team
          <select
            value={teamId}
            onChange={(e) => {
              setChosenTeam(e.target.value);
            }}
          >
            {teams.map((t) => (
              <option key={t.id} value={t.id}>
                {t.name} ({t.role})
              </option>
            ))}
          </select>
        </label>
      ) : (
        <p className="muted small-text">In the team {teamLabel(me, teamId)}.</p>
      )}
      <label>
        Name
        <input
          value={name}
          onChange={(e) => {
            setName(e.target.value);
          }}
          required
          maxLength={200}
        />
      </label>
      <label>
        <span>
          Description <span className="muted">(optional)</span>
        </span>
        <textarea
          value={description}
          onChange={(e) => {
            setDescription(e.target.value);
          }}
          rows={3}
        />
      </label>
      <div className="actions">
        <button type="submit" disabled={create.isPending || !name.trim()}>
          Create project
        </button>
      </div>
      {create.isError && <ErrorMessage error={create.error} />}
    </form>
  );
}

function CreateTeam() {
  const create = useCreateTeam();
  const [name, setName] = useState("");
  const submit = (event: SubmitEvent<HTMLFormElement>) => {
    event.preventDefault();
    create.mutate(
      { name: name.trim() },
      {
        onSuccess: (team) => {
          window.location.hash = href({ page: "team", teamId: team.id, query: DEFAULT_AUDIT_QUERY });
        },
      },
    );
  };
  return (
    <form className="panel" onSubmit={submit} aria-labelledby="create-team-heading">
      <h2 id="create-team-heading">New team</h2>
      <p className="muted small-text">You become its admin and add members on its page.</p>
      <label>
        Team name
        <input
          value={name}
          onChange={(e) => {
            setName(e.target.value);
          }}
          required
          maxLength={200}
        />
      </label>
      <div className="actions">
        <button type="submit" disabled={create.isPending || !name.trim()}>
          Create team
        </button>
      </div>
      {create.isError && <ErrorMessage error={create.error} />}
    </form>
  );
}

export function ProjectsPage() {
  const me = useCurrentUser();
  const projects = useProjects();
  return (
    <Layout crumbs={[{ label: "Projects" }]} title="Projects">
      <div className="split">
        <QueryView query={projects} what="projects">
          {(items) =>
            items.length === 0 ? (
              <Empty>No projects yet: create one to upload models and datasets.</Empty>
            ) : (
              <table className="table" aria-label="Projects">
                <thead>
                  <tr>
                    <th>Name</th>
                    <th>Team</th>
                    <th>Description</th>
                    <th className="num">Models</th>
                    <th className="num">Datasets</th>
                    <th className="num">Jobs</th>
                    <th>Last activity</th>
                  </tr>
                </thead>
                <tbody>
                  {items.map((p) => (
                    <tr key={p.id} data-project-id={p.id}>
                      <td>
                        <a href={href({ page: "project", projectId: p.id })}>{p.name}</a>{" "}
                        <ProjectAlertsBadge project={p} />
                      </td>
                      <td>
                        <a href={href({ page: "team", teamId: p.team_id, query: DEFAULT_AUDIT_QUERY })}>
                          {teamLabel(me, p.team_id)}
                        </a>
                      </td>
                      <td>{p.description || <span className="muted">—</span>}</td>
                      <td className="num">{p.models_count}</td>
                      <td className="num">{p.datasets_count}</td>
                      <td className="num">{p.jobs_count}</td>
                      <td title={`Created ${formatTime(p.created_at)}`}>
                        {formatTime(p.last_activity_at ?? p.created_at)}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )
          }
        </QueryView>
        <div className="side-panels">
          <CreateProject />
          <CreateTeam />
        </div>
      </div>
    </Layout>
  );
}
