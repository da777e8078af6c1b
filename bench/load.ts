import { Pool } from 'undici';

/** Where a load run takes its request bodies from. */
export interface BodySource {
  next(): Buffer;
  /** Events per body. */
  readonly eventsPerBody: number;
}

export interface LoadOptions {
  /** http://127.0.0.1:<port> */
  origin: string;
  path: string;
  headers: Record<string, string>;
  bodies: BodySource;
  connections: number;
  warmupMs: number;
  measureMs: number;
  /** Called at the start and the end of the measured window (e.g. to sample metrics). */
  onWindow?: (edge: 'start' | 'end') => void | Promise<void>;
  /**
   * Paced load: requests are sent on a fixed schedule of this many per second, whatever the
   * answers' pace (at most `connections` in flight, so the server never sees more than it is
   * sent). Default: closed loop, each connection sending again as soon as it has its answer.
   */
  requestsPerSecond?: number;
}

export interface LoadResult {
  /** Length of the measured window in seconds. */
  seconds: number;
  /** Requests answered 200 with every event accepted, inside the window. */
  okRequests: number;
  /** Events accepted inside the window. */
  events: number;
  /** Requests that failed (network error, non-200, malformed answer) or accepted fewer events than sent, inside the window. */
  failedRequests: number;
  rejectedEvents: number;
  duplicateEvents: number;
  /** Latency of every request completed in the window, successful or not, in ms, sorted. */
  latenciesMs: Float64Array;
  /** Client CPU seconds during the window (user + system). */
  clientCpuSeconds: number;
  /** A few failure messages. */
  failureSamples: string[];
}

interface IngestAnswer {
  accepted?: unknown;
  duplicates?: unknown;
  rejected?: unknown;
}

/**
 * Closed-loop load: `connections` loops, each with one request in flight on its own keep-alive
 * connection (or paced, see `requestsPerSecond`). Counts only requests that complete inside the
 * measured window.
 */
export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  if (new URL(options.origin).hostname !== '127.0.0.1') throw new Error(`refusing to load ${options.origin}: only 127.0.0.1`);
  const pool = new Pool(options.origin, {
    connections: options.connections,
    pipelining: 1,
    keepAliveTimeout: 60_000,
    headersTimeout: 60_000,
    bodyTimeout: 60_000,
  });
  const headers = { 'content-type': 'application/json', ...options.headers };
  const perBody = options.bodies.eventsPerBody;

  const latencies: number[] = [];
  const failureSamples: string[] = [];
  let okRequests = 0;
  let events = 0;
  let failedRequests = 0;
  let rejectedEvents = 0;
  let duplicateEvents = 0;

  const started = performance.now();
  const windowStart = started + options.warmupMs;
  const windowEnd = windowStart + options.measureMs;
  let stop = false;
  const fail = (message: string) => {
    if (failureSamples.length < 5 && !failureSamples.includes(message)) failureSamples.push(message);
  };

  const intervalMs = options.requestsPerSecond ? 1000 / options.requestsPerSecond : 0;
  let nextSendAt = started;
  const loop = async () => {
    while (!stop) {
      if (intervalMs) {
        const at = nextSendAt;
        nextSendAt += intervalMs;
        await sleepUntil(at);
        if (stop) break;
      }
      const body = options.bodies.next();
      const sent = performance.now();
      let ok = false;
      let accepted = 0;
      let problem: string | null = null;
      let rejected = 0;
      let duplicates = 0;
      try {
        const response = await pool.request({ path: options.path, method: 'POST', headers, body });
        const text = await response.body.text();
        if (response.statusCode !== 200) {
          problem = `HTTP ${response.statusCode}: ${text.slice(0, 300)}`;
        } else {
          const answer = JSON.parse(text) as IngestAnswer;
          accepted = typeof answer.accepted === 'number' ? answer.accepted : 0;
          rejected = Array.isArray(answer.rejected) ? answer.rejected.length : 0;
          duplicates = typeof answer.duplicates === 'number' ? answer.duplicates : 0;
          ok = accepted === perBody;
          if (!ok) problem = `accepted ${accepted} of ${perBody}: ${text.slice(0, 300)}`;
        }
      } catch (error) {
        problem = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      }
      const done = performance.now();
      if (done >= windowStart && done < windowEnd) {
        latencies.push(done - sent);
        rejectedEvents += rejected;
        duplicateEvents += duplicates;
        if (ok) {
          okRequests++;
          events += accepted;
        } else {
          failedRequests++;
          events += accepted;
        }
      }
      if (problem !== null) {
        fail(problem);
        // Do not spin if the server is gone.
        if (!ok && accepted === 0) await new Promise((r) => setTimeout(r, 10));
      }
    }
  };

  const loops = Array.from({ length: options.connections }, loop);
  let cpuAtStart = process.cpuUsage();
  const clock = (async () => {
    await sleepUntil(windowStart);
    cpuAtStart = process.cpuUsage();
    await options.onWindow?.('start');
    await sleepUntil(windowEnd);
    const cpu = process.cpuUsage(cpuAtStart);
    await options.onWindow?.('end');
    stop = true;
    return (cpu.user + cpu.system) / 1e6;
  })();

  let clientCpuSeconds = 0;
  try {
    clientCpuSeconds = await clock;
    await Promise.all(loops);
  } finally {
    stop = true;
    await pool.destroy().catch(() => undefined);
  }

  return {
    seconds: options.measureMs / 1000,
    okRequests,
    events,
    failedRequests,
    rejectedEvents,
    duplicateEvents,
    latenciesMs: Float64Array.from(latencies).sort(),
    clientCpuSeconds,
    failureSamples,
  };
}

function sleepUntil(time: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, time - performance.now())));
}

/** Nearest-rank percentile of sorted values; NaN when empty. */
export function percentile(sorted: Float64Array, p: number): number {
  if (!sorted.length) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}
