import react from "@vitejs/plugin-react";
import type { Plugin } from "vite";
import { defineConfig } from "vitest/config";

/**
 * Offline mode (`vite build --mode offline`, the second half of `npm run build`): the shareable report page
 * offline.html as ONE file, dist/offline.html. Everything is bundled into a single script (no code splitting,
 * so Plotly's lazy chunk is in it too), assets become data: URLs, and this plugin then moves the script and the
 * stylesheet into the page itself, so a browser needs nothing but the file (file:// pages cannot import
 * modules from other files). The API fills its kb-report element with a job's results
 * (backend/api/routes/report_export.py).
 */
function inlineIntoPage(): Plugin {
  // "</script" or "<!--" inside the inlined code would end the element early or change how it is parsed;
  // \x3C is "<" in a string, template or regular expression, the only places minified code can hold them.
  const safe = (code: string) => code.replace(/<(\/script|!--)/gi, "\\x3C$1");
  return {
    name: "kneeboard-inline-into-page",
    enforce: "post",
    // After Vite's own generateBundle hooks (they fill in the preload placeholders of the code inlined here).
    generateBundle: {
      order: "post",
      handler(_options, bundle) {
        const page = Object.values(bundle).find((f) => f.type === "asset" && f.fileName.endsWith(".html"));
        if (page?.type !== "asset") throw new Error("offline build: no HTML page in the bundle");
        let html = String(page.source);
        const take = (fileName: string): string => {
          const file = bundle[fileName];
          if (!file) throw new Error(`offline build: ${fileName} is not in the bundle`);
          Reflect.deleteProperty(bundle, fileName);
          return file.type === "chunk" ? file.code : String(file.source);
        };
        html = html.replace(/<script type="module" crossorigin src="\.\/([^"]+)"><\/script>/g, (_m, name: string) => {
          return `<script type="module">${safe(take(name))}</script>`;
        });
        html = html.replace(/<link rel="stylesheet" crossorigin href="\.\/([^"]+)">/g, (_m, name: string) => {
          return `<style>${take(name).replace(/<\/style/gi, "\\3C/style")}</style>`;
        });
        const left = Object.keys(bundle).filter((name) => name !== page.fileName);
        if (left.length > 0) throw new Error(`offline build: files left outside the page: ${left.join(", ")}`);
        page.source = html;
      },
    },
  };
}

// The API serves dist/index.html at / and mounts dist/assets/ at /assets/ (backend/api/app.py).
// The dev server serves the app at / and forwards API calls to an API started on port 8931.
export default defineConfig(({ mode }) =>
  mode === "offline"
    ? {
        base: "./",
        plugins: [react(), inlineIntoPage()],
        build: {
          outDir: "dist",
          emptyOutDir: false, // dist holds the dashboard built just before
          assetsInlineLimit: Number.MAX_SAFE_INTEGER,
          cssCodeSplit: false,
          modulePreload: false,
          chunkSizeWarningLimit: 6000,
          rolldownOptions: { input: "offline.html", output: { codeSplitting: false } },
        },
      }
    : {
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
          include: ["src/**/*.test.{ts,tsx}"],
          environment: "node",
        },
      },
);
