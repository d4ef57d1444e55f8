export function Pager({
  offset,
  limit,
  total,
  onChange,
  label,
}: {
  offset: number;
  limit: number;
  total: number;
  onChange: (offset: number) => void;
  label: string;
}) {
  if (total <= limit && offset === 0) return null;
  const last = Math.min(offset + limit, total);
  return (
    <nav className="pager" aria-label={label}>
      <button
        type="button"
        disabled={offset === 0}
        onClick={() => {
          onChange(Math.max(0, offset - limit));
        }}
      >
        ← Previous
      </button>
      <span>
        {total === 0 ? 0 : offset + 1}–{last} of {total.toLocaleString("en-US")}
      </span>
      <button
        type="button"
        disabled={last >= total}
        onClick={() => {
          onChange(offset + limit);
        }}
      >
        Next →
      </button>
    </nav>
  );
}
