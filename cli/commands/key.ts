import type { Command } from 'commander';
import { usageError } from '../../core/errors.ts';
import { addClientOptions, clientFromFlags, collect, nonEmpty, type ClientFlags } from '../client.ts';
import type { CliIO } from '../io.ts';
import { formatTable } from '../table.ts';

interface ApiKey {
  id: string;
  name: string;
  kind: string;
  scopes: string[];
  factories: string[] | null;
  created_at: string;
  revoked_at: string | null;
}


/** `factory key create|list|revoke` (docs/runtime.md, README.md#commands). Needs an admin key. */
export function registerKey(program: Command, io: CliIO): void {
  const key = program.command('key').description('manage API keys (admin scope)')
    .addHelpText('after', '\nExamples:\n  $ factory key create --name ci --kind agent --scope manage\n  $ factory key list\n  $ factory key revoke key_abcdefghijklmnopqrstuvwxyz\n');

  addClientOptions(
    key
      .command('create')
      .description('create an API key; the key is printed once, on stdout')
      .requiredOption('--name <name>', 'who uses it: a person (personal) or a cloud agent (agent)')
      .requiredOption('--kind <kind>', 'personal or agent: whom runs created with it are attributed to')
      .option('--scope <scope>', 'runs, manage, worker or admin; repeat for several (default: runs)', collect, [])
      .option('--factory <name>', 'limit the key (its manage, runs and worker scopes) to this factory; repeat for several', collect, [])
      .option('--json', 'print the key record, with the key, as JSON'),
  )
    .addHelpText(
      'after',
      '\nExamples:\n  $ factory key create --name ci --kind agent --scope runs\n  $ factory key create --name alice --kind personal --scope manage --factory payments > alice.key\n\nThe key is shown once: only its sha256 is stored.\n',
    )
    .action(async (flags: ClientFlags & { name: string; kind: string; scope: string[]; factory: string[]; json?: boolean }) => {
      if (!['personal', 'agent'].includes(flags.kind)) throw usageError(`--kind must be personal or agent, got "${flags.kind}".`);
      for (const s of flags.scope) if (!['runs', 'manage', 'worker', 'admin'].includes(s)) throw usageError(`--scope must be runs, manage, worker or admin, got "${s}".`);
      const client = clientFromFlags(flags, io);
      const created = await client.request<ApiKey & { key: string }>('POST', '/api/v1/keys', {
        name: flags.name,
        kind: flags.kind,
        scopes: flags.scope.length ? flags.scope : ['runs'],
        ...(flags.factory.length ? { factories: flags.factory } : {}),
      });
      if (flags.json) {
        io.stdout(JSON.stringify(created, null, 2) + '\n');
        return;
      }
      io.stdout(created.key + '\n');
      io.stderr(`created ${created.id} (${created.kind} "${created.name}", scopes: ${describeScopes(created)}); store the key now: it is not shown again\n`);
    });

  addClientOptions(key.command('list').description('list API keys (never the keys themselves)').option('--json', 'print JSON'))
    .addHelpText('after', '\nExample:\n  $ factory key list\n')
    .action(async (flags: ClientFlags & { json?: boolean }) => {
      const { keys } = await clientFromFlags(flags, io).request<{ keys: ApiKey[] }>('GET', '/api/v1/keys');
      if (flags.json) {
        io.stdout(JSON.stringify(keys, null, 2) + '\n');
        return;
      }
      const rows = keys.map((k) => [k.id, k.name, k.kind, describeScopes(k), k.created_at, k.revoked_at ? `revoked ${k.revoked_at}` : 'active']);
      io.stdout(formatTable([['ID', 'NAME', 'KIND', 'SCOPES', 'CREATED', 'STATUS'], ...rows]));
    });

  addClientOptions(key.command('revoke').description('revoke an API key at once').argument('<id>', 'the key id (key_…)', nonEmpty('key id')).option('--json', 'print JSON'))
    .addHelpText('after', '\nExample:\n  $ factory key revoke key_abcdefghijklmnopqrstuvwxyz\n')
    .action(async (id: string, flags: ClientFlags & { json?: boolean }) => {
      const revoked = await clientFromFlags(flags, io).request<ApiKey>('POST', `/api/v1/keys/${encodeURIComponent(id)}/revoke`);
      io.stdout(flags.json ? JSON.stringify(revoked, null, 2) + '\n' : `revoked ${revoked.id} ("${revoked.name}")\n`);
    });
}

function describeScopes(k: ApiKey): string {
  return k.scopes.map((s) => (s === 'manage' && k.factories ? `manage(${k.factories.join(',')})` : s)).join(',');
}
