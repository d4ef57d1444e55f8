import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { keys } from "../api/keys";
import { HeaderAlertsBadge, ProjectAlertsBadge, openAlertsSummary } from "./OpenAlerts";

const none = { id: "p1", name: "speech", open_alerts_count: 0 };
const two = { id: "p2", name: "vision", open_alerts_count: 2 };
const one = { id: "p3", name: "text", open_alerts_count: 1 };
const projects = [none, two, one];

describe("openAlertsSummary", () => {
  it("adds the projects' open alerts and finds the first project that has any", () => {
    expect(openAlertsSummary(projects)).toEqual({ total: 3, first: two });
    expect(openAlertsSummary([none])).toEqual({ total: 0, first: null });
    expect(openAlertsSummary([])).toEqual({ total: 0, first: null });
  });
});

describe("ProjectAlertsBadge", () => {
  it("links a project's open alerts to the project, and is absent without any", () => {
    expect(renderToStaticMarkup(<ProjectAlertsBadge project={none} />)).toBe("");
    expect(renderToStaticMarkup(<ProjectAlertsBadge project={one} />)).toBe(
      '<a class="badge badge-bad alerts-badge" href="#/projects/p3" aria-label="1 open alert in text: open the project">1 open alert</a>',
    );
  });
});

describe("HeaderAlertsBadge", () => {
  const render = (data: unknown) => {
    const client = new QueryClient();
    client.setQueryData(keys.projects, data);
    return renderToStaticMarkup(
      <QueryClientProvider client={client}>
        <HeaderAlertsBadge />
      </QueryClientProvider>,
    );
  };

  it("counts every project's open alerts and opens the first project with some", () => {
    const html = render(projects);
    expect(html).toContain('href="#/projects/p2"');
    expect(html).toContain('aria-label="3 open alerts across your projects: open vision"');
    expect(html).toContain(">3 open alerts</a>");
  });

  it("shows nothing when no alert is open", () => {
    expect(render([none])).toBe("");
  });
});
