/** Word wrapping for text shown to a person (help, the review walk). Pure. */

/**
 * Break `text` into lines of at most `width` characters, at spaces only: a word is never cut, so
 * a word longer than the width (a URL, a path) stands alone on its line. Line breaks and the
 * spacing inside a line are kept; only the spaces where a line breaks are dropped.
 */
export function wrapWords(text: string, width: number): string[] {
  const limit = Math.max(1, width);
  const out: string[] = [];
  for (const paragraph of text.split('\n')) {
    // Each piece is a word with the spaces before it, so runs of spaces survive.
    const pieces = paragraph.match(/ *[^ ]+/g) ?? [''];
    let line = '';
    for (const piece of pieces) {
      if (line === '') line = piece;
      else if (line.length + piece.length <= limit) line += piece;
      else {
        out.push(line);
        line = piece.trimStart();
      }
    }
    out.push(line);
  }
  return out;
}

/** `wrapWords`, with every line after the first indented by `indent` spaces (a hanging indent). */
export function wrapHanging(text: string, width: number, indent: number): string {
  return wrapWords(text, width - indent)
    .map((line, index) => (index === 0 || line === '' ? line : `${' '.repeat(indent)}${line}`))
    .join('\n');
}
