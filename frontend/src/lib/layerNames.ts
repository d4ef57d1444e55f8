// One name per layer on every chart and table (issue 35): a profile row's canonical id (inspection's layer
// identity: the torch module path when the export recorded it, else the node name) is what the page shows;
// the row's own name (often the output tensor: "relu_1"), the compressed side's name and the stored aliases
// are what hover text adds. The activation-shift table and the match correction already used the canonical
// id, so the SQNR/cosine charts, the layer table and recovery's per-layer chart now agree with them.

export interface NamedLayer {
  name: string;
  canonical_id?: string | null;
  compressed_name?: string | null;
  aliases?: readonly string[] | null;
}

/** The name a layer goes by on every page. */
export function layerLabel(layer: NamedLayer): string {
  return layer.canonical_id ?? layer.name;
}

/** Its other names (row name, compressed name, aliases), without the label and without repeats. */
export function layerAliases(layer: NamedLayer): string[] {
  const label = layerLabel(layer);
  const names = [layer.name, layer.compressed_name ?? null, ...(layer.aliases ?? [])];
  return [...new Set(names.filter((n): n is string => !!n && n !== label))];
}

/** "also: relu_1, /conv1/Conv" for a title attribute or hover line; "" when the layer has one name. */
export function aliasText(layer: NamedLayer, max = 6): string {
  const others = layerAliases(layer);
  if (others.length === 0) return "";
  const shown = others.slice(0, max).join(", ");
  return `also: ${shown}${others.length > max ? `, … (${(others.length - max).toString()} more)` : ""}`;
}
