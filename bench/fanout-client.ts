/**
 * One client process of the fan-out benchmark (bench/fanout.ts starts several, each with its
 * IPC channel): holds many WebSocket connections to one server, records when each of them
 * receives a given frame, and sends votes. It never parses the frames it times: a frame is
 * recognised by its first bytes (`{"type":"overlay.show"`…), which is how both servers
 * serialize them.
 *
 * Times are CLOCK_MONOTONIC (process.hrtime), in ms: the same clock in every process of the
 * machine, so the parent can subtract its own send time from them.
 *
 * Run only by bench/fanout.ts: `node --import tsx bench/fanout-client.ts` with an IPC channel.
 */
import { WebSocket, type RawData } from 'ws';

export type ClientCommand =
  /** Opens `count` connections, `wave` at a time, server URLs (one per node) and source addresses taken in turn. */
  | { cmd: 'connect'; urls: string[]; count: number; sessionPrefix: string; localAddresses: string[]; wave: number; welcomePrefix: string }
  /** Starts timing frames that begin with `prefix`; answered by `armed`, later by `arrivals`. */
  | { cmd: 'arm'; seq: number; prefix: string; capture: boolean }
  /** Reports the arrivals of `seq` so far (when the parent stops waiting). */
  | { cmd: 'collect'; seq: number }
  /** Every open connection sends one poll.vote; answered by `votes` once each has its ack or error. */
  | { cmd: 'vote'; seq: number; pollId: string; options: number }
  | { cmd: 'collectVotes'; seq: number }
  | { cmd: 'status' }
  | { cmd: 'exit' };

export type ClientReport =
  | { type: 'ready' }
  | { type: 'progress'; open: number; failed: number }
  | { type: 'connected'; open: number; failed: number; failureSamples: string[] }
  | { type: 'armed'; seq: number }
  /** Receive times (ms, monotonic) of the connections that got the frame; `missing` did not. */
  | { type: 'arrivals'; seq: number; times: number[]; missing: number; bytes: number; sample?: string }
  | { type: 'votes'; seq: number; firstSent: number; lastSent: number; ackTimes: number[]; errors: number; missing: number; errorSamples: string[] }
  | { type: 'status'; open: number; drops: number; dropSamples: string[]; cpuSeconds: number };

const now = () => Number(process.hrtime.bigint() / 1000n) / 1000;

const ACK = Buffer.from('{"type":"ack"');
const ERROR = Buffer.from('{"type":"error"');
const startsWith = (data: Buffer, prefix: Buffer) => data.length >= prefix.length && data.compare(prefix, 0, prefix.length, 0, prefix.length) === 0;

function report(message: ClientReport): void {
  process.send?.(message);
}

interface Viewer {
  ws: WebSocket;
  open: boolean;
  /** Receive time of the armed frame, NaN until it arrives. */
  arrival: number;
  /** 0 = no vote pending, 1 = vote sent and waiting, 2 = answered. */
  vote: 0 | 1 | 2;
}

const viewers: Viewer[] = [];
let exiting = false;
let drops = 0;
const dropSamples: string[] = [];

const sample = (list: string[], text: string) => {
  if (list.length < 5 && !list.includes(text)) list.push(text);
};

// What is being timed now.
let armed: { seq: number; prefix: Buffer; capture: boolean; pending: number; bytes: number; sample?: string } | null = null;
// The last reports sent, sent again when the parent asks after it stopped waiting for them.
let lastArrivals: ClientReport | null = null;
let lastVotes: ClientReport | null = null;
let voting: { seq: number; pending: number; firstSent: number; lastSent: number; ackTimes: number[]; errors: number; errorSamples: string[] } | null = null;

function onFrame(viewer: Viewer, raw: RawData): void {
  const data = raw as Buffer;
  if (armed && Number.isNaN(viewer.arrival) && startsWith(data, armed.prefix)) {
    viewer.arrival = now();
    armed.bytes = data.length;
    if (armed.capture && armed.sample === undefined) armed.sample = data.toString();
    if (--armed.pending === 0) sendArrivals();
    return;
  }
  if (voting && viewer.vote === 1) {
    const ack = startsWith(data, ACK);
    if (ack || startsWith(data, ERROR)) {
      viewer.vote = 2;
      if (ack) {
        voting.ackTimes.push(now());
      } else {
        voting.errors++;
        sample(voting.errorSamples, data.toString().slice(0, 200));
      }
      if (--voting.pending === 0) sendVotes();
    }
  }
}

function onDrop(viewer: Viewer, code: number, reason: string): void {
  if (!viewer.open) return;
  viewer.open = false;
  if (exiting) return;
  drops++;
  sample(dropSamples, `closed ${code} ${reason}`);
  if (armed && Number.isNaN(viewer.arrival) && --armed.pending === 0) sendArrivals();
  if (voting && viewer.vote === 1) {
    viewer.vote = 2;
    voting.errors++;
    if (--voting.pending === 0) sendVotes();
  }
}

function sendArrivals(): void {
  if (!armed) return;
  const times: number[] = [];
  let missing = 0;
  for (const viewer of viewers) {
    if (!Number.isNaN(viewer.arrival)) times.push(viewer.arrival);
    else if (viewer.open) missing++;
  }
  lastArrivals = { type: 'arrivals', seq: armed.seq, times, missing, bytes: armed.bytes, sample: armed.sample };
  report(lastArrivals);
  armed = null;
}

