// The project's fidelity budgets: the list, and a form that creates or edits one.
import { useState, type SyntheticEvent } from "react";
import { ConfirmButton } from "../components/ConfirmDialog";
import { ErrorMessage, Empty, QueryView } from "../components/QueryView";
import "./budgets.css";
import { formatRule, formatRules, parseRules } from "./rules";
import { useBudgets, useDeleteBudget, useSaveBudget, type Budget, type BudgetInput } from "./queries";

type Scope = BudgetInput["scope"];

const SCOPE_LABELS: Record<NonNullable<Scope>, string> = {
  all: "every compressed model",
  tag: "models with the tag",
  family: "models whose name starts with",
};

function scopeText(budget: Budget): string {
  return budget.scope === "all" ? SCOPE_LABELS.all : `${SCOPE_LABELS[budget.scope]} “${budget.scope_value}”`;
}

interface Draft {
  id: string | null;
  name: string;
  scope: NonNullable<Scope>;
  scopeValue: string;
  rules: string;
}

const EMPTY_DRAFT: Draft = { id: null, name: "", scope: "all", scopeValue: "", rules: "kl_mean <= 0.01" };

function BudgetForm({ projectId, draft, onDone }: { projectId: string; draft: Draft; onDone: () => void }) {
  const [form, setForm] = useState(draft);
  const [problem, setProblem] = useState<string | null>(null);
  const save = useSaveBudget(projectId);
  const submit = (event: SyntheticEvent) => {
    event.preventDefault();
    const parsed = parseRules(form.rules);
    if (parsed.error !== null) {
      setProblem(`Rules: ${parsed.error}`);
      return;
    }
    setProblem(null);
    const body: BudgetInput = {
      name: form.name.trim(),
      scope: form.scope,
      scope_value: form.scope === "all" ? "" : form.scopeValue.trim(),
      rules: parsed.rules,
    };
    save.mutate({ id: form.id, body }, { onSuccess: onDone });
  };
  return (
    <form onSubmit={submit} aria-label={form.id ? "Edit budget" : "New budget"} className="budget-form">
      <label>
        Name{" "}
        <input
          required
          maxLength={200}
          value={form.name}
          onChange={(e) => {
            setForm({ ...form, name: e.target.value });
          }}
        />
      </label>
      <label>
        Applies to{" "}
        <select
          value={form.scope}
          onChange={(e) => {
            setForm({ ...form, scope: e.target.value as Draft["scope"] });
          }}
        >
          {Object.entries(SCOPE_LABELS).map(([value, label]) => (
            <option key={value} value={value}>
              {label}
            </option>
          ))}
        </select>
      </label>
      {form.scope !== "all" && (
        <label>
          {form.scope === "tag" ? "Tag" : "Name prefix"}{" "}
          <input
            required
            maxLength={200}
            value={form.scopeValue}
            onChange={(e) => {
              setForm({ ...form, scopeValue: e.target.value });
            }}
          />
        </label>
      )}
      <label>
        Rules, one a line (as <code>kneeboard check --max/--min</code>)
        <textarea
          rows={3}
          value={form.rules}
          spellCheck={false}
          onChange={(e) => {
            setForm({ ...form, rules: e.target.value });
          }}
        />
      </label>
      {problem && (
        <p className="error" role="alert">
          {problem}
        </p>
      )}
      {save.isError && <ErrorMessage error={save.error} />}
      <div className="row-actions">
        <button type="submit" disabled={save.isPending}>
          {form.id ? "Save budget" : "Add budget"}
        </button>
        <button type="button" onClick={onDone}>
          Cancel
        </button>
      </div>
    </form>
  );
}

export function BudgetsSection({ projectId, canEdit }: { projectId: string; canEdit: boolean }) {
  const budgets = useBudgets(projectId);
  const remove = useDeleteBudget(projectId);
  const [draft, setDraft] = useState<Draft | null>(null);
  return (
    <section aria-labelledby="budgets-heading">
      <h2 id="budgets-heading">Fidelity budgets</h2>
      <p className="muted small-text">
        Every fidelity job that succeeds is checked against the budgets whose scope holds its compressed model; a breach
        raises an alert.
      </p>
      <QueryView query={budgets} what="the budgets">
        {(rows) =>
          rows.length === 0 ? (
            <Empty>No budgets yet.</Empty>
          ) : (
            <table className="table">
              <thead>
                <tr>
                  <th>Budget</th>
                  <th>Applies to</th>
                  <th>Rules</th>
                  {canEdit && <th aria-label="Actions" />}
                </tr>
              </thead>
              <tbody>
                {rows.map((budget) => (
                  <tr key={budget.id} data-budget-id={budget.id}>
                    <td>{budget.name}</td>
                    <td>{scopeText(budget)}</td>
                    <td>
                      <ul className="plain">
                        {budget.rules.map((rule) => (
                          <li key={formatRule(rule)}>
                            <code>{formatRule(rule)}</code>
                          </li>
                        ))}
                      </ul>
                    </td>
                    {canEdit && (
                      <td>
                        <div className="row-actions">
                          <button
                            type="button"
                            className="small"
                            aria-label={`Edit budget ${budget.name}`}
                            onClick={() => {
                              setDraft({
                                id: budget.id,
                                name: budget.name,
                                scope: budget.scope,
                                scopeValue: budget.scope_value,
                                rules: formatRules(budget.rules),
                              });
                            }}
                          >
                            Edit
                          </button>
                          <ConfirmButton
                            text="Delete"
                            ariaLabel={`Delete budget ${budget.name}`}
                            title={`Delete the budget “${budget.name}”?`}
                            confirm="Delete"
                            disabled={remove.isPending}
                            pending={remove.isPending}
                            error={remove.error}
                            onConfirm={(close) => {
                              remove.mutate(budget.id, { onSuccess: close });
                            }}
                          >
                            <p>
                              Finished jobs are no longer checked against it. The alerts it raised stay, with its name.
                              This cannot be undone.
                            </p>
                          </ConfirmButton>
                        </div>
                      </td>
                    )}
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </QueryView>
      {remove.isError && <ErrorMessage error={remove.error} />}
      {canEdit &&
        (draft ? (
          <BudgetForm
            key={draft.id ?? "new"}
            projectId={projectId}
            draft={draft}
            onDone={() => {
              setDraft(null);
            }}
          />
        ) : (
          <button
            type="button"
            onClick={() => {
              setDraft(EMPTY_DRAFT);
            }}
          >
            New budget
          </button>
        ))}
    </section>
  );
}
