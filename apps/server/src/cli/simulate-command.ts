import type { Command } from 'commander';
import { SvcError } from '@svc/protocol';
import { checkStored, simulate } from '@svc/simulator';

interface SimulateOptions {
  url: string;
  apiKey?: string;
  broadcast: string;
  viewers: string;
  seconds: string;
  activity: string;
  check?: boolean;
  adminToken?: string;
  checkWait: string;
}

/** `svc simulate`: virtual viewers join a broadcast of a running server and interact with it. */
export function addSimulateCommand(program: Command): void {
  program
    .command('simulate')
    .description('drive N virtual viewers through a broadcast of a running server: join, vote, tap, buy, leave')
    .option('--url <url>', 'server address', process.env.SVC_PUBLIC_URL || `http://localhost:${process.env.PORT || 8080}`)
    .option('--api-key <key>', 'public API key (default $SVC_API_KEY)')
    .option('--broadcast <id>', 'broadcast (content) id', 'demo-live')
    .option('--viewers <n>', 'how many viewers', '50')
    .option('--seconds <n>', 'how long they stay', '60')
    .option('--activity <p>', 'chance that a viewer acts on what it sees (0-1)', '0.5')
    .option('--check', 'afterwards, read the events back (raw export) and check that every acknowledged one is stored exactly once; exit status 1 if not')
    .option('--admin-token <token>', 'admin token for --check (default $SVC_ADMIN_TOKEN)')
    .option('--check-wait <s>', 'how long --check waits for acknowledged events to become readable', '60')
    .action(async (options: SimulateOptions) => {
      const apiKey = options.apiKey ?? process.env.SVC_API_KEY;
      if (!apiKey) throw new SvcError('api_key_missing', 'Pass --api-key or set SVC_API_KEY to a public API key.');
      const adminToken = options.adminToken ?? process.env.SVC_ADMIN_TOKEN;
      if (options.check && !adminToken) throw new SvcError('validation_failed', 'Pass --admin-token or set SVC_ADMIN_TOKEN: --check reads the events back through the export.');
      const viewers = Number(options.viewers);
      const seconds = Number(options.seconds);
      const activity = Number(options.activity);
      const checkWait = Number(options.checkWait);
      if (!Number.isInteger(viewers) || viewers < 1 || viewers > 20_000) throw new SvcError('validation_failed', '--viewers must be a whole number from 1 to 20000.');
      if (!(seconds > 0 && seconds <= 86_400)) throw new SvcError('validation_failed', '--seconds must be above 0.');
      if (!(activity >= 0 && activity <= 1)) throw new SvcError('validation_failed', '--activity must be between 0 and 1.');
      if (!(checkWait >= 0 && checkWait <= 3_600)) throw new SvcError('validation_failed', '--check-wait must be between 0 and 3600.');
      const progress = (line: string) => process.stderr.write(`${line}\n`);
      progress(`Simulating ${viewers} viewers on "${options.broadcast}" for ${seconds} s…`);
      const { acknowledgedIds, startedAtMs, ...result } = await simulate({ url: options.url, apiKey, broadcastId: options.broadcast, viewers, seconds, activity, progress });
      if (!options.check) {
        process.stdout.write(`${JSON.stringify(result)}\n`);
        return;
      }
      progress(`Checking that the ${acknowledgedIds.length} acknowledged events are stored once…`);
      const check = await checkStored({ url: options.url, adminToken: adminToken!, broadcastId: options.broadcast, ids: acknowledgedIds, sinceMs: startedAtMs, waitMs: checkWait * 1000, progress }).catch(
        (error: unknown) => {
          // What the viewers did is still reported; the error (exit status 2) says why nothing was checked.
          process.stdout.write(`${JSON.stringify(result)}\n`);
          throw error;
        },
      );
      progress(
        check.missing === 0 && check.repeated === 0
          ? `Stored: all ${check.checked} acknowledged events, each once.`
          : `NOT stored as acknowledged: ${check.missing} missing, ${check.repeated} more than once (e.g. ${check.examples.join(', ')}).`,
      );
      process.stdout.write(`${JSON.stringify({ ...result, check })}\n`);
      if (check.missing > 0 || check.repeated > 0) process.exitCode = 1;
    });
}
