import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { CliError, exitWith } from '../../core/errors.ts';
import { jsonReason } from '../../core/json-reason.ts';
import { checkFilter, explainFilter, formatPath, type PayloadFilter } from '../../core/filter.ts';
import { fsReason, type CliIO } from '../io.ts';

const HELP = `
The filter file holds one payload filter (see docs/filters.md), as YAML or JSON: the
same object as a trigger's filter.payload. The payload file holds a delivery body as JSON.

Examples:
  $ cat only-opened.yaml
  action: [opened, reopened]
  pull_request:
    base:
      ref: main
  $ factory filter test only-opened.yaml delivery.json
  does not match: action: "labeled" is not one of "opened", "reopened"
  $ factory filter test only-opened.yaml delivery.json --json
  {"matches":false,"path":["action"],"reason":"\\"labeled\\" is not one of \\"opened\\", \\"reopened\\""}

Exit status: 0 when the payload matches; 1 when it does not, when the filter has grammar
problems (each printed as FILTER_FILE: <pointer>: <code>: <message>), or when a file cannot be read.
`;

/** `factory filter test FILTER_FILE PAYLOAD_FILE` (README.md#commands): offline, the runtime's own evaluator. */
export function registerFilter(program: Command, io: CliIO): void {
  const filter = program.command('filter').description('payload filters')
    .addHelpText('after', '\nExamples:\n  $ factory filter test only-opened.yaml pull_request.json\n');
  filter
    .command('test')
    .description('test a payload filter against a JSON payload, offline')
    .argument('<FILTER_FILE>', 'YAML or JSON file holding the filter object')
    .argument('<PAYLOAD_FILE>', 'JSON file holding a delivery body')
    .option('--json', 'print {matches, path?, reason?} (or {problems} for a filter with grammar problems)')
    .addHelpText('after', HELP)
    .action(async (filterFile: string, payloadFile: string, opts: { json?: boolean }) => {
      const filterValue = await parseFilterFile(filterFile, await readText(io, filterFile, 'filter'));
      const problems = checkFilter(filterValue);
      if (problems.length) {
        if (opts.json) io.stdout(JSON.stringify({ problems }) + '\n');
        else for (const p of problems) io.stdout(`${filterFile}: ${p.pointer || '(root)'}: ${p.code}: ${p.message}\n`);
        throw exitWith(1);
      }
      const payload = parsePayload(payloadFile, await readText(io, payloadFile, 'payload'));
      const explanation = explainFilter(filterValue as PayloadFilter, payload);
      if (opts.json) io.stdout(JSON.stringify(explanation) + '\n');
      else io.stdout(explanation.matches ? 'matches\n' : `does not match: ${formatPath(explanation.path)}: ${explanation.reason}\n`);
      if (!explanation.matches) throw exitWith(1);
    });
}

async function readText(io: CliIO, file: string, what: string): Promise<string> {
  let bytes: Buffer;
  try {
    bytes = await readFile(resolve(io.cwd, file));
  } catch (err) {
    throw new CliError(`cannot read the ${what} file ${file}: ${fsReason(err)}`);
  }
  // A payload is read as the ingress reads a body, where a byte order mark is no JSON (400).
  if (what === 'payload' && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) {
    throw new CliError(`the payload file ${file} starts with a byte order mark, which a webhook delivery cannot have (the runtime answers 400 invalid_json); save it without one`);
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new CliError(`the ${what} file ${file} is not valid UTF-8`);
  }
}

/** JSON for `.json` files, else YAML without anchors, aliases, tags or duplicate keys (docs/definitions.md). */
async function parseFilterFile(file: string, text: string): Promise<unknown> {
  if (/\.json$/i.test(file)) {
    try {
      return JSON.parse(text) as unknown;
    } catch (err) {
      throw new CliError(`the filter file ${file} is not valid JSON: ${jsonReason(err)}`);
    }
  }
  // The YAML parser is loaded here, not when the CLI starts.
  const { parseYaml, toPosition } = await import('../compiler/yaml.ts');
  const parsed = parseYaml(text);
  const first = parsed.problems[0];
  if (first) {
    const { line, column } = toPosition(parsed, first.offset);
    const more = parsed.problems.length > 1 ? ` (and ${parsed.problems.length - 1} more YAML problem${parsed.problems.length > 2 ? 's' : ''})` : '';
    throw new CliError(`${file}:${line}:${column}: ${first.message}${more}`);
  }
  return parsed.value;
}

function parsePayload(file: string, text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new CliError(`the payload file ${file} is not valid JSON: ${jsonReason(err)}`);
  }
}
