import type { Command } from 'commander';
import { SvcError } from '@svc/protocol';
import { simulate } from '@svc/simulator';

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
    .action(async (options: { url: string; apiKey?: string; broadcast: string; viewers: string; seconds: string; activity: string }) => {
      const apiKey = options.apiKey ?? process.env.SVC_API_KEY;
      if (!apiKey) throw new SvcError('api_key_missing', 'Pass --api-key or set SVC_API_KEY to a public API key.');
      const viewers = Number(options.viewers);
      const seconds = Number(options.seconds);
      const activity = Number(options.activity);
      if (!Number.isInteger(viewers) || viewers < 1 || viewers > 20_000) throw new SvcError('validation_failed', '--viewers must be a whole number from 1 to 20000.');
      if (!(seconds > 0 && seconds <= 86_400)) throw new SvcError('validation_failed', '--seconds must be above 0.');
      if (!(activity >= 0 && activity <= 1)) throw new SvcError('validation_failed', '--activity must be between 0 and 1.');
      process.stderr.write(`Simulating ${viewers} viewers on "${options.broadcast}" for ${seconds} s…\n`);
      const result = await simulate({
        url: options.url,
        apiKey,
        broadcastId: options.broadcast,
        viewers,
        seconds,
        activity,
        progress: (line) => process.stderr.write(`${line}\n`),
      });
      process.stdout.write(`${JSON.stringify(result)}\n`);
    });
}
