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

export interface SimulationResult extends ViewerStats {
  viewers: number;
  /** Events sent that the server never acknowledged (it was away when the viewers left). */
  unacknowledged: number;
  /** Error codes seen (refused votes, rejected events), with how often. */
  errorCodes: Record<string, number>;
  /** Viewers that never got a `welcome` (their sockets failed a few times). */
  failedJoins: number;
  /** Every acknowledged event's id, for a check of what was stored (`checkStored`). */
  acknowledgedIds: string[];
  /** When the first viewer joined (ms since the epoch): the acknowledged events are not older. */
  startedAtMs: number;
}

/** Drives N virtual viewers through a broadcast and reports what they did. */
export async function simulate(options: SimulationOptions): Promise<SimulationResult> {
  const random = options.random ?? Math.random;
  const progress = options.progress ?? (() => {});
  const webSocketBaseURL = options.url.replace(/^http/, 'ws').replace(/\/+$/, '');
  const viewers: VirtualViewer[] = [];
  const arrivalWindowMs = Math.max(1, options.seconds * 100);
  const joins: Promise<void>[] = [];
  let failedJoins = 0;
  const started = Date.now();
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
          failedJoins++;
          progress(`viewer ${i + 1} could not join: ${error.message}`);
        }),
      ),
    );
  }
  const sum = (stat: keyof ViewerStats) => viewers.reduce((total, v) => total + v.stats[stat], 0);
  const ticker = setInterval(() => {
    const reconnects = sum('reconnects');
    progress(
      `${Math.round((Date.now() - started) / 1000)}/${options.seconds} s · ${viewers.length} viewers · ${sum('events')} events, ${sum('acknowledged')} acknowledged` +
        (reconnects > 0 ? ` · ${reconnects} reconnects, ${sum('resumed')} resumed` : ''),
    );
  }, 5_000);
  await Promise.all(joins);
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, options.seconds * 1000 - (Date.now() - started))));
  clearInterval(ticker);
  await Promise.all(viewers.map((viewer) => viewer.leave()));
  const errorCodes: Record<string, number> = {};
  for (const viewer of viewers) for (const [code, count] of viewer.errorCodes) errorCodes[code] = (errorCodes[code] ?? 0) + count;
  return {
    viewers: viewers.length,
    events: sum('events'),
    acknowledged: sum('acknowledged'),
    unacknowledged: viewers.reduce((total, v) => total + v.unacknowledged, 0),
    refused: sum('refused'),
    votes: sum('votes'),
    orders: sum('orders'),
    errors: sum('errors'),
    errorCodes,
    failedJoins,
    reconnects: sum('reconnects'),
    resumed: sum('resumed'),
    resent: sum('resent'),
    acknowledgedIds: viewers.flatMap((v) => v.acknowledgedIds),
    startedAtMs: started,
  };
}
