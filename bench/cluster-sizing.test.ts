import { describe, expect, it } from 'vitest';
import { MAIN_THREAD_PLANNED_SHARE, sizeFor, TARGET_CLUSTER_EVENTS_PER_SECOND, type EventCosts } from './cluster-sizing';

const measured: EventCosts = {
  nodeMainThreadMicros: 25,
  nodeMicros: 42.6,
  natsMicros: 19.7,
  clickhouseMicros: 20.2,
  postgresMicros: 0.1,
  haproxyMicros: 1.1,
};

describe('sizeFor', () => {
  it('turns CPU µs per event into cores at 200,000 events/s by default', () => {
    const sizing = sizeFor(measured);
    expect(sizing.eventsPerSecond).toBe(TARGET_CLUSTER_EVENTS_PER_SECOND);
    expect(sizing.nodeCores).toBeCloseTo(8.52, 6);
    expect(sizing.natsCores).toBeCloseTo(3.94, 6);
    expect(sizing.clickhouseCores).toBeCloseTo(4.04, 6);
    expect(sizing.postgresCores).toBeCloseTo(0.02, 6);
    expect(sizing.haproxyCores).toBeCloseTo(0.22, 6);
  });

  it('plans each node by its main thread: 5 cores of event loop at 70% of a core make 8 nodes', () => {
    expect(sizeFor(measured).nodes).toBe(8);
  });

  it('adds a node only once a main thread would pass its planned share of a core', () => {
    const atShare = (MAIN_THREAD_PLANNED_SHARE * 1e6) / 100_000;
    expect(sizeFor({ ...measured, nodeMainThreadMicros: atShare }, 100_000).nodes).toBe(1);
    expect(sizeFor({ ...measured, nodeMainThreadMicros: atShare * 1.01 }, 100_000).nodes).toBe(2);
  });

  it('needs at least one node however small the rate', () => {
    expect(sizeFor(measured, 1).nodes).toBe(1);
  });
});
