import { existsSync } from 'node:fs';
import { NATS_SERVER_BIN } from '@svc/engines';

export { NATS_SERVER_BIN, startNats, startNatsCluster, type NatsCluster, type NatsServer } from '@svc/engines';

/**
 * Whether NATS tests can run. In CI a missing server is a failure, never a skip; locally the
 * tests skip with a clear message.
 */
export function natsAvailable(): boolean {
  if (existsSync(NATS_SERVER_BIN)) return true;
  const missing = `${NATS_SERVER_BIN} is missing`;
  if (process.env.CI) throw new Error(`${missing}: .ci/run must install Debian's nats-server package.`);
  console.warn(`Skipping NATS tests: ${missing} (apt-get install nats-server).`);
  return false;
}
