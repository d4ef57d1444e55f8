// Which robustness slices a fidelity job's launcher offers (issue 35: choose slices and severities, and only
// what applies). The rule is the engine's (worker/engine/robustness/run.py `_skip`, transforms.py, tokens.py)
// read from the dataset's described arrays: noise needs a float input, the image corruptions a float array
// of rank 4 (a batch of pictures), token replacement an integer [N, T] array that is not a mask, type,
// segment or position array, FGSM / PGD a PyTorch golden model or a PyTorch twin (and a float input). The
// engine still decides on the data itself and the report lists what it skipped and why.
import type { Dataset } from "../api/types";

export type RobustnessSlice =
  | "gaussian_noise"
  | "brightness"
  | "contrast"
  | "gaussian_blur"
  | "occlusion"
  | "jpeg"
  | "token_replacement"
  | "fgsm"
  | "pgd";

export const SLICE_LABELS: Record<RobustnessSlice, string> = {
  gaussian_noise: "Gaussian noise",
  brightness: "Brightness",
  contrast: "Contrast",
  gaussian_blur: "Blur",
  occlusion: "Occlusion",
  jpeg: "JPEG",
  token_replacement: "Token replacement",
  fgsm: "FGSM",
  pgd: "PGD (10 steps)",
};

const GROUPS: { slices: RobustnessSlice[]; needs: "float" | "image" | "tokens" | "gradient" }[] = [
  { slices: ["gaussian_noise"], needs: "float" },
  { slices: ["brightness", "contrast", "gaussian_blur", "occlusion", "jpeg"], needs: "image" },
  { slices: ["token_replacement"], needs: "tokens" },
  { slices: ["fgsm", "pgd"], needs: "gradient" },
];

export const SEVERITIES = [1, 2, 3] as const;

const NOT_TOKEN_WORDS = ["mask", "type", "segment", "position"];

const isFloat = (dtype: string) => /^(float|bfloat)/.test(dtype.replace(/^[<>|=]/, "")) || /^[<>|=]?f\d/.test(dtype);
const isInteger = (dtype: string) => /^u?int/.test(dtype.replace(/^[<>|=]/, "")) || /^[<>|=]?[iu]\d/.test(dtype);

export interface SliceOffer {
  slice: RobustnessSlice;
  /** null: offered; else why it does not apply to this dataset and pair. */
  why: string | null;
}

/** Every slice with whether it applies. `attacks`: the golden model is PyTorch, or a twin is chosen. An
 * unknown dataset (not chosen yet) offers every slice but the attacks' own condition. */
export function sliceOffers(dataset: Dataset | undefined, attacks: boolean): SliceOffer[] {
  const arrays = Object.entries(dataset?.arrays ?? {}).filter(([name]) => name !== "attention_mask");
  const known = dataset !== undefined;
  const has = {
    float: !known || arrays.some(([, a]) => isFloat(a.dtype)),
    image: !known || arrays.some(([, a]) => isFloat(a.dtype) && a.shape.length === 4),
    tokens:
      !known ||
      arrays.some(
        ([name, a]) =>
          isInteger(a.dtype) && a.shape.length === 2 && !NOT_TOKEN_WORDS.some((w) => name.toLowerCase().includes(w)),
      ),
  };
  const why = {
    float: "the dataset has no float input to corrupt",
    image: "needs image inputs (a float array shaped [N, C, H, W] or [N, H, W, C])",
    tokens: "needs token-id inputs (an integer array [N, T] that is not a mask, type, segment or position array)",
    gradient: "needs a PyTorch golden model, or a PyTorch twin of the ONNX one",
  };
  return GROUPS.flatMap(({ slices, needs }) =>
    slices.map((slice) => {
      const ok = needs === "gradient" ? attacks && has.float : has[needs];
      return { slice, why: ok ? null : needs === "gradient" && attacks ? why.float : why[needs] };
    }),
  );
}

/** The `robustness.slices` / `severities` a job sends, or why the choice cannot launch. */
export function robustnessChoice(
  offers: readonly SliceOffer[],
  chosen: ReadonlySet<RobustnessSlice>,
  severities: ReadonlySet<number>,
  ood: boolean,
): { slices: RobustnessSlice[]; severities: number[] } | string {
  const slices = offers.filter((o) => o.why === null && chosen.has(o.slice)).map((o) => o.slice);
  if (slices.length === 0 && !ood) return "Choose at least one robustness slice, or out-of-distribution data.";
  const levels = SEVERITIES.filter((s) => severities.has(s));
  if (slices.length > 0 && levels.length === 0) return "Choose at least one severity.";
  return { slices, severities: levels.length > 0 ? levels : [...SEVERITIES] };
}
