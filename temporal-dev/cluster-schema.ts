import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { psql, type PostgresInstance } from './postgres.js';

const run = promisify(execFile);

/** The cluster's two databases, and the schema each gets from the server's own embedded, versioned schema files. */
export const CLUSTER_DATABASES = [
  { name: 'temporal', schema: 'postgresql/v12/temporal' },
  { name: 'temporal_visibility', schema: 'postgresql/v12/visibility' },
] as const;

export interface SchemaTarget {
  sqlTool: string;
  postgres: PostgresInstance;
  user: string;
  password: string;
}

async function sqlTool(target: SchemaTarget, database: string, args: string[]): Promise<void> {
  const { postgres } = target;
  const connection = [
    '--endpoint',
    postgres.ip,
    '--port',
    String(postgres.port),
    '--user',
    target.user,
    '--plugin',
    'postgres12',
    '--database',
    database,
  ];
  try {
    // The password through the environment (SQL_PASSWORD), not the command line that `ps` shows everyone.
    await run(target.sqlTool, [...connection, ...args], { env: { ...process.env, SQL_PASSWORD: target.password }, maxBuffer: 16 << 20 });
  } catch (error) {
    const e = error as { stderr?: string; stdout?: string; message: string };
    throw new Error(
      `temporal-sql-tool ${args[0]} on ${database} failed: ${(e.stderr || e.stdout || e.message).trim().split('\n').slice(-5).join('\n')}`,
    );
  }
}

/**
 * Creates the databases on first use (`create-database`, then `setup-schema -v 0.0`: the versioning tables) and
 * brings both to the schema of the server binary at hand (`update-schema` from the schema embedded in
 * temporal-sql-tool: a no-op when current, a migration after a server upgrade). Returns the databases it created.
 */
export async function setupSchema(target: SchemaTarget): Promise<string[]> {
  const created: string[] = [];
  for (const { name, schema } of CLUSTER_DATABASES) {
    const exists = (await psql(target.postgres, `SELECT 1 FROM pg_database WHERE datname = '${name}'`)) === '1';
    if (!exists) {
      await sqlTool(target, name, ['create-database']);
      await sqlTool(target, name, ['setup-schema', '-v', '0.0']);
      created.push(name);
    }
    await sqlTool(target, name, ['update-schema', '--schema-name', schema]);
  }
  return created;
}
