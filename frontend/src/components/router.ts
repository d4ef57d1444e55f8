import { useSyncExternalStore } from "react";
import { href, parseHash, type Route } from "../lib/route";

function subscribe(onChange: () => void): () => void {
  window.addEventListener("hashchange", onChange);
  return () => {
    window.removeEventListener("hashchange", onChange);
  };
}

/** The current page, from location.hash; re-renders on navigation. */
export function useRoute(): Route {
  const hash = useSyncExternalStore(subscribe, () => window.location.hash);
  return parseHash(hash);
}

/** Changes the page state in place (table sorting, filters): no new history entry per click. */
export function replaceRoute(route: Route): void {
  window.history.replaceState(null, "", href(route));
  window.dispatchEvent(new HashChangeEvent("hashchange"));
}
