import { QueryCache, QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { App } from "./App";
import { ApiError } from "./api/http";
import { sessionEnded } from "./auth/session";
import "./styles.css";

const queryClient = new QueryClient({
  // A 401 from any query means the session ended (the API client's middleware says so too; this also covers
  // queries that do not go through it): the app shows the sign-in page.
  queryCache: new QueryCache({
    onError: (error) => {
      if (error instanceof ApiError && error.status === 401) sessionEnded();
    },
  }),
  defaultOptions: {
    queries: {
      // A 4xx answer (unknown id, job not finished) will not change on retry; network errors and 5xx may.
      retry: (failures, error) =>
        failures < 2 && !(error instanceof ApiError && error.status >= 400 && error.status < 500),
      refetchOnWindowFocus: false,
      staleTime: 5000,
    },
  },
});

const root = document.getElementById("root");
if (!root) throw new Error("index.html has no #root element");
createRoot(root).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <App />
    </QueryClientProvider>
  </StrictMode>,
);
