import { describe, expect, it } from "vitest";
import { endsSession } from "./session";

describe("which answers end the session", () => {
  it("is every 401 but a wrong password on the sign-in or change-password forms", () => {
    expect(endsSession(401, "/api/v1/projects")).toBe(true);
    expect(endsSession(401, "http://127.0.0.1:8000/api/v1/auth/me")).toBe(true);
    expect(endsSession(401, "/api/v1/projects/p1/models")).toBe(true);
    expect(endsSession(401, "http://127.0.0.1:8000/api/v1/auth/login")).toBe(false);
    expect(endsSession(401, "/api/v1/auth/password")).toBe(false);
  });

  it("is never another status", () => {
    expect(endsSession(403, "/api/v1/projects")).toBe(false);
    expect(endsSession(404, "/api/v1/projects")).toBe(false);
    expect(endsSession(200, "/api/v1/auth/me")).toBe(false);
  });
});
