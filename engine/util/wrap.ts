/** Word wrapping for text shown to a person (help, the review walk). Pure. */

/**
 * Break `text` into lines of at most `width` characters, at spaces only: a word is never cut, so
 * a word longer than the width (a URL, a path) stands alone on its line. Line breaks in the text
 * are kept; runs of spaces inside a line collapse where the line breaks.
 */
export function wrapWords(text: string, width: number): string[] {
  const limit = Math.max(1, width);
  const out: string[] = [];
  for (const paragraph of text.split('\n')) {
    const words = paragraph.split(' ').filter((word, index) => word !== '' || index === 0);
    let line = '';
    for (const word of words) {
      if (line === '') line = word;
      else if (line.length + 1 + word.length <= limit) line += ` ${word}`;
      else {
        out.push(line);
        line = word;
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
