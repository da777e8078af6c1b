import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { SvcError } from '@svc/protocol';
import { copyMetadata, DATABASE_FILE_NAME, openEmbeddedStorage, PgDatabase, PgMetaStore, PgContentStore, PgDeletionJobStore,
  PgMetadataImporter, PgSessionStore, PgWebhookEndpointStore, type MetadataCopyReport } from '@svc/storage';

/** Exit status when records are left as conflicts (the same as a refused command). */
const EXIT_CONFLICTS = 2;
/** Exit status when the counts of the two sides differ after the copy. */
const EXIT_COUNTS_DIFFER = 1;

interface MigrateOptions {
  from: string;
  to: string;
  overwrite?: boolean;
}

const HEADINGS = ['kind', 'source', 'postgres', 'copied', 'unchanged', 'overwritten', 'conflicts'];

function reportTable(report: MetadataCopyReport): string {
  const rows = report.kinds.map((k) => [k.kind, k.sourceCount, k.destinationCount, k.copied, k.unchanged, k.overwritten, k.conflicts].map(String));
  const widths = HEADINGS.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(HEADINGS), ...rows.map(line)].join('\n');
}

/**
 * `svc migrate-metadata`: copies an embedded installation's metadata (tenants with their seqs,
 * credentials, content, webhook endpoints, deletion jobs, dashboard sessions) into PostgreSQL.
 */
export function addMigrateMetadataCommand(program: Command): void {
  program
    .command('migrate-metadata')
    .description('copy the metadata of an embedded data folder into PostgreSQL (the server on that folder must be stopped); safe to run again')
    .requiredOption('--from <dir>', 'data folder of the embedded installation (its SVC_DATA_DIR)')
    .requiredOption('--to <url>', 'PostgreSQL URL, e.g. postgres://svc:secret@db:5432/svc (migrations are applied)')
    .option('--overwrite', 'replace records PostgreSQL holds with other content instead of reporting them as conflicts')
    .action(async (options: MigrateOptions) => {
      if (!existsSync(join(options.from, DATABASE_FILE_NAME))) {
        throw new SvcError('not_found', `No embedded database in ${options.from} (${DATABASE_FILE_NAME} is missing).`);
      }
      // A running server holds the file: opening fails with database_locked, which says so.
      const source = await openEmbeddedStorage(options.from);
      try {
        const pg = await PgDatabase.open(options.to, { poolSize: 2 });
        try {
          const destination = {
            meta: new PgMetaStore(pg),
            content: new PgContentStore(pg),
            webhookEndpoints: new PgWebhookEndpointStore(pg),
            deletions: new PgDeletionJobStore(pg),
            sessions: new PgSessionStore(pg),
          };
          const report = await copyMetadata(source, destination, new PgMetadataImporter(pg), { overwrite: options.overwrite });
          printReport(report);
        } finally {
          await pg.close();
        }
      } finally {
        await source.close();
      }
    });
}

function printReport(report: MetadataCopyReport): void {
  process.stdout.write(`${reportTable(report)}\n`);
  if (report.conflicts.length) {
    process.stderr.write(`svc: ${report.conflicts.length} record(s) differ in PostgreSQL and were left as they are (--overwrite replaces them):\n`);
    for (const c of report.conflicts) process.stderr.write(`  ${c.kind}\t${c.record}\t${c.reason}\n`);
  }
  if (!report.countsMatch) {
    const differing = report.kinds.filter((k) => k.sourceCount !== k.destinationCount).map((k) => k.kind);
    process.stderr.write(`svc: the counts differ for ${differing.join(', ')}: PostgreSQL does not hold the same records as the data folder.\n`);
  }
  if (report.conflicts.length) process.exitCode = EXIT_CONFLICTS;
  else if (!report.countsMatch) process.exitCode = EXIT_COUNTS_DIFFER;
  else process.stdout.write(`Counts match: the metadata of ${report.kinds[0]!.sourceCount} tenant(s) is in PostgreSQL.\n`);
}
