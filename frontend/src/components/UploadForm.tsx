// The shared shape of the model and dataset upload forms: a file, extra fields, a progress bar, the error.
import { useState, type SubmitEvent, type ReactNode } from "react";
import { FileDrop } from "./FileDrop";
import { ErrorMessage } from "./QueryView";
import { ProgressBar } from "./Status";

export function UploadForm({
  title,
  accept,
  hint,
  upload,
  children,
}: {
  title: string;
  accept: string;
  hint: string;
  /** Sends the file; reports upload progress 0..1; resolves with a message once the API answered. */
  upload: (file: File, onProgress: (fraction: number) => void) => Promise<string>;
  /** Extra form fields. */
  children?: ReactNode;
}) {
  const [file, setFile] = useState<File | null>(null);
  const [progress, setProgress] = useState<number | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [done, setDone] = useState<string | null>(null);
  const busy = progress !== null;

  const submit = (event: SubmitEvent<HTMLFormElement>) => {
    event.preventDefault();
    if (!file) return;
    const form = event.currentTarget;
    setError(null);
    setDone(null);
    setProgress(0);
    upload(file, setProgress)
      .then((message) => {
        setDone(message);
        setFile(null);
        form.reset();
      })
      .catch(setError)
      .finally(() => {
        setProgress(null);
      });
  };

  return (
    <form className="upload panel" onSubmit={submit} aria-label={title}>
      <h3>{title}</h3>
      <FileDrop label="File" accept={accept} hint={hint} file={file} onFile={setFile} disabled={busy} />
      <fieldset disabled={busy} className="fields">
        {children}
      </fieldset>
      <div className="actions">
        <button type="submit" disabled={!file || busy}>
          Upload
        </button>
        {busy && (
          <ProgressBar
            value={progress}
            label={progress < 1 ? "Upload progress" : "Upload sent; the API is checking it"}
          />
        )}
        {busy && progress >= 1 && <span className="muted">Checking the file…</span>}
      </div>
      {done && (
        <p className="ok" role="status">
          {done}
        </p>
      )}
      {error !== null && <ErrorMessage error={error} />}
    </form>
  );
}

/** The optional name of what is uploaded (the API takes the file's name when it is blank). */
export function UploadNameField({ value, onChange }: { value: string; onChange: (name: string) => void }) {
  return (
    <label>
      <span>
        Name <span className="muted">(optional)</span>
      </span>
      <input
        value={value}
        onChange={(e) => {
          onChange(e.target.value);
        }}
        placeholder="default: the file name"
      />
    </label>
  );
}
