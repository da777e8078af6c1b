import { barChart } from '../charts';
import { h } from '../dom';
import { dataTable } from './data-table';
import { format } from './format';

export interface PollView {
  pollId: string;
  broadcastId: string;
  createdAt: string;
  question: string;
  totalVotes: number;
  options: Array<{ optionIndex: number; option: string; votes: number; share: number }>;
}

/** Polls shown before "Show all": the rest stay one click away. */
export const POLLS_SHOWN = 6;

/**
 * The poll results, newest first as the API lists them: each question with its broadcast's
 * title (two polls may ask the same question), its votes and one bar per option with its share.
 */
export function pollResults(polls: PollView[], broadcastLink: (id: string) => HTMLElement, color: string, showAll = false): HTMLElement {
  const list = h('div', { class: 'poll-list' });
  const shown = showAll ? polls : polls.slice(0, POLLS_SHOWN);
  for (const poll of shown) {
    const box = h('div', { class: 'chart small' });
    list.append(
      h('h3', { 'data-testid': 'poll-question' }, poll.question, ' ', h('span', { class: 'muted' }, '· ', broadcastLink(poll.broadcastId), ` · ${format.count(poll.totalVotes, 'vote', 'votes')}`)),
      box,
      dataTable(`Votes for "${poll.question}"`, ['Option', 'Votes', 'Share'], poll.options.map((o) => [o.option, format.int(o.votes), format.pct(o.share)]), `poll-table-${poll.pollId}`),
    );
    barChart(box, poll.options.map((o) => `${o.option} ${format.pct(o.share)}`), poll.options.map((o) => o.votes), color);
  }
  if (polls.length > shown.length) {
    const more = h('button', { type: 'button', class: 'secondary' }, `Show all ${format.int(polls.length)} polls`);
    more.addEventListener('click', () => list.replaceWith(pollResults(polls, broadcastLink, color, true)));
    list.append(more);
  }
  return list;
}
