import type { BodySource } from './load';

/**
 * The bodies with the time they are sent as `sentAt` and every event's `timestamp`, as a live
 * SDK sends them: the pool is built before the run, and events all stamped with the pool's few
 * seconds would make every writer batch's stored-id lookup read all the events stored so far.
 */
export class FreshTimestampBodies implements BodySource {
  constructor(private readonly inner: BodySource) {}
  get eventsPerBody() {
    return this.inner.eventsPerBody;
  }
  next(): Buffer {
    const body = this.inner.next().toString();
    // `{"sentAt":"2026-11-25T17:00:00.000Z",…`: every event carries the same text as its timestamp.
    const stamped = body.slice(11, 35);
    return Buffer.from(body.replaceAll(stamped, new Date().toISOString()));
  }
}
