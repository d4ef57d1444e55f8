// Multipart uploads with progress. fetch() cannot report upload progress, so these use XMLHttpRequest;
// the paths and response types still come from the generated client.
import { endsSession, sessionEnded } from "../auth/session";
import type { paths } from "../client/schema";
import { ApiError, detailOf } from "./http";
import type { Dataset, Model } from "./types";

const MODEL_UPLOAD = "/api/v1/projects/{project_id}/models" satisfies keyof paths;
const DATASET_UPLOAD = "/api/v1/projects/{project_id}/datasets" satisfies keyof paths;

export type Progress = (fraction: number) => void;

function post<T>(url: string, form: FormData, onProgress: Progress): Promise<T> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", url);
    xhr.responseType = "json";
    xhr.upload.onprogress = (event) => {
      if (event.lengthComputable) onProgress(event.loaded / event.total);
    };
    xhr.onload = () => {
      const body: unknown = xhr.response;
      if (xhr.status >= 200 && xhr.status < 300) resolve(body as T);
      else if (endsSession(xhr.status, url)) {
        sessionEnded();
        reject(new ApiError(xhr.status, detailOf(body) ?? "your session has ended; sign in again"));
      } else reject(new ApiError(xhr.status, detailOf(body) ?? `HTTP ${xhr.status.toString()} ${xhr.statusText}`));
    };
    xhr.onerror = () => {
      reject(new ApiError(0, "Cannot reach the API: the upload was interrupted"));
    };
    xhr.send(form);
  });
}

function formOf(file: File, fields: Record<string, string>): FormData {
  const form = new FormData();
  for (const [key, value] of Object.entries(fields)) if (value.trim()) form.append(key, value.trim());
  form.append("file", file);
  return form;
}

export function uploadModel(
  projectId: string,
  file: File,
  fields: { name: string; input_shapes: string },
  onProgress: Progress,
): Promise<Model> {
  const url = MODEL_UPLOAD.replace("{project_id}", encodeURIComponent(projectId));
  return post<Model>(url, formOf(file, fields), onProgress);
}

export function uploadDataset(
  projectId: string,
  file: File,
  fields: { name: string; preprocessing: string },
  onProgress: Progress,
): Promise<Dataset> {
  const url = DATASET_UPLOAD.replace("{project_id}", encodeURIComponent(projectId));
  return post<Dataset>(url, formOf(file, fields), onProgress);
}
