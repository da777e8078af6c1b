import type { FastifyInstance } from 'fastify';
import { buildApp, type AppOptions } from './app';
import type { ServerConfig } from './config';
import { DemoBroadcast } from './demo-broadcast';
import { loadSampleData } from './sample-data';
import { createServices, type ServiceOverrides } from './services';

export interface RunningServer {
  app: FastifyInstance;
  /** The address the server listens on, e.g. http://127.0.0.1:8080. */
  url: string;
  close(): Promise<void>;
}

/**
 * Opens the stores, creates tenant `demo` on first start, listens, and shuts down cleanly on
 * SIGTERM/SIGINT: stop accepting, finish requests, commit what is queued, close the database.
 */
export async function serve(
  config: ServerConfig,
  options: AppOptions & ServiceOverrides & { handleSignals?: boolean; print?: (line: string) => void; demo?: boolean } = {},
): Promise<RunningServer> {
  const print = options.print ?? ((line: string) => process.stdout.write(`${line}\n`));
  const services = await createServices(config, options);
  const created = await services.tenants.bootstrap({ apiKey: config.bootstrapApiKey, adminToken: config.bootstrapAdminToken });
  if (created) {
    // A generated token is printed once, on the terminal only: it is never logged and only its
    // hash is kept. A token the operator supplied is not echoed: stdout is often a log stream.
    print(`Created tenant "demo".`);
    print(`  API key:     ${created.apiKey.key}`);
    print(
      config.bootstrapAdminToken
        ? '  Admin token: the one in SVC_BOOTSTRAP_ADMIN_TOKEN'
        : `  Admin token: ${created.adminToken}   (shown once; keep it safe)`,
    );
  }
  const app = await buildApp(services, options);
  const demo = new DemoBroadcast(services.content, services.tenants, { baseUrl: () => services.config.publicUrl });
  app.addHook('preClose', async () => demo.stop());
  services.startBackgroundWork((error, what) => app.log.warn({ err: error }, what));

  // Before listening and before saying so: a SIGTERM that follows the announcement at once
  // must find its handler (and a clean shutdown), not the default action.
  let closing: Promise<void> | null = null;
  const close = () => (closing ??= app.close().then(() => undefined));
  if (options.handleSignals !== false) {
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      process.once(signal, () => {
        app.log.info({ signal }, 'shutting down');
        void close().then(() => process.exit(0), () => process.exit(1));
      });
    }
  }
  await app.listen({ port: config.port, host: config.host });
  if (options.demo !== false) await demo.start().catch((error: unknown) => app.log.warn({ err: error }, 'demo broadcast did not start'));
  if (created && config.sampleData) {
    void loadSampleData(services, created.tenant).then(
      (events) => print(`Loaded ${events} sample events into tenant "demo" (SVC_SAMPLE_DATA=false to skip).`),
      (error: unknown) => app.log.warn({ err: error }, 'sample data not loaded'),
    );
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
  print(`Svc listening on ${url} (data in ${config.dataDir})`);

  return { app, url, close };
}
