import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { CommitObserver, EventSource, IngestObserver } from '@svc/ingest';
import type { PurgeObserver, PurgeReport } from '@svc/lifecycle';
import type { ConnectionRefusal } from '@svc/realtime';
import type { EventPipeline } from '@svc/storage';
import type { DispatchObserver } from '@svc/webhooks';
import { PipelineMetrics } from './pipeline-metrics';

/**
 * Prometheus metrics of one server; a registry per instance so tests can run several. Every
 * sample carries the label `node` (SVC_NODE_ID), so that one Prometheus server tells a
 * cluster's nodes apart whatever its scrape configuration.
 */
export class ServerMetrics implements IngestObserver, CommitObserver, PurgeObserver, DispatchObserver {
  readonly registry = new Registry();
  private readonly acceptedTotal: Counter<'source'>;
  private readonly duplicateTotal: Counter;
  private readonly rejectedTotal: Counter<'code'>;
  private readonly commitSeconds: Histogram;
  private readonly commitEvents: Histogram;
  readonly httpSeconds: Histogram<'method' | 'route' | 'status'>;
  private readonly purgedTotal: Counter<'kind'>;
  private readonly purgeFailures: Counter;
  private readonly webhookAttempts: Counter<'outcome'>;
  private readonly webhookSeconds: Histogram;
  private readonly webhookQueue: Gauge;
  private readonly realtimeRefusedTotal: Counter<'reason'>;

  /** `nodeId`: the value of the label `node` on every sample; none when unset. */
  constructor(nodeId?: string) {
    const registers = [this.registry];
    if (nodeId) this.registry.setDefaultLabels({ node: nodeId });
    collectDefaultMetrics({ register: this.registry, prefix: 'svc_' });
    this.acceptedTotal = new Counter({ name: 'svc_events_accepted_total', help: 'Events stored', labelNames: ['source'], registers });
    this.duplicateTotal = new Counter({ name: 'svc_events_duplicate_total', help: 'Events acknowledged as already stored', registers });
    this.rejectedTotal = new Counter({ name: 'svc_events_rejected_total', help: 'Events rejected and quarantined', labelNames: ['code'], registers });
    this.commitSeconds = new Histogram({
      name: 'svc_commit_duration_seconds',
      help: 'Time to durably commit one group of events',
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    });
    this.commitEvents = new Histogram({
      name: 'svc_commit_events',
      help: 'Events per group commit',
      buckets: [1, 10, 100, 500, 1000, 2500, 5000, 10000, 20000],
      registers,
    });
    this.httpSeconds = new Histogram({
      name: 'svc_http_request_duration_seconds',
      help: 'HTTP request duration by route',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5],
      registers,
    });
    this.purgedTotal = new Counter({ name: 'svc_retention_purged_total', help: 'Rows removed by retention', labelNames: ['kind'], registers });
    this.purgeFailures = new Counter({ name: 'svc_retention_failures_total', help: 'Retention passes that failed', registers });
    this.webhookAttempts = new Counter({
      name: 'svc_webhook_attempts_total',
      help: 'Webhook delivery attempts by outcome (delivered, retry, failed)',
      labelNames: ['outcome'],
      registers,
    });
    this.webhookSeconds = new Histogram({
      name: 'svc_webhook_delivery_seconds',
      help: 'Time for a receiver to answer a delivery',
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15],
      registers,
    });
    this.webhookQueue = new Gauge({ name: 'svc_webhook_queue_depth', help: 'Webhook deliveries waiting to be sent', registers });
    this.realtimeRefusedTotal = new Counter({
      name: 'svc_ws_refused_total',
      help: 'WebSocket upgrades refused (upgrade_rate, address_connections: HTTP 429; address_share, tenant_connections: 1013) and sockets closed for their message rate (message_rate: 4429)',
      labelNames: ['reason'],
      registers,
    });
  }

  /** Full cluster mode: the pipeline's figures (writer batches, consumer lag, bus round trip; see PipelineMetrics). */
  watchPipeline(pipeline: EventPipeline): void {
    const observer = new PipelineMetrics(this.registry, () => pipeline.consumerLag());
    pipeline.observe(observer);
  }

  /** Reports at every scrape the WebSocket connections open on this node. */
  watchWebSocketConnections(read: () => number): void {
    new Gauge({
      name: 'svc_ws_connections',
      help: 'WebSocket connections open on this node (a viewer holds one; an upgrade being refused counts until its socket closes)',
      registers: [this.registry],
      collect() {
        this.set(read());
      },
    });
  }

  attempted(outcome: 'delivered' | 'retry' | 'failed', latencyMs: number): void {
    this.webhookAttempts.inc({ outcome });
    this.webhookSeconds.observe(latencyMs / 1000);
  }

  /** Reports the database's own memory (buffer cache included) at every scrape. */
  watchDatabaseMemory(read: () => Promise<number>): void {
    new Gauge({
      name: 'svc_database_memory_bytes',
      help: 'Memory held by the embedded database, its cache of the data file included',
      registers: [this.registry],
      async collect() {
        this.set(await read().catch(() => Number.NaN));
      },
    });
  }

  /** Reports at every scrape how many writes the storage refused (full disk, read-only folder). */
  watchRefusedWrites(read: () => number): void {
    this.countedAtScrape(
      'svc_storage_refused_writes_total',
      'Writes the storage refused (full disk, read-only folder, size limit); each was answered 503 storage_unavailable or retried',
      read,
    );
  }

  realtimeRefused(reason: ConnectionRefusal): void {
    this.realtimeRefusedTotal.inc({ reason });
  }

  /** Reports at every scrape how many stored rows were set aside because a reader could not decode them. */
  watchUndecodableRows(read: () => number): void {
    this.countedAtScrape(
      'svc_undecodable_rows_total',
      'Stored rows a reader could not decode (e.g. JSON with a lone surrogate from an older version); each was set aside, logged once with its id, and skipped',
      read,
    );
  }

  /** A counter whose value a component keeps itself, read at every scrape. */
  private countedAtScrape(name: string, help: string, read: () => number): void {
    new Counter({
      name,
      help,
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc(read());
      },
    });
  }

  queueDepth(depth: number): void {
    this.webhookQueue.set(depth);
  }

  purged(report: PurgeReport): void {
    this.purgedTotal.inc({ kind: 'event' }, report.events);
    this.purgedTotal.inc({ kind: 'reject' }, report.rejects);
    this.purgedTotal.inc({ kind: 'delivery' }, report.deliveries);
  }

  failed(): void {
    this.purgeFailures.inc();
  }

  accepted(source: EventSource, count: number): void {
    if (count) this.acceptedTotal.inc({ source }, count);
  }

  duplicates(count: number): void {
    this.duplicateTotal.inc(count);
  }

  rejected(code: string): void {
    this.rejectedTotal.inc({ code });
  }

  committed(durationSeconds: number, events: number): void {
    this.commitSeconds.observe(durationSeconds);
    this.commitEvents.observe(events);
  }
}
