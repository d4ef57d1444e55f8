// The notes (or warnings) a result carries, one paragraph each.
export function Notes({ notes, className = "note" }: { notes: readonly string[]; className?: "note" | "warning" }) {
  return (
    <>
      {notes.map((n) => (
        <p key={n} className={className}>
          {n}
        </p>
      ))}
    </>
  );
}
