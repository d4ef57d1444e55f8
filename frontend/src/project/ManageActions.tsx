// Rename, notes, tags and delete for a model, dataset or job, as buttons that open a dialog. The API decides
// who may (members: what they made; team admins: anything), and its refusal is shown in the dialog.
import { useState, type ReactNode, type SubmitEvent } from "react";
import { ErrorMessage } from "../components/QueryView";
import { ConfirmDialog } from "../components/ConfirmDialog";
import { Modal } from "../components/Modal";
import { useDelete, useUpdate, type Managed } from "./manageQueries";
import { parseTags } from "./tags";

export interface Annotated {
  id: string;
  name?: string;
  notes?: string;
  tags?: string[];
}

const WHAT_DELETE_DOES: Record<Managed, string> = {
  model: "Its file is removed unless another model or dataset uses it. Jobs that used it keep their results.",
  dataset: "Its file is removed unless another model or dataset uses it. Jobs that used it keep their results.",
  job: "Its results go with it; a queued or running job is cancelled first.",
};

/** What the buttons and dialogs act on; `label` names it in the dialogs ("model “resnet int8”"). */
interface ManagedProps {
  what: Managed;
  projectId: string;
  item: Annotated;
  label: string;
}

/** The tags of a row as small chips (nothing when it has none). */
export function TagList({ tags }: { tags: readonly string[] | undefined }) {
  if (!tags || tags.length === 0) return null;
  return (
    <ul className="tags" aria-label="Tags">
      {tags.map((t) => (
        <li key={t}>{t}</li>
      ))}
    </ul>
  );
}

/** A row's notes, when it has some. */
export function NotesText({ notes }: { notes: string | undefined }) {
  return notes ? <p className="notes-text muted small-text">{notes}</p> : null;
}

function EditDialog({ what, projectId, item, label, onClose }: ManagedProps & { onClose: () => void }) {
  const update = useUpdate(what, projectId, item.id);
  const [name, setName] = useState(item.name ?? "");
  const [notes, setNotes] = useState(item.notes ?? "");
  const [tagText, setTagText] = useState((item.tags ?? []).join(", "));
  const { tags, bad } = parseTags(tagText);
  const submit = (event: SubmitEvent<HTMLFormElement>) => {
    event.preventDefault();
    // A job may have no name (""); a model or dataset always has one.
    const named = name.trim();
    update.mutate(
      { ...(named ? { name: named } : {}), notes, tags },
      {
        onSuccess: onClose,
      },
    );
  };
  return (
    <Modal title={`Edit ${label}`} onClose={onClose}>
      <form onSubmit={submit}>
        <label>
          Name
          <input
            value={name}
            maxLength={200}
            required={what !== "job"}
            placeholder={what === "job" ? "e.g. nightly int8 check" : undefined}
            onChange={(e) => {
              setName(e.target.value);
            }}
          />
        </label>
        <label>
          Notes
          <textarea
            value={notes}
            rows={4}
            maxLength={10000}
            onChange={(e) => {
              setNotes(e.target.value);
            }}
          />
        </label>
        <label>
          <span>
            Tags <span className="muted">(separated by commas or spaces)</span>
          </span>
          <input
            value={tagText}
            spellCheck={false}
            onChange={(e) => {
              setTagText(e.target.value);
            }}
            aria-invalid={bad.length > 0}
          />
        </label>
        {bad.length > 0 && (
          <p className="error small-text" role="alert">
            Not a tag: {bad.join(", ")} (letters, digits and _ . : / + = @ -; at most 40 characters)
          </p>
        )}
        {update.isError && <ErrorMessage error={update.error} />}
        <div className="actions">
          <button type="submit" disabled={update.isPending || bad.length > 0 || tags.length > 20}>
            Save
          </button>
          <button type="button" className="secondary" onClick={onClose}>
            Cancel
          </button>
        </div>
      </form>
    </Modal>
  );
}

function DeleteDialog({ what, projectId, item, label, onClose }: ManagedProps & { onClose: () => void }) {
  const remove = useDelete(what, projectId, item.id);
  return (
    <ConfirmDialog
      title={`Delete ${label}?`}
      confirm="Delete"
      pending={remove.isPending}
      error={remove.error}
      onConfirm={(close) => {
        remove.mutate(undefined, { onSuccess: close });
      }}
      onClose={onClose}
    >
      <p>{WHAT_DELETE_DOES[what]} This cannot be undone.</p>
    </ConfirmDialog>
  );
}

/** A small button that opens a dialog, and the dialog while it is open (`dialog` gets its close function). */
function DialogButton({
  text,
  ariaLabel,
  dialog,
}: {
  text: string;
  ariaLabel: string;
  dialog: (close: () => void) => ReactNode;
}) {
  const [open, setOpen] = useState(false);
  return (
    <>
      <button
        type="button"
        className="small"
        aria-label={ariaLabel}
        onClick={() => {
          setOpen(true);
        }}
      >
        {text}
      </button>
      {open &&
        dialog(() => {
          setOpen(false);
        })}
    </>
  );
}

/** Only the "Edit" button (name, notes, tags), e.g. on a model's own page, where deleting would leave the page
 * on nothing. */
export function EditButton(props: ManagedProps) {
  return (
    <DialogButton
      text="Edit"
      ariaLabel={`Edit ${props.label}`}
      dialog={(close) => <EditDialog {...props} onClose={close} />}
    />
  );
}

/** "Edit" and "Delete" buttons for one row. */
export function ManageButtons(props: ManagedProps) {
  return (
    <>
      <EditButton {...props} />
      <DialogButton
        text="Delete"
        ariaLabel={`Delete ${props.label}`}
        dialog={(close) => <DeleteDialog {...props} onClose={close} />}
      />
    </>
  );
}
