// Server state: one react-query hook per API read, polling while something is still moving.
import { keepPreviousData, useMutation, useQueries, useQuery, useQueryClient } from "@tanstack/react-query";
import type { paths } from "../client/schema";
import type { SampleQuery } from "../lib/route";
import { api, unwrap, unwrapEmpty } from "./http";
import type { Job, Me, Model, Role, Sample } from "./types";

export const POLL_MS = 2000;
export const JOBS_PAGE = 20;
const ACTIVE = new Set(["queued", "running"]);

export const isActive = (job: Job): boolean => ACTIVE.has(job.status);
const anyInspecting = (models: Model[] | undefined): boolean => !!models?.some((m) => m.status === "inspecting");

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

export function useProjects() {
  return useQuery({
    queryKey: keys.projects,
    queryFn: () => unwrap(api.GET("/api/v1/projects")),
  });
}

export function useProject(projectId: string) {
  return useQuery({
    queryKey: keys.project(projectId),
    queryFn: () => unwrap(api.GET("/api/v1/projects/{project_id}", { params: { path: { project_id: projectId } } })),
    enabled: projectId !== "",
  });
}

export function useCreateProject() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (body: { name: string; description: string; team_id?: string | null }) =>
      unwrap(api.POST("/api/v1/projects", { body })),
    onSuccess: () => client.invalidateQueries({ queryKey: keys.projects }),
  });
}

export function useModels(projectId: string) {
  return useQuery({
    queryKey: keys.models(projectId),
    queryFn: () =>
      unwrap(api.GET("/api/v1/projects/{project_id}/models", { params: { path: { project_id: projectId } } })),
    enabled: projectId !== "",
    refetchInterval: (query) => (anyInspecting(query.state.data) ? POLL_MS : false),
  });
}

export function useModel(modelId: string) {
  return useQuery({
    queryKey: keys.model(modelId),
    queryFn: () => unwrap(api.GET("/api/v1/models/{model_id}", { params: { path: { model_id: modelId } } })),
    refetchInterval: (query) => (query.state.data?.status === "inspecting" ? POLL_MS : false),
  });
}

export function useDatasets(projectId: string) {
  return useQuery({
    queryKey: keys.datasets(projectId),
    queryFn: () =>
      unwrap(api.GET("/api/v1/projects/{project_id}/datasets", { params: { path: { project_id: projectId } } })),
    enabled: projectId !== "",
  });
}

export function useJobs(projectId: string, offset: number) {
  return useQuery({
    queryKey: [...keys.jobs(projectId), offset],
    queryFn: () =>
      unwrap(api.GET("/api/v1/jobs", { params: { query: { project_id: projectId, limit: JOBS_PAGE, offset } } })),
    placeholderData: keepPreviousData,
    refetchInterval: (query) => (query.state.data?.items.some(isActive) ? POLL_MS : false),
  });
}

export function useJob(jobId: string) {
  return useQuery({
    queryKey: keys.job(jobId),
    queryFn: () => unwrap(api.GET("/api/v1/jobs/{job_id}", { params: { path: { job_id: jobId } } })),
    refetchInterval: (query) => (query.state.data && isActive(query.state.data) ? POLL_MS : false),
  });
}

export function useJobKinds() {
  return useQuery({
    queryKey: keys.jobKinds,
    queryFn: () => unwrap(api.GET("/api/v1/job-kinds")),
    staleTime: Infinity,
  });
}

export function useCreateJob(projectId: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ kind, params }: { kind: string; params: Record<string, unknown> }) =>
      unwrap(api.POST("/api/v1/jobs", { body: { project_id: projectId, kind, params } })),
    onSuccess: () => client.invalidateQueries({ queryKey: keys.jobs(projectId) }),
  });
}

export function useCancelJob(projectId: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (jobId: string) =>
      unwrap(api.POST("/api/v1/jobs/{job_id}/cancel", { params: { path: { job_id: jobId } } })),
    onSettled: () => client.invalidateQueries({ queryKey: keys.jobs(projectId) }),
  });
}

export function useFidelityReport(jobId: string, enabled: boolean) {
  return useQuery({
    queryKey: keys.report(jobId),
    queryFn: () => unwrap(api.GET("/api/v1/jobs/{job_id}/fidelity", { params: { path: { job_id: jobId } } })),
    enabled,
    staleTime: Infinity,
  });
}

