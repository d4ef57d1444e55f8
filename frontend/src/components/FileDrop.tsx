// A file chooser that also takes a file dropped onto it.
import { useId, useState, type DragEvent } from "react";
import { formatBytes } from "../lib/format";

export function FileDrop({
  label,
  accept,
  hint,
  file,
  onFile,
  disabled,
}: {
  label: string;
  accept: string;
  hint: string;
  file: File | null;
  onFile: (file: File | null) => void;
  disabled: boolean;
}) {
  const id = useId();
  const [over, setOver] = useState(false);
  const onDrop = (event: DragEvent) => {
    event.preventDefault();
    setOver(false);
    if (!disabled) onFile(event.dataTransfer.files[0] ?? null);
  };
  return (
    <div
      className={`drop${over ? " drop-over" : ""}`}
      onDragOver={(event) => {
        event.preventDefault();
        setOver(true);
      }}
      onDragLeave={() => {
        setOver(false);
      }}
      onDrop={onDrop}
    >
      <label htmlFor={id}>{label}</label>
      <input
        id={id}
        type="file"
        accept={accept}
        disabled={disabled}
        onChange={(event) => {
          onFile(event.target.files?.[0] ?? null);
        }}
      />
      <p className="muted">
        {file ? `${file.name} (${formatBytes(file.size)})` : `Drop a file here or choose one. ${hint}`}
      </p>
    </div>
  );
}
