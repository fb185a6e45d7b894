import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { CliError } from '../../core/errors.ts';
import type { CliIO } from '../io.ts';

interface MigrateFlags {
  database?: string;
  dataDir?: string;
}

/**
 * `factory migrate` (docs/deploy.md#migrations): brings a database's schema up to date and says
 * what it applied. `serve` migrates at start too; this lets a deployment migrate once, before
 * rolling out replicas, with credentials the replicas need not have.
 */
export function registerMigrate(program: Command, io: CliIO): void {
  program
    .command('migrate')
    .description('bring the database schema up to date (serve also does this at start)')
    .option('--database <url>', 'a PostgreSQL URL (env FACTORY_DATABASE_URL); default the SQLite file in the data dir')
    .option('--data-dir <dir>', 'the data dir whose SQLite file to migrate (env FACTORY_DATA_DIR, default ./.factory)')
    .addHelpText('after', '\nExamples:\n  $ factory migrate --database postgres://factory@db.internal:5432/factory\n  $ factory migrate --data-dir /var/lib/factory\n')
    .action(async (flags: MigrateFlags) => {
      const [{ parseDatabaseUrl }, { migrateDatabase, migrateSqliteFile }, { readMigrations }, path] = await Promise.all([
        import('../../runtime/config.ts'),
        import('../../runtime/store/index.ts'),
        import('../../runtime/store/db.ts'),
        import('node:path'),
      ]);
      const raw = flags.database ?? io.env.FACTORY_DATABASE_URL;
      let applied: number[];
      let where: string;
      if (raw) {
        const db = parseDatabaseUrl({ value: raw, source: flags.database ? '--database' : 'FACTORY_DATABASE_URL' });
        where = db.display;
        applied = migrateDatabase(db.url);
      } else {
        const dataDir = path.resolve(io.cwd, flags.dataDir ?? io.env.FACTORY_DATA_DIR ?? './.factory');
        const file = path.join(dataDir, 'factory.db');
        if (!existsSync(file)) {
          throw new CliError(`there is no database at ${file}; \`factory serve\` creates it at its first start (or pass --database for PostgreSQL).`);
        }
        where = file;
        // Not beside a runtime on the same file: it migrated it when it started.
        const { lockDataDir } = await import('../../runtime/data-dir-lock.ts');
        const lock = lockDataDir(dataDir, 'it migrated the database when it started, so there is nothing to do while it runs');
        try {
          applied = migrateSqliteFile(file);
        } finally {
          lock.release();
        }
      }
      const all = readMigrations();
      const latest = all.at(-1)?.version ?? 0;
      if (!applied.length) {
        io.stdout(`${where} is up to date (schema version ${latest}).\n`);
        return;
      }
      const names = applied.map((v) => {
        const m = all.find((x) => x.version === v);
        return m ? `${String(v).padStart(3, '0')}-${m.name}` : String(v);
      });
      io.stdout(`applied ${applied.length} migration${applied.length === 1 ? '' : 's'} to ${where}: ${names.join(', ')}; schema version ${latest}.\n`);
    });
}
