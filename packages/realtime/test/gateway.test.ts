import { afterEach, describe, expect, it } from 'vitest';
import type { Overlay } from '@svc/protocol';
import type { Interaction, OverlayRecord } from '@svc/storage';
import { DEFAULT_GATEWAY_OPTIONS } from '../src';
import { BUS_KINDS, busesOf } from './gateway-buses';
import { pollRecord, startGateway, type Harness, type Message, type Viewer } from './gateway-harness';

const THROTTLE_MS = 1_000;
const tick = () => new Promise<void>((resolve) => setImmediate(resolve));
const socketOf = (viewer: { ws: unknown }) => (viewer.ws as { _socket: { pause(): void; resume(): void } })._socket;

/** A shown lineup of about 32 KB whose title starts with `n:`. */
function bigUpdate(n: number): Overlay {
  const now = new Date(0).toISOString();
  // Each update stored after the one before (rooms drop one that is not later).
  return { type: 'lineup', items: [{ title: `${n}:${'x'.repeat(32 * 1024)}` }], id: 'big', broadcastId: 'b', active: true, createdAt: now, updatedAt: new Date(n).toISOString(), shownAt: now };
}
const updateNumber = (m: Message) => Number(String((m.overlay as { items: Array<{ title: string }> }).items[0]!.title).split(':')[0]);

