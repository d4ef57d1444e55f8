// Personal API tokens: whether one still works, and reading the optional "days to expiry" field.
import type { ApiToken } from "../api/types";

export type TokenStatus = "active" | "expired" | "revoked";

export function tokenStatus(token: Pick<ApiToken, "revoked_at" | "expires_at">, now: Date = new Date()): TokenStatus {
  if (token.revoked_at) return "revoked";
  if (token.expires_at && new Date(token.expires_at).getTime() <= now.getTime()) return "expired";
  return "active";
}

export const MAX_EXPIRY_DAYS = 3650;

/** The "expires after N days" field: null when empty (no expiry), a number 1..3650, or an error message. */
export function parseExpiryDays(text: string): { days: number | null } | { error: string } {
  const value = text.trim();
  if (value === "") return { days: null };
  if (!/^\d+$/.test(value)) return { error: "days to expiry: a whole number of days, or empty for no expiry" };
  const days = Number(value);
  if (days < 1 || days > MAX_EXPIRY_DAYS)
    return { error: `days to expiry: between 1 and ${MAX_EXPIRY_DAYS.toString()}, or empty for no expiry` };
  return { days };
}
