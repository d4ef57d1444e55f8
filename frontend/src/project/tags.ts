// Tags as people type them: separated by commas or spaces, each kept once, in the order typed.
export const TAG_PATTERN = /^[A-Za-z0-9_.:/+=@-]{1,40}$/;

export function parseTags(text: string): { tags: string[]; bad: string[] } {
  const words = text.split(/[\s,]+/).filter((w) => w !== "");
  const tags = [...new Set(words)];
  return { tags: tags.filter((t) => TAG_PATTERN.test(t)), bad: tags.filter((t) => !TAG_PATTERN.test(t)) };
}
