import react from "@vitejs/plugin-react";
import { defineConfig } from "vitest/config";

// The API serves dist/index.html at / and mounts dist/assets/ at /assets/ (backend/api/app.py).
// The dev server serves the app at / and forwards API calls to an API started on port 8931.
export default defineConfig(() => ({
  base: "/",
  plugins: [react()],
  build: {
    outDir: "dist",
    assetsDir: "assets",
    emptyOutDir: true,
    // Plotly's cartesian bundle (it has the heatmap trace) is ~1.4 MB minified: one chunk, loaded only by
    // the pages with charts.
    chunkSizeWarningLimit: 1500,
  },
  server: {
    proxy: {
      "/api": "http://127.0.0.1:8931",
      "/docs": "http://127.0.0.1:8931",
      "/openapi.json": "http://127.0.0.1:8931",
    },
  },
  test: {
    include: ["src/**/*.test.ts"],
    environment: "node",
  },
}));
