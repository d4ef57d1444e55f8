import { useState, type SubmitEvent } from "react";
import { useCreateProject, useProjects } from "../api/queries";
import { Layout } from "../components/Layout";
import { Empty, ErrorMessage, QueryView } from "../components/QueryView";
import { formatTime } from "../lib/format";
import { href } from "../lib/route";

function CreateProject() {
  const create = useCreateProject();
  const [name, setName] = useState("");
  const [description, setDescription] = useState("");
  const submit = (event: SubmitEvent<HTMLFormElement>) => {
    event.preventDefault();
    create.mutate(
      { name: name.trim(), description: description.trim() },
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

export function ProjectsPage() {
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
                    <th>Description</th>
                    <th>Created</th>
                  </tr>
                </thead>
                <tbody>
                  {items.map((p) => (
                    <tr key={p.id}>
                      <td>
                        <a href={href({ page: "project", projectId: p.id })}>{p.name}</a>
                      </td>
                      <td>{p.description || <span className="muted">—</span>}</td>
                      <td>{formatTime(p.created_at)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )
          }
        </QueryView>
        <CreateProject />
      </div>
    </Layout>
  );
}
