import { Command, InvalidArgumentError } from 'commander';
import { SvcError } from '@svc/protocol';
import { openEmbeddedStorage, openOperatorStorage, type ApiKeyRecord, type OperatorStorage, type Storage, type Tenant } from '@svc/storage';
import { TenantService } from '@svc/tenancy';
import { loadConfig, type ServerConfig } from '../config';
import { serve } from '../serve';
import { addClusterCommand } from './cluster-command';
import { addExportCommand } from './export-command';
import { addMigrateMetadataCommand } from './migrate-metadata-command';
import { addSimulateCommand } from './simulate-command';

/**
 * Runs an operator command: against the cluster's PostgreSQL when `SVC_POSTGRES_URL` is set
 * (while nodes run), else against the data folder (the server must not hold it open).
 */
async function withTenants<T>(job: (tenants: TenantService, storage: OperatorStorage) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const storage: OperatorStorage = config.postgresUrl ? await openOperatorStorage(config.postgresUrl) : await openEmbeddedForOperator(config);
  try {
    const tenants = new TenantService(storage.meta);
    // Running nodes hear at once what a command changed (a revoked key), not after their cache expires.
    if (storage.changes) tenants.followChanges(storage.changes);
    return await job(tenants, storage);
  } finally {
    await storage.close();
  }
}

async function openEmbeddedForOperator(config: ServerConfig): Promise<OperatorStorage> {
  const storage: Storage = await openEmbeddedStorage(config.dataDir, { memoryLimit: config.databaseMemoryLimit, threads: config.databaseThreads });
  // Opening may set unreadable events aside (see undecodable-events); each is said once, here or by the server.
  storage.onUndecodableEvents((events) => {
    for (const { tenantSeq, eventId } of events) {
      process.stderr.write(`svc: stored event ${eventId} of tenant ${tenantSeq} set aside: its JSON text cannot be decoded (kept in undecodable_events)\n`);
    }
  });
  return storage;
}

const out = (line: string) => process.stdout.write(`${line}\n`);

function integerOption(value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1) throw new InvalidArgumentError('must be a whole number above 0');
  return parsed;
}

function countryList(value: string): string[] {
  const codes = value.split(',').map((c) => c.trim().toUpperCase()).filter(Boolean);
  if (codes.some((c) => !/^[A-Z]{2}$/.test(c))) throw new InvalidArgumentError('must be two-letter country codes separated by commas');
  return codes;
}

function describeTenant(t: Tenant): string {
  return `${t.id}\t${t.name}\tretention ${t.retentionMonths} months\tmarkets ${t.settings.availableMarkets.join(',') || '-'}`;
}

function describeKey(k: ApiKeyRecord): string {
  return `${k.id}\t${k.key}\t${k.name}\t${k.revokedAt ? `revoked ${new Date(k.revokedAt).toISOString()}` : 'active'}`;
}

export function buildProgram(): Command {
  const program = new Command('svc')
    .description('Svc: engagement and commerce events for live-stream broadcasts')
    .showHelpAfterError();

  program
    .command('serve')
    .description('run the service (REST, WebSocket, dashboard) on $HOST:$PORT with data in $SVC_DATA_DIR')
    .action(async () => {
      await serve(loadConfig());
    });

  const tenants = program.command('tenants').description('manage tenants (customer contracts)');
  tenants
    .command('create <id>')
    .description('create a tenant with an API key and an admin token (printed once)')
    .option('--name <name>', 'display name')
    .option('--retention-months <n>', 'months raw events are kept (default 12)', integerOption)
    .option('--markets <codes>', 'available markets, e.g. DE,FR,GB', countryList)
    .option('--fallback-country <code>', 'country used when none can be detected')
    .action(async (id: string, options: { name?: string; retentionMonths?: number; markets?: string[]; fallbackCountry?: string }) => {
      const created = await withTenants((service) =>
        service.createTenant({
          id,
          name: options.name,
          retentionMonths: options.retentionMonths,
          settings: {
            ...(options.markets ? { availableMarkets: options.markets } : {}),
            ...(options.fallbackCountry ? { fallbackCountry: countryList(options.fallbackCountry)[0] ?? null } : {}),
          },
        }),
      );
      out(`Created tenant "${created.tenant.id}".`);
      out(`  API key:     ${created.apiKey.key}`);
      out(`  Admin token: ${created.adminToken}   (shown once; keep it safe)`);
    });
  tenants
    .command('list')
    .description('list tenants')
    .action(async () => {
      for (const tenant of await withTenants((service) => service.listTenants())) out(describeTenant(tenant));
    });
  tenants
    .command('set <id>')
    .description("change a tenant's contract settings")
    .option('--retention-months <n>', 'months raw events are kept', integerOption)
    .option('--markets <codes>', 'available markets, e.g. DE,FR,GB', countryList)
    .action(async (id: string, options: { retentionMonths?: number; markets?: string[] }) => {
      const tenant = await withTenants(async (service) =>
        service.updateSettings(await service.getTenant(id), {
          retentionMonths: options.retentionMonths,
          ...(options.markets ? { availableMarkets: options.markets } : {}),
        }),
      );
      out(describeTenant(tenant));
    });

  const keys = program.command('keys').description('manage public API keys');
  keys
    .command('create')
    .description('create an API key for a tenant')
    .requiredOption('--tenant <id>', 'tenant id')
    .option('--name <name>', 'what the key is for', 'cli')
    .action(async (options: { tenant: string; name: string }) => {
      const record = await withTenants(async (service) => service.createApiKey((await service.getTenant(options.tenant)).seq, options.name));
      out(describeKey(record));
    });
  keys
    .command('list')
    .description("list a tenant's API keys")
    .requiredOption('--tenant <id>', 'tenant id')
    .action(async (options: { tenant: string }) => {
      const records = await withTenants(async (service) => service.listApiKeys((await service.getTenant(options.tenant)).seq));
      for (const record of records) out(describeKey(record));
    });
  keys
    .command('revoke <keyId>')
    .description('revoke an API key by its id (ak_…)')
    .action(async (keyId: string) => {
      const record = await withTenants((service) => service.revokeApiKey(null, keyId));
      out(describeKey(record));
    });

  const tokens = program.command('tokens').description('manage secret admin tokens');
  tokens
    .command('create')
    .description('create an admin token for a tenant (printed once)')
    .requiredOption('--tenant <id>', 'tenant id')
    .option('--name <name>', 'who or what uses it', 'cli')
    .action(async (options: { tenant: string; name: string }) => {
      const { record, token } = await withTenants(async (service) =>
        service.createAdminToken((await service.getTenant(options.tenant)).seq, options.name),
      );
      out(`${record.id}\t${token}   (shown once; keep it safe)`);
    });
  tokens
    .command('revoke <tokenId>')
    .description('revoke an admin token by its id (at_…)')
    .action(async (tokenId: string) => {
      const record = await withTenants(async (service, storage) => {
        const revoked = await service.revokeAdminToken(null, tokenId);
        // Its dashboard sessions end with it.
        await storage.sessions.deleteTokenSessions(revoked.tokenHash);
        return revoked;
      });
      out(`${record.id}\t${record.prefix}…\trevoked`);
    });

  addExportCommand(program);
  addSimulateCommand(program);
  addMigrateMetadataCommand(program);
  addClusterCommand(program);
  return program;
}

/** Runs the CLI; catalogue errors print their message and exit with status 2. */
export async function runCli(argv: string[]): Promise<void> {
  try {
    await buildProgram().parseAsync(argv);
  } catch (error) {
    if (error instanceof SvcError) {
      process.stderr.write(`svc: ${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
}
