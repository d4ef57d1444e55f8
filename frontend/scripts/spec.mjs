// The OpenAPI spec the client is generated from, kept as frontend/openapi.json.
//   node scripts/spec.mjs write [--url http://127.0.0.1:8000]  refresh it (from a running API with --url,
//                                                              else from the backend code, no server needed)
//   node scripts/spec.mjs check                                fail when it differs from the backend's spec
// Without --url the spec comes from `create_app().openapi()` run by $KNEEBOARD_PYTHON (default ../.venv/bin/python).
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { isDeepStrictEqual } from "node:util";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const FRONTEND = fileURLToPath(new URL("..", import.meta.url));
const SPEC_FILE = join(FRONTEND, "openapi.json");
const DUMP =
  "import json; from backend.api.app import create_app; print(json.dumps(create_app(run_reaper=False).openapi()))";

function specFromBackend() {
  const python = process.env.KNEEBOARD_PYTHON ?? join(FRONTEND, "..", ".venv", "bin", "python");
  const dataDir = mkdtempSync(join(tmpdir(), "kneeboard-spec-"));
  try {
    const out = execFileSync(python, ["-c", DUMP], {
      cwd: join(FRONTEND, ".."),
      env: { ...process.env, KNEEBOARD_DATA_DIR: dataDir },
      encoding: "utf8",
    });
    return JSON.parse(out);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function specFromUrl(base) {
  const response = await fetch(new URL("/openapi.json", base));
  if (!response.ok) throw new Error(`${base}/openapi.json: HTTP ${response.status}`);
  return response.json();
}

const [command, flag, url] = process.argv.slice(2);
if (command === "write") {
  const spec = flag === "--url" ? await specFromUrl(url) : specFromBackend();
  writeFileSync(SPEC_FILE, JSON.stringify(spec, null, 2) + "\n");
  console.log(`wrote ${SPEC_FILE}; now run \`npm run gen:client\``);
} else if (command === "check") {
  if (!isDeepStrictEqual(JSON.parse(readFileSync(SPEC_FILE, "utf8")), specFromBackend())) {
    console.error(
      "frontend/openapi.json differs from the backend's spec: run `npm run spec:write && npm run gen:client`.",
    );
    process.exit(1);
  }
  console.log("frontend/openapi.json matches the backend's spec.");
} else {
  console.error("usage: node scripts/spec.mjs write [--url URL] | check");
  process.exit(2);
}
