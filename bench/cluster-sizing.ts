/** The sizing aim: events per second the whole cluster takes. */
export const TARGET_CLUSTER_EVENTS_PER_SECOND = 200_000;
/**
 * Share of one core a node's main thread is planned at: the event loop is one thread, so a node
 * tops out at one core of it, and requests queue well before that (latency grows first).
 */
export const MAIN_THREAD_PLANNED_SHARE = 0.7;

/** Measured CPU µs per acknowledged event, each part of the pipeline. */
export interface EventCosts {
  /** The Svc nodes' main threads, summed over the nodes. */
  nodeMainThreadMicros: number;
  /** The Svc nodes' whole processes (main thread, writer thread, GC, …), summed over the nodes. */
  nodeMicros: number;
  natsMicros: number;
  clickhouseMicros: number;
  postgresMicros: number;
  haproxyMicros: number;
}

export interface Sizing {
  eventsPerSecond: number;
  /** Svc nodes, each main thread planned at MAIN_THREAD_PLANNED_SHARE of a core. */
  nodes: number;
  /** Cores of all the nodes together (CPU seconds per second at that rate). */
  nodeCores: number;
  natsCores: number;
  clickhouseCores: number;
  postgresCores: number;
  haproxyCores: number;
}

/**
 * What a cluster needs for `eventsPerSecond` at the measured costs: cores are cost × rate; the
 * nodes are as many as keep each main thread at MAIN_THREAD_PLANNED_SHARE of a core (the costs
 * measured on a machine where everything shares two cores hold contention: an upper bound).
 */
export function sizeFor(costs: EventCosts, eventsPerSecond: number = TARGET_CLUSTER_EVENTS_PER_SECOND): Sizing {
  const cores = (micros: number) => (micros * eventsPerSecond) / 1e6;
  return {
    eventsPerSecond,
    nodes: Math.max(1, Math.ceil(cores(costs.nodeMainThreadMicros) / MAIN_THREAD_PLANNED_SHARE)),
    nodeCores: cores(costs.nodeMicros),
    natsCores: cores(costs.natsMicros),
    clickhouseCores: cores(costs.clickhouseMicros),
    postgresCores: cores(costs.postgresMicros),
    haproxyCores: cores(costs.haproxyMicros),
  };
}
