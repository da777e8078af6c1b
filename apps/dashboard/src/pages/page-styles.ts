/** Styles of the Events, Broadcasts, Settings and Rejected pages, added once next to the shell's. */
const PAGES_CSS = `
.page-filters { display: grid; grid-template-columns: repeat(auto-fill, minmax(160px, 1fr)); gap: 8px 12px; align-items: end; margin-bottom: 12px; }
.page-filters label, .form-grid label { display: grid; gap: 2px; font-size: 13px; color: var(--muted); min-width: 0; }
.page-filters select, .page-filters input, .form-grid select, .form-grid input, .form-grid textarea { width: 100%; box-sizing: border-box; min-width: 0; color: inherit; }
.form-grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(220px, 1fr)); gap: 10px 12px; align-items: start; margin: 8px 0 12px; }
.form-grid .wide { grid-column: 1 / -1; }
.form-grid textarea { font: inherit; border: 1px solid var(--line); border-radius: 8px; padding: 6px 8px; min-height: 64px; background: inherit; }
/* --danger: the shell's red for text on its background (dark mode can set a lighter one). */
.field-error { color: var(--danger, #b4123c); font-size: 13px; }
[aria-invalid="true"] { border-color: var(--danger, #b4123c) !important; }
.event-types { position: relative; }
.event-types summary { cursor: pointer; border: 1px solid var(--line); border-radius: 8px; padding: 6px 8px; list-style: none; }
.event-types .choices { display: grid; grid-template-columns: repeat(auto-fill, minmax(200px, 1fr)); gap: 4px 12px; padding: 8px 0; }
.event-types label { display: flex; gap: 6px; align-items: center; color: inherit; font-size: 13px; }
.actions { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; margin: 8px 0; }
.data-table td, .data-table th { vertical-align: top; }
.data-table td.data { font-family: ui-monospace, monospace; font-size: 12px; white-space: normal; overflow-wrap: anywhere; max-width: none; }
.data-table td { overflow-wrap: anywhere; }
.figures { display: grid; grid-template-columns: repeat(auto-fill, minmax(130px, 1fr)); gap: 10px; margin: 8px 0; }
.figures .value { font-size: 22px; font-weight: 700; }
.figures .label { font-size: 13px; color: var(--muted); }
.badge { display: inline-block; border-radius: 999px; padding: 1px 8px; font-size: 12px; background: color-mix(in srgb, currentColor 12%, transparent); }
.badge.on { background: #ffe4ea; color: #9f1239; font-weight: 600; }
.broadcast-list { list-style: none; padding: 0; margin: 0; display: grid; gap: 8px; }
.broadcast-list li { display: flex; flex-wrap: wrap; gap: 6px 12px; align-items: center; border-bottom: 1px solid var(--line); padding-bottom: 8px; }
.broadcast-list .meta { color: var(--muted); font-size: 13px; overflow-wrap: anywhere; }
dialog.secret { background: Canvas; color: CanvasText; border: 1px solid var(--line); border-radius: 12px; padding: 18px; max-width: min(520px, calc(100vw - 32px)); box-sizing: border-box; }
dialog.secret code { display: block; overflow-wrap: anywhere; padding: 8px; border: 1px solid var(--line); border-radius: 8px; margin: 8px 0; }
.masked { font-family: ui-monospace, monospace; overflow-wrap: anywhere; }
.url-cell { overflow-wrap: anywhere; }
main section.panel + section.panel, main div > section.panel { margin-bottom: 16px; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
@media (max-width: 700px) {
  .data-table thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
  .data-table tr { display: block; border-bottom: 1px solid var(--line); padding: 6px 0; }
  .data-table td { display: grid; grid-template-columns: 96px minmax(0, 1fr); gap: 8px; border: 0; padding: 2px 0; }
  .data-table td::before { content: attr(data-label); color: var(--muted); font-size: 12px; }
}
`;

let added = false;

/** Adds the pages' styles to the document once. */
export function usePageStyles(): void {
  if (added) return;
  const style = document.createElement('style');
  style.dataset.pages = '';
  style.textContent = PAGES_CSS;
  document.head.append(style);
  added = true;
}
