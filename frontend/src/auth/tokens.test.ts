import { describe, expect, it } from "vitest";
import { parseExpiryDays, tokenStatus } from "./tokens";

describe("API tokens", () => {
  const now = new Date("2026-05-01T12:00:00Z");

  it("says whether a token still works", () => {
    expect(tokenStatus({ revoked_at: null, expires_at: null }, now)).toBe("active");
    expect(tokenStatus({ revoked_at: null, expires_at: "2026-06-01T00:00:00Z" }, now)).toBe("active");
    expect(tokenStatus({ revoked_at: null, expires_at: "2026-04-01T00:00:00Z" }, now)).toBe("expired");
    expect(tokenStatus({ revoked_at: "2026-04-01T00:00:00Z", expires_at: "2026-04-01T00:00:00Z" }, now)).toBe(
      "revoked",
    );
  });

  it("reads the optional days to expiry", () => {
    expect(parseExpiryDays("")).toEqual({ days: null });
    expect(parseExpiryDays(" 30 ")).toEqual({ days: 30 });
    expect(parseExpiryDays("3650")).toEqual({ days: 3650 });
    expect(parseExpiryDays("0")).toHaveProperty("error");
    expect(parseExpiryDays("3651")).toHaveProperty("error");
    expect(parseExpiryDays("1.5")).toHaveProperty("error");
    expect(parseExpiryDays("-2")).toHaveProperty("error");
  });
});
