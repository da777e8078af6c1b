/** The colours of each theme; the dark one applies when the system asks for it, unless the user chose light. */
const LIGHT = 'color-scheme: light; --bg: #f6f5fb; --surface: #fff; --ink: #17152a; --muted: #5f5c74; --line: #e6e3f0; --field-line: #8e8aa6; --secondary: #ecebf5; --primary: #5b3df5; --accent: #4f32e0; --chart: #5b3df5; --live: #be123c; --error: #9f1239; --danger: #9f1239; --up: #047857;';
const DARK = 'color-scheme: dark; --bg: #121120; --surface: #1c1a2e; --ink: #ecebf5; --muted: #aaa7bf; --line: #2f2c45; --field-line: #6f6b8c; --secondary: #2f2c45; --primary: #5b3df5; --accent: #b3a8ff; --chart: #9d8cff; --live: #fb7185; --error: #fda4af; --danger: #fda4af; --up: #6ee7b7;';

export const DASHBOARD_CSS = `
:root { ${LIGHT} font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); background: var(--bg); }
@media (prefers-color-scheme: dark) { :root:not([data-theme="light"]) { ${DARK} } }
:root[data-theme="dark"] { ${DARK} }
body { margin: 0; }
header { display: flex; flex-wrap: wrap; align-items: center; gap: 8px 16px; padding: 12px 20px; background: var(--surface); border-bottom: 1px solid var(--line); }
header .brand { font-weight: 700; color: var(--accent); text-decoration: none; }
header .spacer { flex: 1; }
nav { display: flex; flex-wrap: wrap; gap: 4px 14px; }
nav a { color: var(--ink); text-decoration: none; padding: 6px 2px; }
nav a[aria-current="page"] { color: var(--accent); border-bottom: 2px solid var(--accent); }
a { color: var(--accent); }
a.button { background: var(--primary); color: #fff; border-radius: 8px; padding: 7px 12px; text-decoration: none; }
td.data { font-family: ui-monospace, monospace; font-size: 12px; max-width: 420px; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.list { list-style: none; padding: 0; margin: 0; display: grid; gap: 6px; }
.config { display: grid; grid-template-columns: minmax(0, 1fr); gap: 10px; max-width: 640px; }
.config label, .filters > label { min-width: 0; overflow-wrap: anywhere; }
main > .panel { margin-bottom: 16px; }
main { padding: 16px 20px 40px; max-width: 1280px; margin: 0 auto; }
button, select, input { font: inherit; }
button { background: var(--primary); color: #fff; border: 0; border-radius: 8px; padding: 7px 12px; cursor: pointer; }
button.secondary { background: var(--secondary); color: var(--ink); }
button:focus-visible, select:focus-visible, input:focus-visible, .info:focus-visible { outline: 3px solid #ffbf47; outline-offset: 1px; }
select, input { border: 1px solid var(--field-line); border-radius: 8px; padding: 6px 8px; background: var(--surface); color: var(--ink); max-width: 100%; box-sizing: border-box; }
.filters { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; margin-bottom: 16px; }
.presets { display: flex; gap: 4px; }
.toggle { display: flex; align-items: center; gap: 4px; }
.live-badge { color: var(--live); font-weight: 600; }
.live-switch { display: inline-flex; align-items: center; gap: 6px; cursor: pointer; }
.live-switch input { appearance: none; width: 34px; height: 20px; margin: 0; padding: 0; border-radius: 10px; background: var(--field-line); position: relative; cursor: pointer; border: 0; }
.live-switch input::after { content: ""; position: absolute; top: 3px; left: 3px; width: 14px; height: 14px; border-radius: 50%; background: #fff; transition: left 0.15s; }
.live-switch input:checked { background: var(--live); }
.live-switch input:checked::after { left: 17px; }
.live-dot { width: 8px; height: 8px; border-radius: 50%; background: var(--live); display: none; }
.live-switch input:checked ~ .live-dot { display: inline-block; }
[aria-busy="true"] { opacity: 0.6; transition: opacity 0.2s 0.15s; }
.loading { padding: 40px 0; text-align: center; color: var(--muted); }
.loading::before { content: ""; display: block; height: 3px; margin: 0 auto 12px; max-width: 240px; border-radius: 2px; background: linear-gradient(90deg, transparent, var(--accent), transparent); background-size: 200% 100%; animation: svc-loading 1.2s linear infinite; }
@keyframes svc-loading { from { background-position: 100% 0; } to { background-position: -100% 0; } }
@media (prefers-reduced-motion: reduce) { .loading::before { animation: none; } [aria-busy="true"] { transition: none; } }
.panels { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(380px, 100%), 1fr)); gap: 16px; }
.panel { background: var(--surface); border: 1px solid var(--line); border-radius: 12px; padding: 14px 16px; min-width: 0; }
.panel h2 { font-size: 15px; margin: 0 0 10px; display: flex; gap: 6px; align-items: center; }
.panel h3 { font-size: 13px; margin: 10px 0 4px; color: var(--muted); }
.info { display: inline-flex; align-items: center; justify-content: center; width: 16px; height: 16px; border-radius: 50%; border: 1px solid var(--muted); color: var(--muted); cursor: help; font-size: 11px; font-weight: 600; font-style: italic; }
.scroll { overflow-x: auto; }
.stats { display: flex; flex-wrap: wrap; gap: 20px; }
.stat .value { font-size: 26px; font-weight: 700; }
.stat .label { color: var(--muted); font-size: 13px; }
.chart { height: 220px; }
.chart.small { height: 160px; }
.chart.bars { height: auto; }
.line-chart { position: relative; height: 100%; padding: 4px 8px 22px 44px; box-sizing: border-box; }
.plot-area { position: relative; height: 100%; }
.line-plot { display: block; width: 100%; height: 100%; overflow: visible; }
.line-plot .grid-line { stroke: var(--line); stroke-width: 1; vector-effect: non-scaling-stroke; }
.line-plot .line { fill: none; stroke: currentColor; stroke-width: 2; vector-effect: non-scaling-stroke; }
.line-plot .area { fill: currentColor; fill-opacity: 0.15; stroke: none; }
.y-labels { position: absolute; left: 0; top: 4px; bottom: 22px; width: 38px; }
.y-labels span, .x-labels span { position: absolute; font-size: 11px; color: var(--muted); white-space: nowrap; }
.y-labels span { right: 0; transform: translateY(-50%); }
.x-labels { position: absolute; left: 44px; right: 8px; bottom: 0; height: 18px; }
.cursor { position: absolute; top: 0; bottom: 0; width: 1px; background: var(--muted); pointer-events: none; }
.chart-tip { position: absolute; top: -4px; background: var(--ink); color: var(--surface); font-size: 12px; padding: 3px 6px; border-radius: 6px; white-space: nowrap; pointer-events: none; }
.bar-chart { list-style: none; margin: 0; padding: 0; display: grid; grid-template-columns: minmax(0, max-content) minmax(40px, 1fr) auto; gap: 4px 8px; align-items: center; font-size: 13px; }
.bar-chart li { display: contents; }
.bar-label { overflow-wrap: anywhere; max-width: 16em; }
.bar-track { display: block; height: 14px; }
.bar { display: block; height: 100%; min-width: 2px; border-radius: 3px; }
.bar-value { font-variant-numeric: tabular-nums; }
table { width: 100%; border-collapse: collapse; font-size: 13px; }
th, td { text-align: left; padding: 6px 4px; border-bottom: 1px solid var(--line); }
.muted { color: var(--muted); }
.empty, .error { background: var(--surface); border: 1px dashed var(--line); border-radius: 12px; padding: 32px; text-align: center; grid-column: 1 / -1; }
.error { border-color: var(--live); color: var(--error); }
.steps { margin: 8px 0 0; padding-left: 18px; color: var(--muted); font-size: 13px; }
.login { max-width: 380px; margin: 12vh auto; background: var(--surface); border: 1px solid var(--line); border-radius: 14px; padding: 24px; }
.login input { width: 100%; box-sizing: border-box; margin: 8px 0 12px; }
.login .error { padding: 8px; text-align: left; margin-bottom: 8px; }
.not-found { max-width: 560px; margin: 10vh auto; text-align: center; }
.not-found h1 { font-size: 28px; margin: 0 0 8px; }
@media (max-width: 820px) { .panels { grid-template-columns: 1fr; } main { padding: 12px; } header { padding: 10px 12px; } header .tenant { display: none; } nav { order: 10; width: 100%; } th, td { overflow-wrap: anywhere; } }
`;
