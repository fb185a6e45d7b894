import { isAbsolute, resolve } from 'node:path';
import { canonicalCopy, canonicalJson, sha256Digest, sha256Hex } from '../../core/canonical-json.ts';
import {
  SCHEME_ALIASES,
  SNAPSHOT_FORMAT_VERSION,
  type AgentDef,
  type AutomationDef,
  type EnvironmentDef,
  type InactiveAutomationDef,
  type InactiveItem,
  type RunnerDef,
  type SkillDef,
  type Snapshot,
  type WebhookDef,
} from '../../core/snapshot.ts';
import { promptOf } from './front-matter.ts';
import type { ParsedFile } from './parse-file.ts';
import { agentDef, execution, factoryDef, inactiveOf, runnerDef, runsUsed, skillDef, triggersOf } from './warp-snapshot.ts';
import { repoFacts, resolveEnvironment } from './warp-rules.ts';
import { agentEnvironment, type AgentRun } from './warp-exec.ts';
import { isRunnableHarness } from '../../core/harness.ts';

type Obj = Record<string, any>;
const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const byName = <T extends { name: string }>(a: T, b: T) => cmp(a.name, b.name);

/**
 * Builds the snapshot from files that compiled without errors (so every value matches its
 * schema). Defaults are filled in (docs/definitions.md), resources sorted by name, and `digest` is
 * the sha256 of the canonical JSON without it (docs/plan-apply.md).
 */