/** The per-layer profile of a fidelity job; a 404 ApiError when the job ran with layer_profile=false. */
export function useLayerProfile(jobId: string, enabled: boolean) {
  return useQuery({
    queryKey: keys.layers(jobId),
    queryFn: () => unwrap(api.GET("/api/v1/jobs/{job_id}/fidelity/layers", { params: { path: { job_id: jobId } } })),
    enabled,
    staleTime: Infinity,
  });
}

const tristate = (value: SampleQuery["flagged"]): boolean | undefined =>
  value === "any" ? undefined : value === "yes";

export function useSamples(jobId: string, output: string, query: SampleQuery) {
  const { sort, order, flagged, flipped, limit, offset } = query;
  return useQuery({
    queryKey: [...keys.samples(jobId), output, sort, order, flagged, flipped, limit, offset],
    queryFn: () =>
      unwrap(
        api.GET("/api/v1/jobs/{job_id}/fidelity/samples", {
          params: {
            path: { job_id: jobId },
            query: { output, sort, order, flagged: tristate(flagged), flipped: tristate(flipped), limit, offset },
          },
        }),
      ),
    placeholderData: keepPreviousData,
    staleTime: Infinity,
  });
}

/** The server's largest page of samples. */
const SAMPLE_PAGE_MAX = 1000;

/**
 * Per-sample values for the histogram: the first `max` samples by index, fetched page by page, and how many
 * there are in all (more than `max` means the histogram shows a sample of them).
 */
export function useSampleValues(jobId: string, output: string, max: number) {
  return useQuery({
    queryKey: [...keys.samples(jobId), output, "values", max],
    queryFn: async () => {
      const items: Sample[] = [];
      for (;;) {
        const page: { items: Sample[]; total: number } = await unwrap(
          api.GET("/api/v1/jobs/{job_id}/fidelity/samples", {
            params: {
              path: { job_id: jobId },
              query: {
                output,
                sort: "sample_index",
                order: "asc",
                limit: Math.min(SAMPLE_PAGE_MAX, max - items.length),
                offset: items.length,
              },
            },
          }),
        );
        items.push(...page.items);
        if (page.items.length === 0 || items.length >= Math.min(page.total, max)) return { items, total: page.total };
      }
    },
    staleTime: Infinity,
  });
}

export function useFidelityRuns(projectId: string, filters: { golden: string; dataset: string }) {
  return useQuery({
    queryKey: [...keys.runs(projectId), filters.golden, filters.dataset],
    queryFn: () =>
      unwrap(
        api.GET("/api/v1/projects/{project_id}/fidelity-runs", {
          params: {
            path: { project_id: projectId },
            query: {
              golden_model_id: filters.golden || undefined,
              dataset_id: filters.dataset || undefined,
              limit: 500,
            },
          },
        }),
      ),
  });
}

/** The chunks a job fanned out into (empty for a one-piece job); polled while the job runs. */
export function useJobChunks(job: Job | undefined) {
  const jobId = job?.id ?? "";
  const active = !!job && isActive(job);
  return useQuery({
    // The status is in the key so that the chunks are read once more when the job ends.
    queryKey: [...keys.chunks(jobId), job?.status],
    queryFn: () => unwrap(api.GET("/api/v1/jobs/{job_id}/chunks", { params: { path: { job_id: jobId } } })),
    enabled: jobId !== "",
    placeholderData: keepPreviousData,
    refetchInterval: active ? POLL_MS : false,
  });
}

/** A sensitivity job's matrix: each layer compressed alone ("only") or all but it ("all_but", 404 if not run). */
export function useSensitivityReport(jobId: string, view: "only" | "all_but", enabled: boolean) {
  return useQuery({
    queryKey: [...keys.sensitivity(jobId), view],
    queryFn: () =>
      unwrap(
        view === "only"
          ? api.GET("/api/v1/jobs/{job_id}/sensitivity", { params: { path: { job_id: jobId } } })
          : api.GET("/api/v1/jobs/{job_id}/sensitivity/all-but", { params: { path: { job_id: jobId } } }),
      ),
    enabled,
    staleTime: Infinity,
  });
}

