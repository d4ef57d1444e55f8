// "Download": the model's file exactly as uploaded (GET /models/{id}/file). A plain link: the browser sends
// the session cookie and saves the file under its upload name.
import type { paths } from "../client/schema";

const MODEL_FILE = "/api/v1/models/{model_id}/file" satisfies keyof paths;

export const modelFileHref = (modelId: string): string => MODEL_FILE.replace("{model_id}", encodeURIComponent(modelId));

export function ModelFileLink({ modelId, filename }: { modelId: string; filename: string }) {
  return (
    <a className="button small-text" href={modelFileHref(modelId)} download={filename} title="The file as uploaded">
      Download
    </a>
  );
}
