/** Definitions of the overview's newer panels (docs/analytics.md), shown beside their titles. */
export const DEFINITIONS_EXTRA = {
  contests: 'Per contest (the contestId of contest.entered): entries = contest.entered events; entrants = viewers (userId, else sessionId) who entered. Ignores the sponsor filter.',
  revenueOverTime: 'Gross sales and orders per bucket of the viewer chart, per currency: each order (distinct orderId of checkout.completed) at the time of its first report.',
} as const;