export function useMixedPrecisionPlans(jobId: string, enabled: boolean) {
  return useQuery({
    queryKey: [...keys.sensitivity(jobId), "plans"],
    queryFn: () => unwrap(api.GET("/api/v1/jobs/{job_id}/sensitivity/plans", { params: { path: { job_id: jobId } } })),
    enabled,
    staleTime: Infinity,
  });
}

export type ImportanceMethod = "l1" | "l2" | "taylor" | "reconstruction";

/** One layer's channel importance, most important first; at most `limit` channels (the server cuts). */
export function useChannelImportance(jobId: string, layer: string, method: ImportanceMethod, limit: number) {
  return useQuery({
    queryKey: [...keys.sensitivity(jobId), "channels", layer, method, limit],
    queryFn: () =>
      unwrap(
        api.GET("/api/v1/jobs/{job_id}/sensitivity/channels", {
          params: { path: { job_id: jobId }, query: { layer, method, limit } },
        }),
      ),
    enabled: layer !== "",
    placeholderData: keepPreviousData,
    staleTime: Infinity,
  });
}

/** The project's succeeded sensitivity jobs, newest first (the scans the compare page can overlay). */
export function useSensitivityJobs(projectId: string) {
  return useQuery({
    queryKey: keys.sensitivityJobs(projectId),
    queryFn: () =>
      unwrap(
        api.GET("/api/v1/jobs", {
          params: { query: { project_id: projectId, kind: "sensitivity", status: "succeeded", limit: 100 } },
        }),
      ),
    enabled: projectId !== "",
    // Scans finish while the user looks elsewhere: never show a remembered list without asking again.
    staleTime: 0,
    refetchOnMount: "always",
  });
}

export function useSensitivityProfiles(jobIds: string[]) {
  return useQuery({
    queryKey: [...keys.profiles, ...jobIds],
    queryFn: () => unwrap(api.GET("/api/v1/sensitivity-profiles", { params: { query: { job_ids: jobIds } } })),
    enabled: jobIds.length > 0,
    placeholderData: keepPreviousData,
    staleTime: Infinity,
  });
}

/** The server's largest page of sweep points (a sweep has at most 64 configurations + 16 plans + fp32). */
const SWEEP_POINTS_MAX = 1000;

/**
 * A succeeded sweep's points; with `details` each carries its whole document (runtime, latency, manifest),
 * without only the objectives. A succeeded sweep never changes, so they are read once.
 */
export function useSweepPoints(jobId: string, enabled: boolean, details = true) {
  return useQuery({
    queryKey: [...keys.sweepPoints(jobId), details],
    queryFn: () =>
      unwrap(
        api.GET("/api/v1/jobs/{job_id}/sweep/points", {
          params: { path: { job_id: jobId }, query: { details, limit: SWEEP_POINTS_MAX } },
        }),
      ),
    enabled,
    staleTime: Infinity,
  });
}

type SweepPointsPage = Awaited<ReturnType<typeof fetchSweepPoints>>;

const fetchSweepPoints = (jobId: string) =>
  unwrap(
    api.GET("/api/v1/jobs/{job_id}/sweep/points", {
      params: { path: { job_id: jobId }, query: { details: false, limit: SWEEP_POINTS_MAX } },
    }),
  );

/** One result for several queries; a module-level function so that useQueries keeps it while nothing changes. */
function combinePages(results: { data?: SweepPointsPage; isPending: boolean; error: Error | null }[]) {
  return {
    pending: results.some((r) => r.isPending),
    error: results.find((r) => r.error !== null)?.error ?? null,
    pages: results.map((r) => r.data),
  };
}

/** Several sweeps' points (objectives only), for the compare page; one query per sweep. */
export function useManySweepPoints(jobIds: readonly string[]) {
  return useQueries({
    combine: combinePages,
    queries: jobIds.map((jobId) => ({
      queryKey: [...keys.sweepPoints(jobId), false],
      queryFn: () => fetchSweepPoints(jobId),
      staleTime: Infinity,
    })),
  });
}

/**
 * The Pareto frontier of the sweeps' points over `objectives` ("kl_mean:min") after `bounds`
 * ("kl_mean<=0.01"). The previous frontier stays drawn while a new one is computed.
 */
