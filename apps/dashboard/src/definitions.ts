/** The metric definitions of DESIGN section 7, shown as tooltips. */
export const DEFINITIONS = {
  viewers:
    'Live: sessions connected to the broadcast now. History: sessions watching in each interval (a session lasts from broadcast.joined to broadcast.left or its last sign of life). Unique viewers count userId, else sessionId, of sessions that joined. Ignores the sponsor filter.',
  engagement:
    'Viewers with at least one of poll.voted, contest.entered, sponsor_moment.tapped or product.tapped, divided by viewers with broadcast.joined. A viewer is the userId, else the sessionId. Ignores the sponsor filter.',
  polls: 'Votes and share per option of each poll of the service; a vote counts only with an option and label of its poll, once per session and per user (the first). Ignores the sponsor filter.',
  sponsors:
    'Per sponsor and broadcast: impressions (sponsor_moment.viewed), taps, tap rate, conversion = sessions with a checkout.completed carrying the sponsor ÷ sessions with an impression of it, and revenue of its orders.',
  revenue: 'Gross sales = sum of total over distinct orderId of checkout.completed; orders; average order value; items per order; per currency.',
  funnel: 'Sessions reaching product.viewed → cart.item_added → checkout.started → checkout.completed, each step after the one before.',
} as const;
