// The signed-in user, for every page: App renders pages only once GET /auth/me answered.
import { createContext, useContext } from "react";
import type { Me } from "../api/types";

export const MeContext = createContext<Me | null>(null);

/** The signed-in user, or null outside the signed-in app (the sign-in page). */
export function useMaybeCurrentUser(): Me | null {
  return useContext(MeContext);
}

export function useCurrentUser(): Me {
  const me = useContext(MeContext);
  if (me === null) throw new Error("useCurrentUser outside a signed-in page");
  return me;
}
