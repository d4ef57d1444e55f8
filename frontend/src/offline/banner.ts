// What an exported report's banner says about its per-sample rows: how many the table holds and which of them
// open in the inspector, so it never reads as if the table held only the inspectable ones (issue 35: it named
// "the 50 samples with the largest KL" above a table that pages through all 360).
import { sampleCoverage, type ReportDocument } from "./answer";

const count = (n: number): string => n.toLocaleString("en-US");

/** The sentences about samples (empty for a report without per-sample rows). */
export function samplesNote(doc: ReportDocument): string {
  const coverage = sampleCoverage(doc);
  if (!coverage) return "";
  const { held, total } = coverage;
  const parts = [
    held >= total
      ? `The per-sample histogram and table hold all ${count(total)} samples.`
      : `The per-sample histogram and table hold ${count(held)} of ${count(total)} samples (the first by index, and the worst by KL).`,
  ];
  const inspect = doc.inspections;
  if (inspect) {
    const n = inspect.indices.length;
    if (n === 0) {
      parts.push("Inspecting a sample needs the dashboard: this file holds no inspections.");
    } else {
      const left = inspect.pictures_left_out;
      const pictures = left > 0 ? ` (${count(left)} without their picture, to keep the file small)` : "";
      parts.push(
        `Of these, the ${count(n)} with the largest KL open in the inspector here when their row is clicked` +
          `${pictures}; they are the first rows when the table is sorted by KL, highest first (as it opens). ` +
          "The others open on the dashboard.",
      );
    }
  }
  return parts.join(" ");
}
