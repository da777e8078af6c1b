import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { RealtimeConnection } from '../src/realtime-connection';

const HEARTBEAT_MS = 1_000;

/** A WebSocket the test drives: it opens, receives and closes when told. */
class FakeSocket {
  static made: FakeSocket[] = [];
  readyState = 0;
  sent: string[] = [];
  closedWith: number | null = null;
  onopen: (() => void) | null = null;
  onmessage: ((event: { data: string }) => void) | null = null;
  onclose: ((event: { code: number; reason: string }) => void) | null = null;

  constructor(readonly url: string) {
    FakeSocket.made.push(this);
  }
  send(data: string): void {
    this.sent.push(data);
  }
  close(code: number): void {
    this.closedWith = code;
    this.readyState = 2;
  }
  opens(): void {
    this.readyState = 1;
    this.onopen?.();
  }
  receives(message: object): void {
    this.onmessage?.({ data: JSON.stringify(message) });
  }
  welcomed(): void {
    this.opens();
    this.receives({ type: 'welcome', session: { id: 'svc_1', resumed: false }, heartbeatIntervalMs: HEARTBEAT_MS });
  }
  /** The socket ends, as the browser reports it (also late, for a socket already given up). */
  ends(code = 1006): void {
    this.readyState = 3;
    this.onclose?.({ code, reason: '' });
  }
}

describe('RealtimeConnection liveness', () => {
  let calls: string[];
  let connection: RealtimeConnection;

  beforeEach(() => {
    vi.useFakeTimers();
    FakeSocket.made = [];
    calls = [];
    connection = new RealtimeConnection(
      'ws://svc.test/v1/ws',
      {
        welcome: () => calls.push('welcome'),
        message: (message) => calls.push(message.type),
        ended: (error) => calls.push(`ended ${error?.code ?? ''}`),
        open: () => calls.push('open'),
        lost: () => calls.push('lost'),
      },
      { now: () => Date.now(), WebSocket: FakeSocket as unknown as typeof WebSocket },
    );
  });
  afterEach(() => {
    connection.close();
    vi.useRealTimers();
  });

  it('pings a silent socket, then leaves it and connects again at once, ignoring its late close', () => {
    connection.open();
    const first = FakeSocket.made[0]!;
    first.welcomed();
    vi.advanceTimersByTime(HEARTBEAT_MS);
    expect(first.sent).toEqual(['{"type":"ping"}']);
    expect(FakeSocket.made).toHaveLength(1);

    vi.advanceTimersByTime(HEARTBEAT_MS);
    expect(first.closedWith).toBe(1000);
    expect(FakeSocket.made).toHaveLength(2);
    expect(calls).toEqual(['open', 'welcome', 'lost']);

    // The hung socket's close arrives much later: it changes nothing, and it sends nothing more.
    first.receives({ type: 'pong' });
    first.ends();
    expect(calls).toEqual(['open', 'welcome', 'lost']);
    expect(FakeSocket.made).toHaveLength(2);
    FakeSocket.made[1]!.welcomed();
    expect(connection.isOpen).toBe(true);
    expect(calls).toEqual(['open', 'welcome', 'lost', 'open', 'welcome']);
  });

  it('keeps a quiet socket whose pings are answered', () => {
    connection.open();
    const socket = FakeSocket.made[0]!;
    socket.welcomed();
    let answered = 0;
    for (let i = 0; i < 30; i++) {
      vi.advanceTimersByTime(HEARTBEAT_MS);
      if (socket.sent.length > answered) {
        answered = socket.sent.length;
        socket.receives({ type: 'pong' });
      }
    }
    expect(socket.sent.length).toBeGreaterThan(5);
    expect(FakeSocket.made).toHaveLength(1);
    expect(socket.closedWith).toBeNull();
  });

  it('gives up a handshake left unanswered for two periods of 15 s', () => {
    connection.open();
    vi.advanceTimersByTime(29_000);
    expect(FakeSocket.made).toHaveLength(1);
    vi.advanceTimersByTime(1_000);
    expect(FakeSocket.made).toHaveLength(2);
    expect(FakeSocket.made[0]!.sent).toEqual([]);
  });

  it('runs no timer after close(), after a final close code, and none but the backoff while disconnected', () => {
    connection.open();
    FakeSocket.made[0]!.welcomed();
    expect(vi.getTimerCount()).toBe(1);
    FakeSocket.made[0]!.ends(1006);
    // Only the reconnect's delay: no liveness check on a socket that is gone.
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(5_000);
    expect(FakeSocket.made).toHaveLength(2);
    FakeSocket.made[1]!.welcomed();
    connection.close();
    expect(vi.getTimerCount()).toBe(0);

    connection.open();
    FakeSocket.made[2]!.welcomed();
    FakeSocket.made[2]!.ends(4401);
    expect(calls.at(-1)).toBe('ended invalid_api_key');
    expect(vi.getTimerCount()).toBe(0);
  });
});
