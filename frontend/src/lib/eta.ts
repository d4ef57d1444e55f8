// The time a running job has left (the API's eta_s), said as a person would: "about 2 min left". Rounded
// coarsely on purpose: a straight-line estimate is not good to the second.

/** "about 40 s left", "about 2 min left", "about 1 h 20 min left"; "" when there is no estimate yet. */
export function formatEta(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds) || seconds < 0) return "";
  if (seconds < 10) return "a few seconds left";
  if (seconds < 55) return `about ${(Math.round(seconds / 10) * 10).toString()} s left`;
  const minutes = Math.max(1, Math.round(seconds / 60));
  if (minutes < 60) return `about ${minutes.toString()} min left`;
  const hours = Math.floor(minutes / 60);
  const rest = minutes % 60;
  return rest === 0 ? `about ${hours.toString()} h left` : `about ${hours.toString()} h ${rest.toString()} min left`;
}
