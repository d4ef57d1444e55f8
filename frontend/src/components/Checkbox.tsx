// A checkbox with its words beside it, in one label (class "inline").
import type { ReactNode } from "react";

export function Checkbox({
  checked,
  onChange,
  disabled,
  children,
}: {
  checked: boolean;
  onChange: (checked: boolean) => void;
  disabled?: boolean;
  /** What ticking it means. */
  children: ReactNode;
}) {
  return (
    <label className="inline">
      <input
        type="checkbox"
        checked={checked}
        disabled={disabled}
        onChange={(e) => {
          onChange(e.target.checked);
        }}
      />
      {children}
    </label>
  );
}
