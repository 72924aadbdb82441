/** What `pipeline viz` renders; apart from the renderers so the CLI can check `--format` without loading them. */
export const VIZ_FORMATS = ['html', 'svg', 'dot', 'mermaid', 'json'] as const;
export type VizFormat = (typeof VIZ_FORMATS)[number];

export function isVizFormat(value: string): value is VizFormat {
  return (VIZ_FORMATS as readonly string[]).includes(value);
}