export function useSweepFrontier(jobIds: readonly string[], objectives: readonly string[], bounds: readonly string[]) {
  return useQuery({
    queryKey: [...keys.frontier, [...jobIds].sort(), objectives, bounds],
    queryFn: () =>
      unwrap(
        api.GET("/api/v1/sweep-frontier", {
          params: { query: { job_ids: [...jobIds], objective: [...objectives], bound: [...bounds] } },
        }),
      ),
    enabled: jobIds.length > 0 && objectives.length > 0,
    placeholderData: keepPreviousData,
    staleTime: Infinity,
  });
}

/** The project's succeeded sweeps, newest first (those the compare page can put on one frontier). */
export function useSweepJobs(projectId: string) {
  return useQuery({
    queryKey: keys.sweepJobs(projectId),
    queryFn: () =>
      unwrap(
        api.GET("/api/v1/jobs", {
          params: { query: { project_id: projectId, kind: "sweep", status: "succeeded", limit: 100 } },
        }),
      ),
    enabled: projectId !== "",
    // Sweeps finish while the user looks elsewhere: never show a remembered list without asking again.
    staleTime: 0,
    refetchOnMount: "always",
  });
}

const EXPORT_PATH = "/api/v1/jobs/{job_id}/sweep/points/{index}/export" satisfies keyof paths;

/** The path of a point's export (a zip of model.onnx + manifest.json) for a plain download link. */
export const exportHref = (jobId: string, index: number): string =>
  EXPORT_PATH.replace("{job_id}", encodeURIComponent(jobId)).replace("{index}", index.toString());

/** A preview of a dataset's samples (statistics per array, labels, whether a thumbnail can be drawn). */
export function useDatasetSamples(datasetId: string, offset: number, limit: number, enabled = true) {
  return useQuery({
    queryKey: ["dataset-samples", datasetId, offset, limit] as const,
    queryFn: () =>
      unwrap(
        api.GET("/api/v1/datasets/{dataset_id}/samples", {
          params: { path: { dataset_id: datasetId }, query: { offset, limit } },
        }),
      ),
    enabled: enabled && datasetId !== "",
    // A stored dataset never changes.
    staleTime: Infinity,
  });
}

const THUMBNAIL_PATH = "/api/v1/datasets/{dataset_id}/samples/{index}/thumbnail.png" satisfies keyof paths;

/** The path of one sample's PNG thumbnail (longest side 128 px), for an <img> or a link. */
export const thumbnailHref = (datasetId: string, index: number): string =>
  THUMBNAIL_PATH.replace("{dataset_id}", encodeURIComponent(datasetId)).replace("{index}", index.toString());

// Accounts, tokens, teams, members, the audit trail and (site admins) users.
export const authKeys = {
  me: ["me"] as const,
  tokens: ["tokens"] as const,
  team: (id: string) => ["team", id] as const,
  members: (teamId: string) => ["members", teamId] as const,
  audit: (teamId: string) => ["audit", teamId] as const,
  users: ["users"] as const,
};

/** Who is signed in (a 401 ApiError when nobody is); read once, refreshed when teams or roles change. */
export function useMe() {
  return useQuery({
    queryKey: authKeys.me,
    queryFn: () => unwrap(api.GET("/api/v1/auth/me")),
    staleTime: Infinity,
  });
}

/** Signs in; on success every cached answer of a previous user is dropped and `me` is the new user. */
export function useSignIn() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (body: { username: string; password: string }) => unwrap(api.POST("/api/v1/auth/login", { body })),
    onSuccess: (me: Me) => {
      client.removeQueries({ predicate: (q) => q.queryKey[0] !== authKeys.me[0] });
      client.setQueryData(authKeys.me, me);
    },
  });
}

export function useSignOut() {
  return useMutation({ mutationFn: () => unwrapEmpty(api.POST("/api/v1/auth/logout")) });
}

export function useChangePassword() {
  return useMutation({
    mutationFn: (body: { current_password: string; new_password: string }) =>
      unwrapEmpty(api.POST("/api/v1/auth/password", { body })),
  });
}