describe.each(BUS_KINDS)('gateway on %s', (kind) => {
  const buses = busesOf(kind);
  let h: Harness;
  afterEach(async () => {
    await h.close();
  });

  it('skips throttled updates for a viewer that stops reading, then closes it with 4429 slow_consumer, while the others keep receiving', async () => {
    // The documented limits: 64 KB before throttled updates are skipped, 1 MB before the close.
    expect(DEFAULT_GATEWAY_OPTIONS).toMatchObject({ softBufferBytes: 64 * 1024, hardBufferBytes: 1024 * 1024 });
    const { softBufferBytes, hardBufferBytes } = DEFAULT_GATEWAY_OPTIONS;
    h = await startGateway({ throttleMs: THROTTLE_MS }, [], [], await buses());
    const slow = await h.join('svc_slow');
    const watcher = await h.join('svc_watcher');
    h.timers.advance(THROTTLE_MS);
    await watcher.next((m) => m.type === 'viewers' && m.count === 2);
    await slow.next((m) => m.type === 'viewers' && m.count === 2);
    socketOf(slow).pause();

    const server = h.connectionOf('svc_slow')!;
    let sent = 0;
    const push = () => h.publish('b', { kind: 'update', overlay: bigUpdate(++sent) });
    // Fill the kernel's buffers until the gateway itself holds more than the soft limit.
    while (server.ws.bufferedAmount <= softBufferBytes) {
      await push();
      await tick();
      if (sent > 2_000) throw new Error('the slow viewer never fell behind');
    }
    expect(server.ws.bufferedAmount).toBeLessThan(hardBufferBytes);

    // A throttled update while it lags: the others get it, the slow viewer does not.
    const third = await h.join('svc_third');
    h.timers.advance(THROTTLE_MS);
    await watcher.next((m) => m.type === 'viewers' && m.count === 3);
    await third.settle();
    // Overlay changes are never skipped.
    await push();
    const lastBeforeHardLimit = sent;
    expect(server.ws.readyState).toBe(server.ws.OPEN);

    while (server.ws.readyState === server.ws.OPEN) {
      await push();
      await tick();
      if (sent > 2_000) throw new Error('the slow viewer was never closed');
    }
    // The update that found more than 1 MB waiting closed the socket instead of being queued.
    const lastQueued = sent - 1;

    await watcher.next((m) => m.type === 'overlay.update' && updateNumber(m) === sent, 10_000);
    // The first brought the overlay on screen: a show; the others are updates.
    const changesTo = (viewer: typeof watcher) => [...viewer.ofType('overlay.show'), ...viewer.ofType('overlay.update')];
    expect(watcher.ofType('overlay.show').map(updateNumber)).toEqual([1]);
    expect(changesTo(watcher).map(updateNumber)).toEqual(Array.from({ length: sent }, (_, i) => i + 1));
    expect(await watcher.request({ type: 'ping' })).toMatchObject({ type: 'pong' });

    socketOf(slow).resume();
    expect(await slow.closed).toEqual({ code: 4429, reason: 'slow_consumer' });
    const received = changesTo(slow).map(updateNumber);
    expect(received).toEqual(Array.from({ length: lastQueued }, (_, i) => i + 1));
    expect(received).toContain(lastBeforeHardLimit);
    expect(slow.ofType('viewers').map((m) => m.count)).toEqual([1, 2]);
    // Once its socket has closed, the slow viewer no longer counts.
    for (let i = 0; i < 100 && (await h.gateway.viewerCount(1, 'b')) !== 2; i++) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await h.gateway.viewerCount(1, 'b')).toBe(2);
  });

  it("keeps off viewers' screens an overlay whose hide, stored after its show, arrived first, and one deleted before its show arrived", async () => {
    h = await startGateway({ throttleMs: THROTTLE_MS }, [], [], await buses());
    const viewer = await h.join('svc_viewer');
    const lineup = (id: string, updatedMs: number) => ({ type: 'lineup', items: [], id, broadcastId: 'b', active: true, createdAt: new Date(0).toISOString(), updatedAt: new Date(updatedMs).toISOString(), shownAt: new Date(1).toISOString() }) as Overlay;
    // Created since the room opened: shown through one node (stored at 2), hidden through another (at 3).
    await h.publish('b', { kind: 'hide', overlayId: 'late', updatedAt: new Date(3).toISOString() });
    await h.publish('b', { kind: 'show', overlay: lineup('late', 2) });
    await h.publish('b', { kind: 'hide', overlayId: 'gone', deleted: true });
    await h.publish('b', { kind: 'show', overlay: lineup('gone', 2) });
    // A change after them all, in order: the viewer has it and nothing before.
    await h.publish('b', { kind: 'show', overlay: lineup('marker', 1) });
    await viewer.next((m) => m.type === 'overlay.show');
    expect(viewer.messages.filter((m) => m.message.type.startsWith('overlay.')).map((m) => (m.message.overlay as Overlay).id)).toEqual(['marker']);
    expect(((await h.join('svc_later')).ofType('welcome')[0]!.overlays as Overlay[]).map((o) => o.id)).toEqual(['marker']);
  });

  it('sends poll.results at most once per throttle interval, and nothing while they are unchanged', async () => {
    h = await startGateway({ throttleMs: THROTTLE_MS }, [pollRecord('poll-1')], [], await buses());
    const voters: Viewer[] = [];
    for (let i = 0; i < 5; i++) voters.push(await h.join(`svc_voter${i}`));
    const watcher = voters[0]!;
    const vote = async (i: number) => expect(await voters[i]!.request({ type: 'poll.vote', pollId: 'poll-1', optionIndex: i % 2 })).toMatchObject({ type: 'ack' });
    const results = () => watcher.messages.filter((m) => m.message.type === 'poll.results');

    // After a quiet interval, the first change goes out at once.
    await vote(0);
    await watcher.next((m) => m.type === 'poll.results' && m.total === 1);
    // Changes inside the interval wait for its end and go out together.
    h.timers.advance(100);
    await vote(1);
    h.timers.advance(100);
    await vote(2);
    h.timers.advance(THROTTLE_MS - 201);
    await watcher.settle();
    expect(results()).toHaveLength(1);
    h.timers.advance(1);
    await watcher.next((m) => m.type === 'poll.results' && m.total === 3);

    // Unchanged results are not sent again, however long.
    for (let i = 0; i < 5; i++) h.timers.advance(THROTTLE_MS);
    await watcher.settle();
    expect(results()).toHaveLength(2);

    await vote(3);
    await watcher.next((m) => m.type === 'poll.results' && m.total === 4);
    h.timers.advance(THROTTLE_MS / 2);
    await vote(4);
    h.timers.advance(THROTTLE_MS / 2);
    await watcher.next((m) => m.type === 'poll.results' && m.total === 5);
    h.timers.advance(3 * THROTTLE_MS);
    await watcher.settle();

    expect(results().map((m) => m.message)).toEqual([
      { type: 'poll.results', pollId: 'poll-1', counts: [1, 0], total: 1 },
      { type: 'poll.results', pollId: 'poll-1', counts: [2, 1], total: 3 },
      { type: 'poll.results', pollId: 'poll-1', counts: [2, 2], total: 4 },
      { type: 'poll.results', pollId: 'poll-1', counts: [3, 2], total: 5 },
    ]);
    const times = results().map((m) => m.at);
    for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(THROTTLE_MS);
  });

  it('sends the results of a poll shown again once, not a second time when the throttle interval ends', async () => {
    h = await startGateway({ throttleMs: THROTTLE_MS }, [pollRecord('poll-1')], [], await buses());
    const first = await h.join('svc_first');
    const second = await h.join('svc_second');
    await first.request({ type: 'poll.vote', pollId: 'poll-1', optionIndex: 0 });
    await first.next((m) => m.type === 'poll.results' && m.total === 1);
    h.timers.advance(100);
    await second.request({ type: 'poll.vote', pollId: 'poll-1', optionIndex: 1 });
    const poll = { ...pollRecord('poll-1').content, id: 'poll-1', broadcastId: 'b', active: true, createdAt: new Date(0).toISOString(), updatedAt: new Date(2).toISOString() } as Overlay;
    await h.publish('b', { kind: 'hide', overlayId: 'poll-1', updatedAt: new Date(1).toISOString() });
    await h.publish('b', { kind: 'show', overlay: poll });
    await first.next((m) => m.type === 'poll.results' && m.total === 2);
    h.timers.advance(THROTTLE_MS);
    await first.settle();
    expect(first.ofType('poll.results').map((m) => m.counts)).toEqual([
      [1, 0],
      [1, 1],
    ]);
  });

  it('rebuilds a room from the votes and entries stored before it was loaded', async () => {
    const stored = (kind: 'vote' | 'entry', overlayId: string, viewer: string, optionIndex: number | null): Interaction => ({
      kind, overlayId, viewer, eventId: `${viewer}-${overlayId}`, sessionId: viewer, userId: null, timestampMs: 0, receivedAtMs: 0,
      optionIndex, optionSelected: optionIndex === null ? null : ['Yes', 'No'][optionIndex]!,
    });
    const contest: OverlayRecord = { ...pollRecord('contest-1'), type: 'contest', content: { type: 'contest', title: 'Win' } };
    h = await startGateway({ throttleMs: THROTTLE_MS }, [pollRecord('poll-1'), contest], [
      stored('vote', 'poll-1', 'svc_earlier', 1),
      stored('vote', 'poll-1', 'svc_voter', 0),
      stored('entry', 'contest-1', 'svc_voter', null),
    ], await buses());
    const viewer = await h.join('svc_voter');
    expect(viewer.ofType('welcome')[0]).toMatchObject({ pollResults: [{ pollId: 'poll-1', counts: [1, 1], total: 2 }] });
    expect(await viewer.request({ type: 'poll.vote', pollId: 'poll-1', optionIndex: 1 })).toMatchObject({ type: 'error', code: 'already_voted' });
    expect(await viewer.request({ type: 'contest.enter', contestId: 'contest-1' })).toMatchObject({ type: 'error', code: 'already_entered' });
  });

  it('rebuilds a room with the stored entries of its contests only', async () => {
    const entry = (overlayId: string): Interaction => ({
      kind: 'entry', overlayId, viewer: 'svc_entrant', eventId: `e-${overlayId}`, sessionId: 'svc_entrant', userId: null, timestampMs: 0, receivedAtMs: 0, optionIndex: null, optionSelected: null,
    });
    const contest: OverlayRecord = { ...pollRecord('contest-1'), type: 'contest', content: { type: 'contest', title: 'Win' } };
    h = await startGateway({ throttleMs: THROTTLE_MS }, [pollRecord('poll-1'), contest], [entry('contest-1'), entry('poll-1'), entry('bogus_1'), entry('bogus_2')], await buses());
    const entrant = await h.join('svc_entrant');
    expect(entrant.ofType('welcome')[0]).toMatchObject({ viewer: { contests: ['contest-1'] } });
  });

  it('knows the broadcasts whose room is open on it, per tenant', async () => {
    h = await startGateway({ throttleMs: THROTTLE_MS }, [], [], await buses());
    expect(h.gateway.hasRoom(1, 'b')).toBe(false);
    await h.join('svc_viewer');
    expect(h.gateway.hasRoom(1, 'b')).toBe(true);
    expect(h.gateway.hasRoom(1, 'other')).toBe(false);
    expect(h.gateway.hasRoom(2, 'b')).toBe(false);
  });

  it('corrects the count a viewer was welcomed with, even when the count returns to the last one sent within the interval', async () => {
    h = await startGateway({ throttleMs: THROTTLE_MS }, [], [], await buses());
    const first = await h.join('svc_first');
    await first.next((m) => m.type === 'viewers' && m.count === 1);
    // Inside one interval: a second viewer joins (welcomed with 2), then the first leaves.
    const second = await h.join('svc_second');
    expect(second.ofType('welcome')[0]).toMatchObject({ viewers: 2 });
    first.ws.close();
    for (let i = 0; i < 100 && (await h.gateway.viewerCount(1, 'b')) !== 1; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    h.timers.advance(THROTTLE_MS);
    expect(await second.next((m) => m.type === 'viewers')).toEqual({ type: 'viewers', count: 1 });
  });
});
