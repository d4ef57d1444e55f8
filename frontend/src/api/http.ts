// The typed API client (openapi-fetch over the generated paths) and the error every failed call becomes.
import createClient from "openapi-fetch";
import type { paths } from "../client/schema";

export const api = createClient<paths>({ baseUrl: "" });

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
