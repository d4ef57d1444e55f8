// The project's budget alerts (newest first, acknowledge), and the header badge that counts the open ones.
import { useState } from "react";
import { Pager } from "../components/Pager";
import "./budgets.css";
import { Empty, ErrorMessage, QueryView } from "../components/QueryView";
import { formatTime } from "../lib/format";
import { DEFAULT_SAMPLE_QUERY, href } from "../lib/route";
import { ALERTS_PAGE, useAcknowledgeAlert, useAlerts, type Alert } from "./queries";

const DELIVERY: Record<Alert["delivery_state"], string> = {
  none: "",
  pending: "webhook pending",
  delivered: "webhook delivered",
  failed: "webhook failed",
};

/** "3 open alerts" in the project header; nothing while there are none. Scrolls to the alerts list. */
export function AlertsBadge({ projectId }: { projectId: string }) {
  const open = useAlerts(projectId, true, 0);
  const count = open.data?.unacknowledged ?? 0;
  if (count === 0) return null;
  return (
    <button
      type="button"
      className="badge badge-bad alerts-badge"
      aria-label={`${count.toString()} open budget alert${count === 1 ? "" : "s"}: show them`}
      onClick={() => {
        document.getElementById("alerts-heading")?.scrollIntoView({ behavior: "smooth" });
      }}
    >
      {count} open alert{count === 1 ? "" : "s"}
    </button>
  );
}

function AlertRow({ alert, projectId, canAcknowledge }: { alert: Alert; projectId: string; canAcknowledge: boolean }) {
  const ack = useAcknowledgeAlert(projectId);
  const delivery = DELIVERY[alert.delivery_state];
  return (
    <tr data-alert-id={alert.id} className={alert.acknowledged_at ? "muted" : undefined}>
      <td>{formatTime(alert.created_at)}</td>
      <td>{alert.budget_name}</td>
      <td>
        <a href={href({ page: "report", jobId: alert.job_id, query: DEFAULT_SAMPLE_QUERY })}>
          {alert.compressed_model ?? `job ${alert.job_id.slice(0, 8)}`}
        </a>
      </td>
      <td>
        <ul className="plain">
          {alert.breaches.map((breach) => (
            <li key={`${breach.metric}-${breach.bound}`}>{breach.message}</li>
          ))}
        </ul>
        {delivery && (
          <div className="muted small-text" title={alert.last_error ?? undefined}>
            {delivery}
            {alert.delivery_state === "failed" && alert.last_error ? `: ${alert.last_error}` : ""}
          </div>
        )}
      </td>
      <td>
        {alert.acknowledged_at ? (
          <span className="muted small-text">acknowledged {formatTime(alert.acknowledged_at)}</span>
        ) : (
          canAcknowledge && (
            <button
              type="button"
              className="small"
              disabled={ack.isPending}
              aria-label={`Acknowledge alert of budget ${alert.budget_name}`}
              onClick={() => {
                ack.mutate(alert.id);
              }}
            >
              Acknowledge
            </button>
          )
        )}
        {ack.isError && <ErrorMessage error={ack.error} />}
      </td>
    </tr>
  );
}

export function AlertsSection({ projectId, canAcknowledge }: { projectId: string; canAcknowledge: boolean }) {
  const [openOnly, setOpenOnly] = useState(false);
  const [offset, setOffset] = useState(0);
  const alerts = useAlerts(projectId, openOnly, offset);
  return (
    <section aria-labelledby="alerts-heading">
      <h2 id="alerts-heading">Budget alerts</h2>
      <label className="inline small-text alerts-filter">
        <input
          type="checkbox"
          checked={openOnly}
          onChange={(e) => {
            setOpenOnly(e.target.checked);
            setOffset(0);
          }}
        />{" "}
        Only unacknowledged
      </label>
      <QueryView query={alerts} what="the alerts">
        {(page) =>
          page.items.length === 0 ? (
            <Empty>{openOnly ? "No open alerts." : "No budget has been breached."}</Empty>
          ) : (
            <>
              <table className="table">
                <thead>
                  <tr>
                    <th>When</th>
                    <th>Budget</th>
                    <th>Model</th>
                    <th>Breaches</th>
                    <th aria-label="Acknowledged" />
                  </tr>
                </thead>
                <tbody>
                  {page.items.map((alert) => (
                    <AlertRow key={alert.id} alert={alert} projectId={projectId} canAcknowledge={canAcknowledge} />
                  ))}
                </tbody>
              </table>
              <Pager offset={offset} limit={ALERTS_PAGE} total={page.total} onChange={setOffset} label="alerts" />
            </>
          )
        }
      </QueryView>
    </section>
  );
}