function sendVotes(): void {
  if (!voting) return;
  const missing = viewers.filter((v) => v.vote === 1).length;
  const { seq, firstSent, lastSent, ackTimes, errors, errorSamples } = voting;
  lastVotes = { type: 'votes', seq, firstSent, lastSent, ackTimes, errors, missing, errorSamples };
  report(lastVotes);
  voting = null;
  for (const viewer of viewers) viewer.vote = 0;
}

/** One connection; resolves once its welcome frame arrived, rejects on anything else. */
function open(url: string, localAddress: string, welcomePrefix: Buffer): Promise<Viewer> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, 'svc.v1', { localAddress, perMessageDeflate: false, handshakeTimeout: 30_000 });
    const viewer: Viewer = { ws, open: false, arrival: Number.NaN, vote: 0 };
    const timer = setTimeout(() => {
      ws.terminate();
      reject(new Error('no welcome within 30 s'));
    }, 30_000);
    const fail = (message: string) => {
      clearTimeout(timer);
      reject(new Error(message));
    };
    ws.once('unexpected-response', (_request, response) => fail(`HTTP ${response.statusCode}`));
    ws.on('error', (error: NodeJS.ErrnoException) => fail(error.code ?? error.message));
    ws.once('close', (code, reason) => {
      if (!viewer.open) fail(`closed ${code} ${reason.toString()} before welcome`);
      else onDrop(viewer, code, reason.toString());
    });
    ws.once('message', (data) => {
      clearTimeout(timer);
      if (!startsWith(data as Buffer, welcomePrefix)) {
        ws.terminate();
        reject(new Error(`first frame is not a welcome: ${(data as Buffer).toString().slice(0, 100)}`));
        return;
      }
      viewer.open = true;
      ws.on('message', (frame) => onFrame(viewer, frame));
      resolve(viewer);
    });
  });
}

async function connect(command: Extract<ClientCommand, { cmd: 'connect' }>): Promise<void> {
  const welcomePrefix = Buffer.from(command.welcomePrefix);
  const failureSamples: string[] = [];
  let failed = 0;
  for (let start = 0; start < command.count; start += command.wave) {
    const wave: Promise<Viewer>[] = [];
    for (let i = start; i < Math.min(command.count, start + command.wave); i++) {
      const url = `${command.urls[i % command.urls.length]!}&sessionId=${command.sessionPrefix}${i.toString(36)}`;
      wave.push(open(url, command.localAddresses[i % command.localAddresses.length]!, welcomePrefix));
    }
    for (const result of await Promise.allSettled(wave)) {
      if (result.status === 'fulfilled') viewers.push(result.value);
      else {
        failed++;
        sample(failureSamples, String((result.reason as Error).message));
      }
    }
    report({ type: 'progress', open: openCount(), failed });
  }
  report({ type: 'connected', open: openCount(), failed, failureSamples });
}

const openCount = () => viewers.reduce((n, v) => n + (v.open ? 1 : 0), 0);

process.on('message', (raw) => {
  const command = raw as ClientCommand;
  switch (command.cmd) {
    case 'connect':
      void connect(command);
      return;
    case 'arm': {
      let pending = 0;
      for (const viewer of viewers) {
        viewer.arrival = Number.NaN;
        if (viewer.open) pending++;
      }
      armed = { seq: command.seq, prefix: Buffer.from(command.prefix), capture: command.capture, pending, bytes: 0 };
      report({ type: 'armed', seq: command.seq });
      if (pending === 0) sendArrivals();
      return;
    }
    case 'collect':
      if (armed?.seq === command.seq) sendArrivals();
      else if (lastArrivals?.type === 'arrivals' && lastArrivals.seq === command.seq) report(lastArrivals);
      return;
    case 'vote': {
      const open = viewers.filter((v) => v.open);
      voting = { seq: command.seq, pending: open.length, firstSent: now(), lastSent: 0, ackTimes: [], errors: 0, errorSamples: [] };
      open.forEach((viewer, i) => {
        viewer.vote = 1;
        viewer.ws.send(`{"type":"poll.vote","pollId":${JSON.stringify(command.pollId)},"optionIndex":${i % command.options},"requestId":"v${command.seq}-${i}"}`);
      });
      voting.lastSent = now();
      if (open.length === 0) sendVotes();
      return;
    }
    case 'collectVotes':
      if (voting?.seq === command.seq) sendVotes();
      else if (lastVotes?.type === 'votes' && lastVotes.seq === command.seq) report(lastVotes);
      return;
    case 'status': {
      const cpu = process.cpuUsage();
      report({ type: 'status', open: openCount(), drops, dropSamples, cpuSeconds: (cpu.user + cpu.system) / 1e6 });
      return;
    }
    case 'exit':
      exiting = true;
      for (const viewer of viewers) viewer.ws.terminate();
      setTimeout(() => process.exit(0), 200);
      return;
  }
});

// The parent went away without saying so: do not linger.
process.on('disconnect', () => {
  exiting = true;
  process.exit(0);
});

report({ type: 'ready' });
