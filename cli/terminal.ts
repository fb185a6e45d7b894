/**
 * Text from the runtime made safe to print (README.md#commands): an agent's output, a command's
 * output, a run's title or status come from whoever wrote the agent, the setup or the payload,
 * and a terminal obeys control sequences in what it prints (rewrite the title, move the cursor
 * over earlier lines, set the clipboard with OSC 52). Colour (SGR: `ESC [ ... m`) is dropped; every
 * other control character, C1 ones included, is shown as `\xNN`; tab and newline stay, and CRLF
 * becomes a newline. `--json` output needs none of this: JSON escapes control characters itself.
 * The dashboard applies the same rule in its own module (runtime/dashboard/transcript.js); a test
 * holds the two to the same answers.
 */

// eslint-disable-next-line no-control-regex
const SGR = /\x1b\[[0-9;:]*m/g;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/g;

export function visible(text: string): string {
  return text
    .replace(SGR, '')
    .replace(/\r\n/g, '\n')
    .replace(CONTROL, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}
