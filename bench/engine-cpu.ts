import { readdirSync, readFileSync } from 'node:fs';
import { cpuSeconds } from './processes';

/**
 * Processes started by this benchmark process (its direct children) whose command name starts
 * with `name` (`nats-server`, `clickhouse-serv`, `postgres`): the engines' pids, for their CPU.
 */
export function childPids(name: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const command = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (parent === process.pid && command.startsWith(name)) pids.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return pids;
}

/** CPU seconds used so far by the given processes together. */
export function totalCpuSeconds(pids: number[]): number {
  return pids.reduce((sum, pid) => sum + (cpuSeconds(pid) || 0), 0);
}
