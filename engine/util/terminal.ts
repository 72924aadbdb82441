/**
 * Text from outside the engine (proposal files, source records, model answers, store entries) on
 * its way to a terminal. A proposal must not be able to move the cursor, retitle the window, clear
 * the screen or reorder and hide text from the person reading it, so every character that can do
 * so is shown as a visible escape instead. Line feed and tab are layout, not control, and stay.
 */

/**
 * C0 controls but tab and line feed (CR, backspace, ESC, BEL …), DEL, C1 controls (U+0080–U+009F:
 * terminals read U+009B as CSI and U+009D as OSC), the bidi controls of "Trojan Source" (U+061C,
 * U+200E/F, U+202A–U+202E, U+2066–U+2069) and the line/paragraph separators U+2028/9.
 */
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** The same characters but line feed and tab: they can only occur inside strings of JSON text. */
const UNSAFE_IN_JSON = /[\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

function hex(char: string, width: 2 | 4): string {
  return char.charCodeAt(0).toString(16).padStart(width, '0');
}

/** `text` with every terminal control shown as `\xHH` (up to U+00FF) or `\uHHHH`; everything else unchanged. */
export function escapeTerminal(text: string): string {
  return text.replace(UNSAFE, (char) => (char.charCodeAt(0) <= 0xff ? `\\x${hex(char, 2)}` : `\\u${hex(char, 4)}`));
}

/**
 * JSON text made safe for a terminal without changing what it means: the characters JSON.stringify
 * leaves raw (DEL, C1, bidi controls, U+2028/9) become `\uHHHH` escapes, so the text parses to
 * exactly the same value. C0 controls are already escaped by JSON.stringify.
 */
export function escapeJsonText(json: string): string {
  return json.replace(UNSAFE_IN_JSON, (char) => `\\u${hex(char, 4)}`);
}
