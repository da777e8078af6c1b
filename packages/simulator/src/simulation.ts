import { VirtualViewer, type ViewerStats } from './virtual-viewer';

export interface SimulationOptions {
  /** The service's REST base, e.g. http://localhost:8080. */
  url: string;
  apiKey: string;
  broadcastId: string;
  viewers: number;
  /** How long viewers stay, in seconds; they arrive spread over the first tenth of it. */
  seconds: number;
  activity: number;
  random?: () => number;
  progress?: (line: string) => void;
}

/** Drives N virtual viewers through a broadcast and reports what they did. */
export async function simulate(options: SimulationOptions): Promise<ViewerStats & { viewers: number }> {
  const random = options.random ?? Math.random;
  const progress = options.progress ?? (() => {});
  const webSocketBaseURL = options.url.replace(/^http/, 'ws').replace(/\/+$/, '');
  const viewers: VirtualViewer[] = [];
  const arrivalWindowMs = Math.max(1, options.seconds * 100);
  const joins: Promise<void>[] = [];
  for (let i = 0; i < options.viewers; i++) {
    const viewer = new VirtualViewer({
      webSocketBaseURL,
      apiKey: options.apiKey,
      broadcastId: options.broadcastId,
      userId: random() < 0.6 ? `sim-user-${Math.floor(random() * 1e9)}` : null,
      activity: options.activity,
      random,
    });
    viewers.push(viewer);
    joins.push(
      new Promise<void>((resolve) => setTimeout(resolve, (i / options.viewers) * arrivalWindowMs)).then(() =>
        viewer.join().catch((error: Error) => {
          viewer.stats.errors++;
          progress(`viewer ${i + 1} could not join: ${error.message}`);
        }),
      ),
    );
  }
  const started = Date.now();
  const ticker = setInterval(() => {
    const events = viewers.reduce((sum, v) => sum + v.stats.events, 0);
    progress(`${Math.round((Date.now() - started) / 1000)}/${options.seconds} s · ${viewers.length} viewers · ${events} events`);
  }, 5_000);
  await Promise.all(joins);
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, options.seconds * 1000 - (Date.now() - started))));
  clearInterval(ticker);
  for (const viewer of viewers) viewer.leave();
  await new Promise((resolve) => setTimeout(resolve, 500));
  const total = { viewers: viewers.length, events: 0, votes: 0, orders: 0, errors: 0 };
  for (const { stats } of viewers) {
    total.events += stats.events;
    total.votes += stats.votes;
    total.orders += stats.orders;
    total.errors += stats.errors;
  }
  return total;
}