export function buildSnapshot(files: ParsedFile[], sources: { path: string; text: string }[], root?: string): Snapshot {
  const factoryFile = files.find((f) => f.kind === 'factory')!;
  const fv = factoryFile.value as Obj;
  const webhooks: WebhookDef[] = [];
  const automations: AutomationDef[] = [];
  const environments: EnvironmentDef[] = [];
  const agents: AgentDef[] = [];
  const skills: SkillDef[] = [];
  const runners: RunnerDef[] = [];
  const inactiveAutomations: InactiveAutomationDef[] = [];
  const inactive: InactiveItem[] = [];
  const facts = repoFacts(files);
  // The Warp agents an automation runs with their own harness get an environment each
  // (docs/definitions.md#warp-agents-run-here), and so does an automation that overrides its agent's harness or runner.
  const agentRuns: AgentRun[] = [];
  const runIds = new Set<string | undefined>();
  // Each automation's environment, resolved once here and read again below.
  const resolved = new Map<ParsedFile, ReturnType<typeof resolveEnvironment>>();
  for (const f of files) {
    if (f.kind !== 'automation') continue;
    const r = resolveEnvironment(f.value as Obj, facts, f.name);
    resolved.set(f, r);
    if (r.honoured === 'harness' && r.run && !runIds.has(r.run.id)) {
      runIds.add(r.run.id);
      agentRuns.push(r.run);
    }
  }
  const used = runsUsed(agentRuns);
  for (const f of files) {
    const v = f.value as Obj;
    const source = { file: f.path };
    if (f.kind === 'webhook') {
      webhooks.push({
        name: f.name,
        authMode: v.authMode ?? 'token',
        enabled: v.enabled,
        signatureScheme: SCHEME_ALIASES[v.signatureScheme] ?? v.signatureScheme,
        secretName: v.secretName,
        deliveryIdHeader: v.deliveryIdHeader,
        description: v.description,
        uid: v.uid,
        source,
      });
    } else if (f.kind === 'automation') {
      const { environment, honoured } = resolved.get(f)!;
      const triggers = triggersOf(v.triggers as Obj[]);
      // One object with every member; the undefined ones (environment of an inactive automation,
      // notify when absent) are dropped with the others when the snapshot is copied below.
      const def: AutomationDef = {
        name: f.name,
        title: v.title,
        enabled: v.enabled ?? true,
        agent: v.agent ?? facts.foreman,
        execution: execution(v),
        notify: v.notify ? { url: v.notify.url, secretName: v.notify.secretName } : undefined,
        triggers: triggers.triggers,
        schedules: triggers.schedules,
        inactive_triggers: triggers.inactive_triggers,
        prompt: promptOf(f.frontMatter!.body),
        source,
        environment: environment!,
      };
      if (environment !== undefined) automations.push(def);
      else inactiveAutomations.push(def);
      inactive.push(...inactiveOf.automation(f, v, { environment, honoured }));
    } else if (f.kind === 'agent') {
      agents.push(agentDef(f, v));
      inactive.push(...inactiveOf.agent(f, v, facts, used));
    } else if (f.kind === 'skill') {
      skills.push(skillDef(f, v));
      inactive.push(...inactiveOf.file(f, used));
    } else if (f.kind === 'runner') {
      runners.push(runnerDef(f, v));
      inactive.push(...inactiveOf.file(f, used));
    } else if (f.kind === 'benchmark' || f.kind === 'benchmark_task' || f.kind === 'scorer') {
      inactive.push(...inactiveOf.file(f));
    } else if (f.kind === 'environment') {
      environments.push({
        name: f.name,
        description: v.description,
        repos: ((v.repos ?? []) as Obj[]).map((r) => ({ url: resolveRepoUrl(r.url, root), ref: r.ref, path: r.path })),
        setup: v.setup ?? [],
        agent: { command: v.agent.command, format: v.agent.format ?? 'text', timeout: v.agent.timeout ?? '30m' },
        env: v.env ?? {},
        // Only when the file says so: absent means `none`, and a repo without it keeps its digest.
        ...(v.network !== undefined ? { network: v.network } : {}),
        source,
      });
    }
  }
  const factory = factoryDef(factoryFile, fv);
  const automationFiles = new Map(files.filter((f) => f.kind === 'automation').map((f) => [f.name, f.path]));
  for (const run of agentRuns) {
    if (!run.id || !run.agent || !run.harness || !isRunnableHarness(run.harness.type)) continue;
    environments.push(agentEnvironment({ ...run, id: run.id, agent: run.agent, harness: { ...run.harness, type: run.harness.type } }, { agents, skills, runners, factory, automationFiles }));
  }
  const hashes: Record<string, string> = {};
  for (const s of sources) hashes[s.path] = sha256Hex(s.text);
  inactive.push(...inactiveOf.factory(factoryFile, fv, facts, used));
  // Stable: by file, and within a file in the order the keys were looked at.
  inactive.sort((a, b) => cmp(a.file, b.file));
  const nonEmpty = <T>(a: T[]) => (a.length ? a : undefined);
  const body = {
    format_version: SNAPSHOT_FORMAT_VERSION,
    factory,
    webhooks: webhooks.sort(byName),
    automations: automations.sort(byName),
    environments: environments.sort(byName),
    agents: nonEmpty(agents.sort(byName)),
    skills: nonEmpty(skills.sort((a, b) => cmp(a.agent ?? '', b.agent ?? '') || cmp(a.name, b.name))),
    runners: nonEmpty(runners.sort(byName)),
    inactive_automations: nonEmpty(inactiveAutomations.sort(byName)),
    inactive: nonEmpty(inactive),
    sources: hashes,
  };
  // What JSON makes of it (undefined members dropped), so the object equals its bytes; those
  // bytes are also the canonical JSON of the clean object, which the digest is of.
  const { copy: clean, json } = canonicalCopy(body as Omit<Snapshot, 'digest'>);
  return { ...clean, digest: sha256Digest(json) };
}

/**
 * A repo URL starting with ./ or ../ is relative to the factory repo and becomes an absolute
 * path here (docs/definitions.md): the runtime clones from its own working directory, not the
 * repo's. The snapshot then depends on where the repo is checked out. Without a root it stays.
 */
export function resolveRepoUrl(url: string, root?: string): string {
  if (!root || isAbsolute(url)) return url;
  if (url === '.' || url === '..' || url.startsWith('./') || url.startsWith('../')) return resolve(root, url);
  return url;
}

/** Canonical JSON of the snapshot plus a final newline: what `factory build` writes. */
export function writeSnapshot(snapshot: Snapshot): string {
  return canonicalJson(snapshot) + '\n';
}
