// The one confirmation of a destructive action (cancel a job, delete, revoke a token, remove a member): an
// in-page dialog that names what goes and what follows, the action in red and a way out that keeps things as
// they are; the API's refusal is shown inside it. Never the browser's confirm(), whose look and wording the
// page does not control (issue 35: three patterns for one kind of question).
import { useEffect, useRef, useState, type ReactNode } from "react";
import { Modal } from "./Modal";
import { ErrorMessage } from "./QueryView";

export interface ConfirmProps {
  /** The question, naming the thing: "Revoke the token “ci”?". */
  title: string;
  /** What follows, in words ("Whatever uses it stops working at once."). */
  children: ReactNode;
  /** The destructive button's text ("Revoke"). */
  confirm: string;
  /** The way out's text. */
  keep?: string;
  /** The action is under way: the button is disabled so it is not sent twice. */
  pending?: boolean;
  /** The API's refusal of the last try, shown in the dialog (null: none). */
  error?: Error | null;
  /** Do it; call `close` when it has succeeded (the dialog stays open on a refusal). */
  onConfirm: (close: () => void) => void;
  onClose: () => void;
}

export function ConfirmDialog({
  title,
  children,
  confirm,
  keep = "Keep it",
  pending = false,
  error = null,
  onConfirm,
  onClose,
}: ConfirmProps) {
  const keepRef = useRef<HTMLButtonElement>(null);
  // Focus on the way out once the dialog is open (Modal's effect, a child's, has run showModal, which focuses
  // the first button: the destructive one), so Enter or Space right after opening keeps things as they are.
  useEffect(() => {
    keepRef.current?.focus();
  }, []);
  return (
    <Modal title={title} onClose={onClose}>
      <div className="confirm-text">{children}</div>
      {error && <ErrorMessage error={error} />}
      <div className="actions">
        <button
          type="button"
          className="danger"
          disabled={pending}
          onClick={() => {
            onConfirm(onClose);
          }}
        >
          {confirm}
        </button>
        <button ref={keepRef} type="button" className="secondary" onClick={onClose}>
          {keep}
        </button>
      </div>
    </Modal>
  );
}

/** A button that asks first: it opens a ConfirmDialog, and the dialog's action is `onConfirm`. */
export function ConfirmButton({
  text,
  ariaLabel,
  className = "small",
  disabled = false,
  ...dialog
}: Omit<ConfirmProps, "onClose"> & { text: string; ariaLabel?: string; className?: string; disabled?: boolean }) {
  const [open, setOpen] = useState(false);
  return (
    <>
      <button
        type="button"
        className={className}
        aria-label={ariaLabel}
        aria-haspopup="dialog"
        disabled={disabled}
        onClick={() => {
          setOpen(true);
        }}
      >
        {text}
      </button>
      {open && (
        <ConfirmDialog
          {...dialog}
          onClose={() => {
            setOpen(false);
          }}
        />
      )}
    </>
  );
}
