/**
 * Text from outside the engine (proposal files, source records, model answers, store entries) on
 * its way to a terminal. A proposal must not be able to move the cursor, retitle the window, clear
 * the screen or reorder and hide text from the person reading it, so every character that can do
 * so is shown as a visible escape instead. Line feed and tab are layout, not control, and stay.
 */

/**
 * C0 controls but tab and line feed (CR, backspace, ESC, BEL …), DEL, C1 controls (U+0080–U+009F:
 * terminals read U+009B as CSI and U+009D as OSC), the bidi controls of "Trojan Source" (U+061C,
 * U+200E/F, U+202A–U+202E, U+2066–U+2069), the line/paragraph separators U+2028/9, and the
 * characters a terminal draws as nothing, which can carry text a reader never sees: the soft
 * hyphen U+00AD, U+034F, U+180E, the zero-width space U+200B, U+2060–U+2064, U+206A–U+206F and
 * U+FEFF, the Hangul fillers (U+115F, U+1160, U+3164, U+FFA0), U+17B4/5, the interlinear
 * annotation marks U+FFF9–U+FFFB, the tag characters U+E0000–U+E007F (each an invisible copy of
 * an ASCII letter: a sentence spelled in them is hidden on screen and read whole by a model), and
 * the variation selectors (256 of them, one a byte: a review hid a sentence in them too) — but
 * for VS15/VS16 (U+FE0E/F) right after a character, which ask for its text or emoji form (❤️):
 * only one that follows another selector is shown. The zero-width joiner and non-joiner
 * (U+200C/D) stay: emoji sequences and Persian or Indic writing need them, and they spell nothing.
 */
const HIDDEN =
  '\\u00ad\\u034f\\u115f\\u1160\\u17b4\\u17b5\\u180b-\\u180f\\u200b\\u2060-\\u2064\\u206a-\\u206f\\u3164\\ufe00-\\ufe0d\\ufeff\\uffa0\\ufff9-\\ufffb\\u{e0000}-\\u{e007f}\\u{e0100}-\\u{e01ef}';
const BIDI = '\\u061c\\u200e\\u200f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069';
/** VS15/VS16 in a run of selectors (after another one): not a presentation choice, a payload. */
const SELECTOR_RUN = '|(?<=[\\ufe00-\\ufe0f\\u{e0100}-\\u{e01ef}])[\\ufe0e\\ufe0f]';
const UNSAFE = new RegExp(`[\\u0000-\\u0008\\u000b-\\u001f\\u007f-\\u009f${BIDI}${HIDDEN}]${SELECTOR_RUN}`, 'gu');

/** The same characters but line feed and tab: they can only occur inside strings of JSON text. */
const UNSAFE_IN_JSON = new RegExp(`[\\u007f-\\u009f${BIDI}${HIDDEN}]${SELECTOR_RUN}`, 'gu');

function hex(code: number, width: 2 | 4): string {
  return code.toString(16).padStart(width, '0');
}

/** `text` with every terminal control shown as `\xHH` (up to U+00FF), `\uHHHH` or `\u{HHHHH}`; everything else unchanged. */
export function escapeTerminal(text: string): string {
  return text.replace(UNSAFE, (char) => {
    const code = char.codePointAt(0)!;
    return code <= 0xff ? `\\x${hex(code, 2)}` : code <= 0xffff ? `\\u${hex(code, 4)}` : `\\u{${hex(code, 4)}}`;
  });
}

/**
 * JSON text made safe for a terminal without changing what it means: the characters JSON.stringify
 * leaves raw (DEL, C1, bidi controls, U+2028/9, the invisible ones above) become `\uHHHH` escapes
 * (a surrogate pair for a tag character), so the text parses to exactly the same value. C0
 * controls are already escaped by JSON.stringify.
 */
export function escapeJsonText(json: string): string {
  return json.replace(UNSAFE_IN_JSON, (char) => [...Array(char.length).keys()].map((index) => `\\u${hex(char.charCodeAt(index), 4)}`).join(''));
}
