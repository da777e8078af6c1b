/** Styles of the overview's own parts (data tables, definitions, comparisons), added once. */
const OVERVIEW_CSS = `
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
.data-table { margin-top: 8px; font-size: 13px; }
.data-table summary { cursor: pointer; color: var(--muted); }
.data-table .scroll { max-height: 240px; overflow: auto; }
.poll-list h3 .muted { font-weight: 400; }
.panel h2 button.info { background: none; color: var(--muted); border: 1px solid var(--muted); border-radius: 50%; width: 24px; height: 24px; padding: 0; font-size: 12px; font-style: italic; }
.definition { font-size: 13px; color: var(--muted); margin: 0 0 8px; }
a.drill { color: inherit; }
.field-error { color: var(--error); font-size: 13px; margin-left: 4px; }
.delta { font-size: 12px; display: block; }
.panels > .panel.wide { grid-column: 1 / -1; }
.delta.up { color: var(--up); }
.delta.down { color: var(--error); }
`;

export function addOverviewStyles(): void {
  if (document.getElementById('overview-styles')) return;
  const style = document.createElement('style');
  style.id = 'overview-styles';
  style.textContent = OVERVIEW_CSS;
  document.head.append(style);
}
