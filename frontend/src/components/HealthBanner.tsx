// A banner over every page when something keeps jobs from running: no worker seen for 60 s ("no worker is
// running: jobs will wait") or the reaper failing round after round. The API says what (GET /api/v1/health's
// `problems`); this only shows it, asking again every 15 s.
import { useQuery } from "@tanstack/react-query";
import { api, unwrap } from "../api/http";

const EVERY_MS = 15_000;

export function HealthBanner() {
  const health = useQuery({
    queryKey: ["health"],
    queryFn: () => unwrap(api.GET("/api/v1/health")),
    refetchInterval: EVERY_MS,
  });
  return <HealthProblems problems={health.data?.problems ?? []} />;
}

/** The banner itself: nothing when there is no problem. */
export function HealthProblems({ problems }: { problems: readonly string[] }) {
  if (problems.length === 0) return null;
  return (
    <div className="error" role="alert">
      {problems.map((problem) => (
        <p key={problem}>{problem}</p>
      ))}
    </div>
  );
}