export function useTokens() {
  return useQuery({ queryKey: authKeys.tokens, queryFn: () => unwrap(api.GET("/api/v1/auth/tokens")) });
}

/** Creates a personal API token; its secret is in the mutation's data only (never cached, never re-read). */
export function useCreateToken() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (body: { name: string; expires_in_days: number | null }) =>
      unwrap(api.POST("/api/v1/auth/tokens", { body })),
    onSuccess: () => client.invalidateQueries({ queryKey: authKeys.tokens }),
  });
}

export function useRevokeToken() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (tokenId: string) =>
      unwrapEmpty(api.DELETE("/api/v1/auth/tokens/{token_id}", { params: { path: { token_id: tokenId } } })),
    onSettled: () => client.invalidateQueries({ queryKey: authKeys.tokens }),
  });
}

/** Creates a team (the user becomes its admin); `me` lists it afterwards. */
export function useCreateTeam() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (body: { name: string }) => unwrap(api.POST("/api/v1/teams", { body })),
    onSuccess: () => client.invalidateQueries({ queryKey: authKeys.me }),
  });
}

export function useTeam(teamId: string) {
  return useQuery({
    queryKey: authKeys.team(teamId),
    queryFn: () => unwrap(api.GET("/api/v1/teams/{team_id}", { params: { path: { team_id: teamId } } })),
  });
}

export function useMembers(teamId: string) {
  return useQuery({
    queryKey: authKeys.members(teamId),
    queryFn: () => unwrap(api.GET("/api/v1/teams/{team_id}/members", { params: { path: { team_id: teamId } } })),
  });
}

/** After a membership change: the members, the audit trail, and the user's own teams and roles. */
function useMembershipChanged(teamId: string) {
  const client = useQueryClient();
  return () =>
    Promise.all([
      client.invalidateQueries({ queryKey: authKeys.members(teamId) }),
      client.invalidateQueries({ queryKey: authKeys.audit(teamId) }),
      client.invalidateQueries({ queryKey: authKeys.team(teamId) }),
      client.invalidateQueries({ queryKey: authKeys.me }),
    ]);
}

export function useAddMember(teamId: string) {
  const changed = useMembershipChanged(teamId);
  return useMutation({
    mutationFn: (body: { username: string; role: Role }) =>
      unwrap(api.POST("/api/v1/teams/{team_id}/members", { params: { path: { team_id: teamId } }, body })),
    onSuccess: changed,
  });
}

export function useChangeRole(teamId: string) {
  const changed = useMembershipChanged(teamId);
  return useMutation({
    mutationFn: ({ userId, role }: { userId: string; role: Role }) =>
      unwrap(
        api.PATCH("/api/v1/teams/{team_id}/members/{user_id}", {
          params: { path: { team_id: teamId, user_id: userId } },
          body: { role },
        }),
      ),
    onSettled: changed,
  });
}

/** Removes a member (team admins), or the user themself (leaving the team). */
export function useRemoveMember(teamId: string) {
  const changed = useMembershipChanged(teamId);
  return useMutation({
    mutationFn: (userId: string) =>
      unwrapEmpty(
        api.DELETE("/api/v1/teams/{team_id}/members/{user_id}", {
          params: { path: { team_id: teamId, user_id: userId } },
        }),
      ),
    onSuccess: changed,
  });
}

/** One page of a team's audit trail, newest first (team admins only). */
export function useAuditEvents(teamId: string, action: string | null, offset: number, limit: number, enabled: boolean) {
  return useQuery({
    queryKey: [...authKeys.audit(teamId), action, offset, limit],
    queryFn: () =>
      unwrap(
        api.GET("/api/v1/teams/{team_id}/audit", {
          params: { path: { team_id: teamId }, query: { action: action ?? undefined, offset, limit } },
        }),
      ),
    enabled,
    placeholderData: keepPreviousData,
  });
}

export function useUsers(enabled: boolean) {
  return useQuery({ queryKey: authKeys.users, queryFn: () => unwrap(api.GET("/api/v1/users")), enabled });
}

export function useCreateUser() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (body: { username: string; password: string | null; is_site_admin: boolean }) =>
      unwrap(api.POST("/api/v1/users", { body })),
    onSuccess: () => client.invalidateQueries({ queryKey: authKeys.users }),
  });
}
