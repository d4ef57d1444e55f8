// The typed API client (openapi-fetch over the generated paths) and the error every failed call becomes.
import createClient from "openapi-fetch";
import { endsSession, sessionEnded } from "../auth/session";
import type { paths } from "../client/schema";

export const api = createClient<paths>({ baseUrl: "" });

// Every call, query or mutation: a 401 means the session ended (expired, signed out elsewhere); the app then
// shows the sign-in page and comes back to the same page once signed in.
api.use({
  onResponse({ request, response }) {
    if (endsSession(response.status, request.url)) sessionEnded();
    return undefined;
  },
});

/** A failed API call; the message is the API's {"detail": …} text when it sent one. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

export function detailOf(body: unknown): string | null {
  if (typeof body !== "object" || body === null || !("detail" in body)) return null;
  const detail = body.detail;
  return typeof detail === "string" ? detail : JSON.stringify(detail);
}

interface Result<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/** The data of a successful call; throws ApiError otherwise. */
export async function unwrap<T>(call: Promise<Result<T>>): Promise<T> {
  let result: Result<T>;
  try {
    result = await call;
  } catch (error) {
    throw new ApiError(0, `Cannot reach the API (${error instanceof Error ? error.message : String(error)})`);
  }
  const { data, error, response } = result;
  if (response.ok && data !== undefined) return data;
  throw new ApiError(response.status, detailOf(error) ?? `HTTP ${response.status.toString()} ${response.statusText}`);
}

/** A call answered 204 No Content (sign out, revoke, remove): resolves when it succeeded, else throws ApiError. */
export async function unwrapEmpty(call: Promise<Result<unknown>>): Promise<void> {
  let result: Result<unknown>;
  try {
    result = await call;
  } catch (error) {
    throw new ApiError(0, `Cannot reach the API (${error instanceof Error ? error.message : String(error)})`);
  }
  const { error, response } = result;
  if (response.ok) return;
  throw new ApiError(response.status, detailOf(error) ?? `HTTP ${response.status.toString()} ${response.statusText}`);
}
