/**
 * Readers that turn one line of agent stdout into transcript events (docs/runs.md, `agent.format`).
 * Pure: a line in, events out. `null` means "not this format": the caller keeps the line as a
 * plain `output` event, so nothing the agent prints is lost.
 *
 * claude-stream-json: Claude Code `--output-format stream-json` (NDJSON; documented at
 * https://docs.claude.com/en/docs/claude-code/headless): `system` (subtype `init`), `assistant`
 * and `user` (an Anthropic message whose `content` is a list of text / thinking / tool_use /
 * tool_result blocks) and a final `result`.
 * codex-json: OpenAI Codex CLI `codex exec --json` (JSONL; https://developers.openai.com/codex):
 * `thread.started`, `turn.started`, `item.started|updated|completed` with item types
 * agent_message, reasoning, command_execution, file_change, mcp_tool_call, web_search,
 * todo_list and error, `turn.completed`, `turn.failed` and `error`.
 */

import type { AgentFormat } from '../../core/snapshot.ts';
import { truncateUtf8, type TranscriptEventInput } from './transcript.ts';

export type LineReader = (line: string) => TranscriptEventInput[] | null;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

function parseObject(line: string): Obj | null {
  const t = line.trim();
  if (!t.startsWith('{')) return null;
  try {
    const v: unknown = JSON.parse(t);
    return isObj(v) && typeof v.type === 'string' ? v : null;
  } catch {
    return null;
  }
}

/** Builds a `message` event, dropping undefined fields and capping long text. */
function message(format: AgentFormat, fields: Obj, maxText: number): TranscriptEventInput {
  const data: Obj = { format };
  for (const [k, v] of Object.entries(fields)) {
    if (v === undefined) continue;
    if (typeof v === 'string' && k !== 'kind') {
      const cut = truncateUtf8(v, maxText);
      data[k] = cut.text;
      if (cut.truncated) data.truncated = true;
    } else data[k] = v;
  }
  return { type: 'message', data };
}

/** A compact one-line rendering of a tool input or other structured value. */
function compact(v: unknown): string | undefined {
  if (v === undefined) return undefined;
  return typeof v === 'string' ? v : JSON.stringify(v);
}

function toolResultText(content: unknown): string | undefined {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((b) => (isObj(b) && typeof b.text === 'string' ? b.text : ''))
      .filter(Boolean)
      .join('\n');
  }
  return undefined;
}

/** Claude Code stream-json. */
export function claudeStreamReader(maxText: number): LineReader {
  const f: AgentFormat = 'claude-stream-json';
  return (line) => {
    const ev = parseObject(line);
    if (!ev) return null;
    const m = (fields: Obj) => message(f, fields, maxText);
    switch (ev.type) {
      case 'system':
        return [m({ kind: 'system', subtype: str(ev.subtype), model: str(ev.model), session_id: str(ev.session_id) })];
      case 'assistant':
      case 'user': {
        const msg = isObj(ev.message) ? ev.message : {};
        const role = str(msg.role) ?? ev.type;
        const content = msg.content;
        if (typeof content === 'string') return [m({ kind: 'text', role, text: content })];
        if (!Array.isArray(content)) return [];
        const out: TranscriptEventInput[] = [];
        for (const b of content) {
          if (!isObj(b)) continue;
          if (b.type === 'text') out.push(m({ kind: 'text', role, text: str(b.text) ?? '' }));
          else if (b.type === 'thinking') out.push(m({ kind: 'thinking', role, text: str(b.thinking) ?? '' }));
          else if (b.type === 'tool_use') out.push(m({ kind: 'tool_use', role, tool: str(b.name), id: str(b.id), input: compact(b.input) }));
          else if (b.type === 'tool_result') {
            out.push(m({ kind: 'tool_result', role, id: str(b.tool_use_id), is_error: b.is_error === true, text: toolResultText(b.content) }));
          }
        }
        return out;
      }
      case 'result':
        return [
          m({
            kind: 'result',
            subtype: str(ev.subtype),
            is_error: ev.is_error === true,
            text: str(ev.result),
            num_turns: typeof ev.num_turns === 'number' ? ev.num_turns : undefined,
            duration_ms: typeof ev.duration_ms === 'number' ? ev.duration_ms : undefined,
            total_cost_usd: typeof ev.total_cost_usd === 'number' ? ev.total_cost_usd : undefined,
          }),
        ];
      default:
        // stream_event (partial deltas) and future types: keep that they happened, not their bulk.
        return [m({ kind: 'event', event_type: ev.type })];
    }
  };
}

/** OpenAI Codex CLI `exec --json`. */
export function codexJsonReader(maxText: number): LineReader {
  const f: AgentFormat = 'codex-json';
  return (line) => {
    const ev = parseObject(line);
    if (!ev) return null;
    const m = (fields: Obj) => message(f, fields, maxText);
    switch (ev.type) {
      case 'thread.started':
        return [m({ kind: 'system', subtype: 'thread.started', thread_id: str(ev.thread_id) })];
      case 'turn.started':
        return [];
      case 'turn.completed':
        return [m({ kind: 'result', is_error: false, usage: isObj(ev.usage) ? ev.usage : undefined })];
      case 'turn.failed': {
        const err = isObj(ev.error) ? ev.error : {};
        return [m({ kind: 'error', text: str(err.message) ?? 'turn failed' })];
      }
      case 'error':
        return [m({ kind: 'error', text: str(ev.message) ?? 'error' })];
      case 'item.started':
      case 'item.updated':
        // The completed item carries the final content; in-flight updates would only repeat it.
        return [];
      case 'item.completed': {
        const item = isObj(ev.item) ? ev.item : {};
        const type = str(item.type) ?? str(item.item_type);
        switch (type) {
          case 'agent_message':
            return [m({ kind: 'text', role: 'assistant', text: str(item.text) ?? '' })];
          case 'reasoning':
            return [m({ kind: 'thinking', role: 'assistant', text: str(item.text) ?? '' })];
          case 'command_execution':
            return [
              m({
                kind: 'command',
                command: str(item.command),
                exit_code: typeof item.exit_code === 'number' ? item.exit_code : undefined,
                status: str(item.status),
                text: str(item.aggregated_output),
              }),
            ];
          case 'file_change':
            return [m({ kind: 'file_change', status: str(item.status), changes: Array.isArray(item.changes) ? item.changes : undefined })];
          case 'mcp_tool_call':
            return [m({ kind: 'tool_use', tool: [str(item.server), str(item.tool)].filter(Boolean).join('.'), status: str(item.status) })];
          case 'web_search':
            return [m({ kind: 'web_search', text: str(item.query) })];
          case 'todo_list':
            return [m({ kind: 'todo_list', items: Array.isArray(item.items) ? item.items : undefined })];
          case 'error':
            return [m({ kind: 'error', text: str(item.message) ?? 'error' })];
          default:
            return [m({ kind: 'event', event_type: `item.completed:${type ?? 'unknown'}` })];
        }
      }
      default:
        return [m({ kind: 'event', event_type: ev.type })];
    }
  };
}

/** The reader for `format`; `text` has none (every line is `output`). */
export function readerFor(format: AgentFormat, maxText: number): LineReader | null {
  if (format === 'claude-stream-json') return claudeStreamReader(maxText);
  if (format === 'codex-json') return codexJsonReader(maxText);
  return null;
}
