import { describe, expect, it } from "vitest";
import { atLeast, canWrite, roleIn, teamLabel, writableTeams } from "./roles";

const me = {
  teams: [
    { id: "t1", name: "default", role: "admin" as const },
    { id: "t2", name: "vision", role: "viewer" as const },
    { id: "t3", name: "audio", role: "member" as const },
  ],
};

describe("roles", () => {
  it("orders viewer < member < admin", () => {
    expect(atLeast("admin", "member")).toBe(true);
    expect(atLeast("member", "member")).toBe(true);
    expect(atLeast("viewer", "member")).toBe(false);
    expect(atLeast("member", "admin")).toBe(false);
    expect(atLeast(null, "viewer")).toBe(false);
  });

  it("finds the user's role in a team", () => {
    expect(roleIn(me, "t2")).toBe("viewer");
    expect(roleIn(me, "nope")).toBeNull();
    expect(canWrite(me, "t1")).toBe(true);
    expect(canWrite(me, "t2")).toBe(false);
    expect(canWrite(me, "nope")).toBe(false);
  });

  it("lists the teams a project can be created in", () => {
    expect(writableTeams(me).map((t) => t.id)).toEqual(["t1", "t3"]);
    expect(writableTeams({ teams: [] })).toEqual([]);
  });

  it("names teams, or shortens the id of one the user is not in", () => {
    expect(teamLabel(me, "t3")).toBe("audio");
    expect(teamLabel(me, "0123456789abcdef")).toBe("team 01234567");
  });
});
