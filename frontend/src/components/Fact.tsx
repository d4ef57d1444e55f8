// One fact of a `<dl className="facts">`: its name and value.
import type { ReactNode } from "react";

export function Fact({ label, children }: { label: ReactNode; children: ReactNode }) {
  return (
    <div>
      <dt>{label}</dt>
      <dd>{children}</dd>
    </div>
  );
}
