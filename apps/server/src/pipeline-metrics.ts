import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { ConsumerLag, PipelineObserver, WriterBatchReport } from '@svc/storage';

/**
 * The figures of full cluster mode's pipeline on /metrics: this node's writer batches (rows and
 * ClickHouse insert time, reported by the writer thread), the lag of the shared JetStream
 * consumers (read at scrape time) and the round trip of the node's bus through NATS.
 */
export class PipelineMetrics implements PipelineObserver {
  private readonly writerBatchRows: Histogram;
  private readonly writerInsertSeconds: Histogram;
  private readonly busRoundTripSeconds: Histogram;
  private readonly busPingsLost: Counter;

  constructor(registry: Registry, readLag: () => Promise<ConsumerLag[]>) {
    const registers = [registry];
    this.writerBatchRows = new Histogram({
      name: 'svc_writer_batch_rows',
      help: "Rows (events and rejects) per batch this node's writer inserted into ClickHouse",
      buckets: [1, 10, 100, 1000, 5000, 10000, 25000, 50000, 100000],
      registers,
    });
    this.writerInsertSeconds = new Histogram({
      name: 'svc_writer_insert_duration_seconds',
      help: "Time ClickHouse took to insert one batch of this node's writer",
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.busRoundTripSeconds = new Histogram({
      name: 'svc_bus_round_trip_seconds',
      help: 'Time for a ping this node published on its bus connection (every 5 s) to come back through NATS',
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5],
      registers,
    });
    this.busPingsLost = new Counter({ name: 'svc_bus_pings_lost_total', help: "Pings of this node's bus not back within 30 s", registers });
    new Gauge({
      name: 'svc_jetstream_consumer_lag_messages',
      help: 'Messages a shared JetStream consumer has not finished (EVENTS/writer: events not yet in ClickHouse; WEBHOOKS/dispatcher: deliveries queued), by state (waiting, unacknowledged)',
      labelNames: ['stream', 'consumer', 'state'],
      registers,
      async collect() {
        this.reset();
        // JetStream away: no sample rather than a stale one (the scrape itself still answers).
        const lag = await readLag().catch(() => []);
        for (const { stream, consumer, waiting, unacknowledged } of lag) {
          this.set({ stream, consumer, state: 'waiting' }, waiting);
          this.set({ stream, consumer, state: 'unacknowledged' }, unacknowledged);
        }
      },
    });
  }

  writerBatch(batch: WriterBatchReport): void {
    this.writerBatchRows.observe(batch.rows);
    this.writerInsertSeconds.observe(batch.insertMs / 1000);
  }

  busRoundTrip(ms: number): void {
    this.busRoundTripSeconds.observe(ms / 1000);
  }

  busPingLost(): void {
    this.busPingsLost.inc();
  }
}
