import type { ChildProcess } from 'node:child_process';
import type { ClientCommand, ClientReport } from './fanout-client';
import { cpuSeconds, spawnTracked, ROOT } from './processes';

export type ReportOf<T extends ClientReport['type']> = Extract<ClientReport, { type: T }>;

interface Waiter {
  match: (report: ClientReport) => boolean;
  resolve: (report: ClientReport | null) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
}

/** The client processes (bench/fanout-client.ts), driven over their IPC channels. */
export class ClientGroup {
  private readonly waiters: Waiter[][];
  private readonly outputs: string[];
  readonly progress: { open: number; failed: number }[];

  private constructor(private readonly children: ChildProcess[]) {
    this.waiters = children.map(() => []);
    this.outputs = children.map(() => '');
    this.progress = children.map(() => ({ open: 0, failed: 0 }));
    children.forEach((child, i) => {
      const keep = (chunk: Buffer) => (this.outputs[i] = (this.outputs[i] + chunk.toString()).slice(-4_000));
      child.stdout?.on('data', keep);
      child.stderr?.on('data', keep);
      child.on('message', (raw) => this.dispatch(i, raw as ClientReport));
      // A send to a process that is gone: its exit (below) fails the waiting call.
      child.on('error', () => undefined);
      child.once('exit', (code, signal) => {
        const error = new Error(`client process ${i} exited (${signal ?? code}):\n${this.outputs[i]}`);
        for (const waiter of this.waiters[i]!.splice(0)) {
          clearTimeout(waiter.timer);
          waiter.reject(error);
        }
      });
    });
  }

  static async start(count: number): Promise<ClientGroup> {
    const children = Array.from({ length: count }, () =>
      spawnTracked(process.execPath, ['--import', 'tsx', 'bench/fanout-client.ts'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] }),
    );
    const group = new ClientGroup(children);
    await group.all('ready', () => true, 60_000, 'start');
    return group;
  }

  get size(): number {
    return this.children.length;
  }

  /** `fn` of each client's index. */
  map<T>(fn: (i: number) => T): T[] {
    return this.children.map((_, i) => fn(i));
  }

  private dispatch(i: number, report: ClientReport): void {
    if (report.type === 'progress') this.progress[i] = { open: report.open, failed: report.failed };
    const list = this.waiters[i]!;
    const index = list.findIndex((w) => w.match(report));
    if (index < 0) return;
    const [waiter] = list.splice(index, 1);
    clearTimeout(waiter!.timer);
    waiter!.resolve(report);
  }

  send(i: number, command: ClientCommand): void {
    this.children[i]!.send(command);
  }

  sendAll(command: ClientCommand): void {
    for (let i = 0; i < this.children.length; i++) this.send(i, command);
  }

  /** The next report of this type from client `i` that passes `filter`; null after `timeoutMs`. */
  next<T extends ClientReport['type']>(i: number, type: T, filter: (r: ReportOf<T>) => boolean, timeoutMs: number): Promise<ReportOf<T> | null> {
    return new Promise<ReportOf<T> | null>((resolve, reject) => {
      const list = this.waiters[i]!;
      const waiter: Waiter = {
        match: (r) => r.type === type && filter(r as ReportOf<T>),
        resolve: (r) => resolve(r as ReportOf<T> | null),
        reject,
        timer: setTimeout(() => {
          list.splice(list.indexOf(waiter), 1);
          resolve(null);
        }, timeoutMs),
      };
      list.push(waiter);
    });
  }

  /** One report of this type from every client; throws when one does not answer in time. */
  async all<T extends ClientReport['type']>(type: T, filter: (r: ReportOf<T>) => boolean, timeoutMs: number, what: string): Promise<ReportOf<T>[]> {
    const reports = await Promise.all(this.children.map((_, i) => this.next(i, type, filter, timeoutMs)));
    if (reports.some((r) => r === null)) throw new Error(`client processes did not answer "${what}" within ${timeoutMs} ms`);
    return reports as ReportOf<T>[];
  }

  cpuSeconds(): number {
    return this.children.reduce((sum, child) => sum + cpuSeconds(child.pid ?? -1), 0);
  }

  async stop(): Promise<void> {
    await Promise.all(
      this.children.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
            child.once('exit', () => {
              clearTimeout(timer);
              resolve();
            });
            try {
              child.send({ cmd: 'exit' } satisfies ClientCommand);
            } catch {
              child.kill('SIGKILL');
            }
          }),
      ),
    );
  }
}
