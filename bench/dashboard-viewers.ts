import { WebSocket } from 'ws';
import { uuidv7 } from 'uuidv7';

/** How long a viewer waits for its welcome before the run counts it as failed. */
const WELCOME_TIMEOUT_MS = 30_000;
/** Viewers opened at once (the gateway admits 100 upgrades a second per address after a burst). */
const CONNECT_WAVE = 50;

export interface LiveViewersOptions {
  /** The service's http(s) origin. */
  origin: string;
  /** A public (svc_pk_) key, as an app holds it. */
  apiKey: string;
  /** The broadcast the viewers join (the SDK's contentId). */
  broadcastId: string;
  count: number;
  sessionPrefix: string;
}

interface Viewer {
  ws: WebSocket;
  sessionId: string;
  voted: boolean;
}

/**
 * Viewers as the SDK makes them: one WebSocket each to the realtime gateway with the public key,
 * joining a broadcast (a `broadcast.joined` tracked over the socket once welcomed), voting in the
 * poll it shows, and sending tracked events over the same socket. Answers (acks, errors) and
 * drops are counted, so that a run that lost events can say so.
 */
export class LiveViewers {
  private readonly viewers: Viewer[] = [];
  acks = 0;
  errors = 0;
  drops = 0;
  readonly errorSamples: string[] = [];
  private closing = false;

  constructor(private readonly options: LiveViewersOptions) {}

  /** Opens every viewer, CONNECT_WAVE at a time; resolves with the number that failed to be welcomed. */
  async connect(): Promise<number> {
    let failed = 0;
    for (let start = 0; start < this.options.count; start += CONNECT_WAVE) {
      const wave = [];
      for (let i = start; i < Math.min(this.options.count, start + CONNECT_WAVE); i++) wave.push(this.open(`svc_${this.options.sessionPrefix}${i.toString(36)}`));
      for (const result of await Promise.allSettled(wave)) {
        if (result.status === 'fulfilled') this.viewers.push(result.value);
        else {
          failed++;
          this.sample(String((result.reason as Error).message));
        }
      }
    }
    return failed;
  }

  get openCount(): number {
    return this.viewers.filter((v) => v.ws.readyState === WebSocket.OPEN).length;
  }

  /**
   * Viewers `first` to `first + count - 1` (wrapping around) each track the events `make` gives
   * them in one `track` message, as the SDK sends a batch; returns the events sent.
   */
  track(first: number, count: number, make: (sessionId: string, index: number) => Array<Record<string, unknown>>): number {
    let sent = 0;
    if (!this.viewers.length) return 0;
    for (let n = 0; n < count; n++) {
      const i = (first + n) % this.viewers.length;
      const viewer = this.viewers[i]!;
      if (viewer.ws.readyState !== WebSocket.OPEN) continue;
      const events = make(viewer.sessionId, i).map((e) => ({ eventId: uuidv7(), timestamp: new Date().toISOString(), ...e }));
      viewer.ws.send(JSON.stringify({ type: 'track', events, sentAt: new Date().toISOString() }));
      sent += events.length;
    }
    return sent;
  }

  /** Viewers that have not voted yet vote in `pollId` (option by their index), up to `max` of them. */
  vote(pollId: string, options: number, max: number): number {
    let votes = 0;
    this.viewers.forEach((viewer, i) => {
      if (votes >= max || viewer.voted || viewer.ws.readyState !== WebSocket.OPEN) return;
      viewer.voted = true;
      votes++;
      viewer.ws.send(JSON.stringify({ type: 'poll.vote', pollId, optionIndex: i % options }));
    });
    return votes;
  }

  close(): void {
    this.closing = true;
    for (const viewer of this.viewers) viewer.ws.terminate();
  }

  private sample(text: string): void {
    if (this.errorSamples.length < 5 && !this.errorSamples.includes(text)) this.errorSamples.push(text);
  }

  private open(sessionId: string): Promise<Viewer> {
    const { origin, apiKey, broadcastId } = this.options;
    const url = `${origin.replace(/^http/, 'ws')}/v1/ws?${new URLSearchParams({ apiKey, sessionId, contentId: broadcastId })}`;
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, 'svc.v1', { perMessageDeflate: false });
      const viewer: Viewer = { ws, sessionId, voted: false };
      let welcomed = false;
      const timer = setTimeout(() => {
        ws.terminate();
        reject(new Error(`no welcome within ${WELCOME_TIMEOUT_MS} ms`));
      }, WELCOME_TIMEOUT_MS);
      ws.once('unexpected-response', (_request, response) => reject(new Error(`HTTP ${response.statusCode}`)));
      ws.on('error', (error: NodeJS.ErrnoException) => {
        if (!welcomed) reject(new Error(error.code ?? error.message));
      });
      ws.on('close', (code) => {
        clearTimeout(timer);
        if (!welcomed) reject(new Error(`closed ${code} before welcome`));
        else if (!this.closing) {
          this.drops++;
          this.sample(`closed ${code}`);
        }
      });
      ws.on('message', (data) => {
        const text = String(data);
        if (!welcomed) {
          if (!text.startsWith('{"type":"welcome"')) return reject(new Error(`first frame is not a welcome: ${text.slice(0, 100)}`));
          welcomed = true;
          clearTimeout(timer);
          // What the SDK sends once it joined a broadcast.
          ws.send(JSON.stringify({ type: 'track', events: [{ event: 'broadcast.joined', eventId: uuidv7(), timestamp: new Date().toISOString(), data: {} }] }));
          return resolve(viewer);
        }
        if (text.startsWith('{"type":"ack"')) {
          this.acks++;
          if (text.includes('"rejected"')) {
            this.errors++;
            this.sample(text.slice(0, 200));
          }
        } else if (text.startsWith('{"type":"error"')) {
          this.errors++;
          this.sample(text.slice(0, 200));
        }
      });
    });
  }
}
