// Pure helpers of the task sample view (TaskSampleView.tsx): a word-level diff of two transcripts and the
// boxes' SVG geometry.

export interface DiffPart {
  op: "same" | "removed" | "added";
  text: string;
}

/** The word-level difference from `before` to `after` (a longest common subsequence of words): the words
 * only `before` has are "removed", those only `after` has "added", in reading order. */
export function wordDiff(before: string, after: string): DiffPart[] {
  const a = before.split(/\s+/).filter(Boolean);
  const b = after.split(/\s+/).filter(Boolean);
  // lcs[i][j]: length of the LCS of a[i:] and b[j:]
  const lcs = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--)
    for (let j = b.length - 1; j >= 0; j--)
      (lcs[i] as number[])[j] =
        a[i] === b[j]
          ? ((lcs[i + 1] as number[])[j + 1] ?? 0) + 1
          : Math.max((lcs[i + 1] as number[])[j] ?? 0, (lcs[i] as number[])[j + 1] ?? 0);
  const parts: DiffPart[] = [];
  const push = (op: DiffPart["op"], text: string) => {
    const last = parts[parts.length - 1];
    if (last && last.op === op) last.text += ` ${text}`;
    else parts.push({ op, text });
  };
  let [i, j] = [0, 0];
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      push("same", a[i] as string);
      i++;
      j++;
    } else if (((lcs[i + 1] as number[])[j] ?? 0) >= ((lcs[i] as number[])[j + 1] ?? 0))
      push("removed", a[i++] as string);
    else push("added", b[j++] as string);
  }
  while (i < a.length) push("removed", a[i++] as string);
  while (j < b.length) push("added", b[j++] as string);
  return parts;
}

/** Words of `after` that differ from `before` (added), for a one-line count. */
export function changedWords(before: string, after: string): number {
  return wordDiff(before, after)
    .filter((p) => p.op !== "same")
    .reduce((n, p) => n + p.text.split(" ").length, 0);
}

export interface SvgBox {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** An [x1, y1, x2, y2] box as an SVG rect in the image's own pixels (the viewBox), clipped to the image. */
export function svgBox(box: readonly number[], size: readonly number[]): SvgBox | null {
  const [x1, y1, x2, y2] = box as [number, number, number, number];
  const [h, w] = size as [number, number];
  const [left, top] = [Math.max(0, x1), Math.max(0, y1)];
  const [right, bottom] = [Math.min(w, x2), Math.min(h, y2)];
  if (!(right > left && bottom > top)) return null;
  return { x: left, y: top, width: right - left, height: bottom - top };
}
