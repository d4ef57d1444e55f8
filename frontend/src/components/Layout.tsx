import type { ReactNode } from "react";

export interface Crumb {
  label: string;
  href?: string;
}

/** The page frame: app header, breadcrumbs, the page's title and content. */
export function Layout({
  crumbs,
  title,
  actions,
  children,
}: {
  crumbs: Crumb[];
  title: ReactNode;
  actions?: ReactNode;
  children: ReactNode;
}) {
  return (
    <>
      <header className="top">
        <a className="brand" href="#/">
          Kneeboard
        </a>
        <span className="tagline">compressed models vs. their golden model</span>
        <a className="docs" href="/docs">
          API docs
        </a>
      </header>
      <main>
        <nav aria-label="Breadcrumbs" className="crumbs">
          <ol>
            {crumbs.map((c) => (
              <li key={c.label}>{c.href ? <a href={c.href}>{c.label}</a> : c.label}</li>
            ))}
          </ol>
        </nav>
        <div className="page-head">
          <h1>{title}</h1>
          {actions}
        </div>
        {children}
      </main>
    </>
  );
}
