// The query keys of every area in one place: a mutation in one area invalidates another's reads by these
// (creating a job refreshes the project's job lists, a membership change refreshes `me`).
export const keys = {
  projects: ["projects"] as const,
  project: (id: string) => ["project", id] as const,
  models: (projectId: string) => ["models", projectId] as const,
  model: (id: string) => ["model", id] as const,
  datasets: (projectId: string) => ["datasets", projectId] as const,
  jobs: (projectId: string) => ["jobs", projectId] as const,
  job: (id: string) => ["job", id] as const,
  jobKinds: ["job-kinds"] as const,
  report: (jobId: string) => ["report", jobId] as const,
  samples: (jobId: string) => ["samples", jobId] as const,
  layers: (jobId: string) => ["layers", jobId] as const,
  runs: (projectId: string) => ["runs", projectId] as const,
  chunks: (jobId: string) => ["chunks", jobId] as const,
  sensitivity: (jobId: string) => ["sensitivity", jobId] as const,
  sensitivityJobs: (projectId: string) => ["sensitivity-jobs", projectId] as const,
  profiles: ["sensitivity-profiles"] as const,
  sweepPoints: (jobId: string) => ["sweep-points", jobId] as const,
  sweepJobs: (projectId: string) => ["sweep-jobs", projectId] as const,
  frontier: ["sweep-frontier"] as const,
};

// Accounts, tokens, teams, members, the audit trail and (site admins) users.
export const authKeys = {
  me: ["me"] as const,
  tokens: ["tokens"] as const,
  team: (id: string) => ["team", id] as const,
  members: (teamId: string) => ["members", teamId] as const,
  audit: (teamId: string) => ["audit", teamId] as const,
  users: ["users"] as const,
};
