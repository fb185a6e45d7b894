import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';

/**
 * The shell blocks of the docs, as a reader pastes them: `shellLines` reads a block's commands and
 * `terminal` is one interactive bash that runs them one by one, so an alias or a variable set by
 * one line holds for the next. Used by the README tour test and the deployment test of
 * docs/deploy.md.
 */

/** The commands of the one ```sh block of `section`: continuation lines joined, comments and blank lines left out. */
export function shellLines(section: string): string[] {
  const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]);
  assert.equal(blocks.length, 1, 'the section has one shell block');
  return blocks[0]
    .replace(/\\\n\s*/g, '')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
}

/** The text of the markdown section that starts with `heading`, up to the next `## ` heading. */
export function sectionOf(markdown: string, heading: string): string {
  const start = markdown.indexOf(heading);
  assert.notEqual(start, -1, `a section "${heading}"`);
  const end = markdown.indexOf('\n## ', start + 1);
  return markdown.slice(start, end === -1 ? undefined : end);
}

export interface Step {
  code: number;
  out: string;
  err: string;
}

export interface Terminal {
  /** Writes `command` as if pasted, and waits for it to end: its exit status and output. */
  run(command: string): Promise<Step>;
  close(): void;
  readonly child: ChildProcessWithoutNullStreams;
}

/** One interactive bash in `cwd`: each command is written to it as if pasted, and its output read back. */
export function terminal(cwd: string, env: Record<string, string>): Terminal {
  const bash = spawn('bash', ['--norc', '--noprofile'], { cwd, env });
  let out = '';
  let err = '';
  let wake = () => {};
  bash.stdout.on('data', (d) => ((out += d), wake()));
  bash.stderr.on('data', (d) => ((err += d), wake()));
  bash.stdin.write('shopt -s expand_aliases\n');
  const MARK = /\n?__done__ (\d+)\n$/;
  return {
    child: bash,
    async run(command) {
      out = '';
      err = '';
      bash.stdin.write(`${command}\nprintf '\\n__done__ %s\\n' $?; printf '__done__\\n' >&2\n`);
      while (!(MARK.test(out) && err.endsWith('__done__\n'))) {
        if (bash.exitCode !== null) assert.fail(`bash exited during: ${command}`);
        await new Promise<void>((resume) => (wake = resume));
      }
      return { code: Number(MARK.exec(out)![1]), out: out.replace(MARK, ''), err: err.slice(0, -'__done__\n'.length) };
    },
    close: () => bash.stdin.end(),
  };
}
