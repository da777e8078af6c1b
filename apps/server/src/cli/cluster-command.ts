import { InvalidArgumentError, type Command } from 'commander';
import { MissingEnginesError, startLocalCluster } from '../cluster/local-cluster';

/** The load balancer's port when `--port` is not given. */
export const DEFAULT_CLUSTER_PORT = 8080;

function portOption(value: string): number {
  const port = Number(value);
  if (!Number.isInteger(port) || port < 1 || port > 65_535) throw new InvalidArgumentError('must be a port number from 1 to 65535');
  return port;
}

const say = (line: string) => process.stdout.write(`${line}\n`);

/** `svc cluster up`: a whole cluster on this machine behind a load balancer, until Ctrl-C. */
export function addClusterCommand(program: Command): void {
  const cluster = program.command('cluster').description('run cluster mode');
  cluster
    .command('up')
    .description('start NATS (3 servers), PostgreSQL, ClickHouse, 3 Svc nodes and HAProxy on this machine; Ctrl-C stops them all')
    .option('--port <port>', 'port of the load balancer on 127.0.0.1', portOption, DEFAULT_CLUSTER_PORT)
    .option('--data <dir>', 'keep all data in this folder (default: a temporary folder, removed on exit)')
    .action(async (options: { port: number; data?: string }) => {
      let stopRequested = false;
      let stopNow: (() => void) | undefined;
      // Until the cluster is up, a Ctrl-C waits for the start to end and then stops what started.
      const onSignal = () => {
        if (stopRequested) return;
        stopRequested = true;
        say('Stopping: draining the nodes, then the load balancer and the engines…');
        stopNow?.();
      };
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);

      let running;
      try {
        running = await startLocalCluster({ port: options.port, dataDir: options.data, progress: say });
      } catch (error) {
        // Whatever had started is stopped by now.
        process.stderr.write(`svc cluster up: ${error instanceof MissingEnginesError ? error.message : String(error)}\n`);
        process.exit(1);
      }
      if (!stopRequested) {
        say(running.temporaryData ? `Data in ${running.dataDir} (temporary: removed on exit; --data <dir> keeps it)` : `Data in ${running.dataDir} (kept)`);
        say(`Processes: ${running.processes().map(({ name, pid }) => `${name}=${pid}`).join(' ')}`);
        say('');
        say(`Svc cluster ready at ${running.url}`);
        say(`  Dashboard:   ${running.url}/  (sign in with the admin token)`);
        say(`  Admin token: ${running.adminToken}`);
        say(`  API key:     ${running.apiKey}`);
        say(`  Demo page:   ${running.url}/demo`);
        say(`  Simulate:    SVC_ADMIN_TOKEN=${running.adminToken} npm run svc -- simulate --url ${running.url} --api-key ${running.apiKey} --check`);
        say('               (kill a node meanwhile: its viewers resume on the others; --check reads every acknowledged event back)');
        say('Press Ctrl-C to stop everything.');
        await new Promise<void>((resolve) => (stopNow = resolve));
      }
      await running.stop();
      say('Stopped.');
      process.exit(0);
    });
}
