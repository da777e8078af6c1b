import { createWriteStream } from 'node:fs';
import { Readable, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Command } from 'commander';
import { SvcError } from '@svc/protocol';

interface ExportOptions {
  url: string;
  token?: string;
  format: 'ndjson' | 'csv';
  /** Spreadsheet-safe CSV cells (`csvSafe=true`). */
  csvSafe?: boolean;
  out?: string;
  from?: string;
  to?: string;
  campaign?: string;
  broadcast?: string;
  user?: string;
  sponsor?: string;
  country?: string;
  event?: string;
}

const FILTERS: Array<[Exclude<keyof ExportOptions, 'csvSafe'>, string]> = [
  ['from', 'from'],
  ['to', 'to'],
  ['campaign', 'campaignId'],
  ['broadcast', 'broadcastId'],
  ['user', 'userId'],
  ['sponsor', 'sponsorId'],
  ['country', 'country'],
  ['event', 'event'],
];

/** Counts records passing through (CSV line breaks inside quotes do not count) and reports progress. */
class RecordCounter extends Transform {
  records = 0;
  private inQuotes = false;

  constructor(
    private readonly format: 'ndjson' | 'csv',
    private readonly onProgress: (records: number) => void,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    for (const byte of chunk) {
      if (this.format === 'csv' && byte === 0x22) this.inQuotes = !this.inQuotes;
      else if (byte === 0x0a && !this.inQuotes) this.records++;
    }
    this.onProgress(this.format === 'csv' ? Math.max(0, this.records - 1) : this.records);
    done(null, chunk);
  }
}

function progressPrinter(total: number): (records: number) => void {
  const tty = process.stderr.isTTY;
  let lastShown = -1;
  return (records) => {
    const percent = total ? Math.floor((records / total) * 100) : 100;
    if (percent === lastShown && records !== total) return;
    lastShown = percent;
    const width = 30;
    const filled = Math.round((percent / 100) * width);
    const line = `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${percent}%  ${records}/${total} events`;
    if (tty) process.stderr.write(`\r${line}`);
    else if (percent % 10 === 0) process.stderr.write(`${line}\n`);
  };
}

/** `svc export`: streams the raw export of a running server to a file or stdout, with progress. */
export function addExportCommand(program: Command): void {
  program
    .command('export')
    .description('stream raw events from a running server (GET /v1/analytics/events) to a file or stdout')
    .option('--url <url>', 'server address', process.env.SVC_PUBLIC_URL || `http://localhost:${process.env.PORT || 8080}`)
    .option('--token <token>', 'admin token (default $SVC_ADMIN_TOKEN)')
    .option('--format <format>', 'ndjson or csv', 'ndjson')
    .option('--csv-safe', 'CSV for spreadsheets: cells starting with =, +, -, @, tab or CR get a leading \'')
    .option('--out <file>', 'write here instead of stdout')
    .option('--from <date>', 'calendar date (inclusive) or date-time')
    .option('--to <date>', 'calendar date (inclusive) or date-time (exclusive)')
    .option('--campaign <id>', 'campaign id')
    .option('--broadcast <id>', 'broadcast id')
    .option('--user <id>', 'user id')
    .option('--sponsor <id>', 'sponsor id')
    .option('--country <code>', 'country code')
    .option('--event <names>', 'comma list of event names')
    .action(async (options: ExportOptions) => {
      const token = options.token ?? process.env.SVC_ADMIN_TOKEN;
      if (!token) throw new SvcError('unauthorized', 'Pass --token or set SVC_ADMIN_TOKEN to an admin token.');
      if (options.format !== 'ndjson' && options.format !== 'csv') throw new SvcError('validation_failed', '--format must be ndjson or csv.');
      const query = new URLSearchParams({ format: options.format });
      if (options.csvSafe) query.set('csvSafe', 'true');
      for (const [option, param] of FILTERS) {
        const value = options[option];
        if (value) query.set(param, value);
      }
      let response: Response;
      try {
        response = await fetch(`${options.url.replace(/\/+$/, '')}/v1/analytics/events?${query}`, {
          headers: { authorization: `Bearer ${token}` },
        });
      } catch (error) {
        throw new SvcError('not_ready', `No server answers at ${options.url} (${error instanceof Error ? error.message : error}).`);
      }
      if (!response.ok || !response.body) {
        const problem = (await response.json().catch(() => ({}))) as { code?: string; detail?: string };
        throw new SvcError('invalid_body', `The server answered ${response.status}: ${problem.detail ?? response.statusText}`);
      }
      const total = Number(response.headers.get('x-total-count') ?? 0);
      const counter = new RecordCounter(options.format, progressPrinter(total));
      const sink = options.out ? createWriteStream(options.out) : process.stdout;
      await pipeline(Readable.fromWeb(response.body as import('node:stream/web').ReadableStream), counter, sink);
      if (process.stderr.isTTY) process.stderr.write('\n');
      process.stderr.write(`Exported ${options.format === 'csv' ? Math.max(0, counter.records - 1) : counter.records} events${options.out ? ` to ${options.out}` : ''}.\n`);
    });
}
