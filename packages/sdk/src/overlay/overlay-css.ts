/**
 * Styles of the overlay's shadow root. The frame's `data-mode` (from the layout model) picks
 * the regions; regions never overlap, scroll inside themselves and keep the middle free.
 * Colours come from the theme through custom properties set by the element (contrast-checked).
 */
export const OVERLAY_CSS = `
:host { position: absolute; inset: 0; pointer-events: none; z-index: 10; font: 15px/1.35 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  --svc-primary: #5b3df5; --svc-on-primary: #fff; --svc-accent-light: #5b3df5; --svc-accent-dark: #9d8cff;
  --card: #fff; --ink: #14121f; --muted: #55516a; --track: #ebe9f2; --accent: var(--svc-accent-light); --edge: transparent; --shadow: 0 6px 24px rgba(0,0,0,.3); color-scheme: light; }
@media (prefers-color-scheme: dark) { :host { --card: #1d1b29; --ink: #f4f3fa; --muted: #bdb9cf; --track: #34314a; --accent: var(--svc-accent-dark); --edge: rgba(255,255,255,.16); color-scheme: dark; } }
* { box-sizing: border-box; }
[hidden] { display: none !important; }
.frame { position: absolute; inset: 0; padding: 12px; }
.north, .south, .west, .east, .aside, .sheet { display: flex; flex-direction: column; gap: 8px; min-width: 0; min-height: 0; }
.north, .south, .west, .east { overflow: auto; overscroll-behavior: contain; scrollbar-width: thin; }
.north > *, .south > *, .west > *, .east > *, .aside > *, .sheet > * { flex-shrink: 0; }
.frame[data-mode=portrait], .frame[data-mode=compact] { display: flex; flex-direction: column; gap: 8px; }
.frame[data-mode=portrait] .north { flex: 0 1 auto; max-height: 40%; }
.frame[data-mode=portrait] .middle { flex: 1 0 12px; }
.frame[data-mode=portrait] .south { flex: 0 1 auto; max-height: calc(50% - 16px); }
.frame[data-mode=compact] { padding: 8px; gap: 6px; }
.frame[data-mode=compact] .north { flex: 0 1 auto; max-height: 36%; }
.frame[data-mode=compact] .middle { flex: 1 1 0; }
.frame[data-mode=compact] .south { flex: 0 1 auto; max-height: 60%; }
.frame[data-mode=compact] .options { grid-auto-flow: column; grid-auto-columns: max-content; grid-template-columns: none; overflow-x: auto; }
.frame[data-mode=compact] h3 { font-size: 15px; margin-bottom: 6px; }
.frame[data-mode=portrait] .west, .frame[data-mode=portrait] .east, .frame[data-mode=compact] .west, .frame[data-mode=compact] .east { display: none; }
.frame[data-mode=wide] { display: grid; padding: 16px; gap: 12px; grid-template-columns: minmax(0, min(30%, 360px)) minmax(0, 1fr) minmax(0, min(28%, 320px));
  grid-template-rows: auto minmax(0, 1fr); grid-template-areas: "north north east" "west middle east"; }
.frame[data-mode=wide] .north { grid-area: north; max-height: calc(var(--h, 600px) * .24); }
.frame[data-mode=wide] .west { grid-area: west; }
.frame[data-mode=wide] .east { grid-area: east; }
.frame[data-mode=wide] .middle { grid-area: middle; }
.frame[data-mode=wide] .south { display: none; }
.frame[data-panel] .south > :not(.panel), .frame[data-panel] .east > .aside { display: none; }
.card { pointer-events: auto; background: var(--card); color: var(--ink); border: 1px solid var(--edge); border-radius: 14px; padding: 12px 14px; box-shadow: var(--shadow); animation: in .2s ease-out; flex: 0 0 auto; max-width: 640px; }
.card[data-redrawn] { animation: none; }
@keyframes in { from { opacity: 0; transform: translateY(6px); } to { opacity: 1; transform: none; } }
h3 { margin: 0 0 8px; font-size: 16px; line-height: 1.3; }
p { margin: 0 0 8px; }
.label { font-size: 12px; font-weight: 600; letter-spacing: .03em; text-transform: uppercase; color: var(--muted); margin: 0 0 4px; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.countdown { font-variant-numeric: tabular-nums; }
button, a.cta { font: inherit; font-weight: 600; min-height: 44px; min-width: 44px; border: 0; border-radius: 10px; padding: 10px 14px; cursor: pointer;
  background: var(--svc-primary); color: var(--svc-on-primary); text-decoration: none; display: inline-flex; align-items: center; justify-content: center; text-align: center; }
button:focus-visible, a:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
button.secondary { background: var(--track); color: var(--ink); }
button.wide { width: 100%; }
.options { display: grid; gap: 8px; grid-template-columns: repeat(auto-fit, minmax(min(100%, 128px), 1fr)); }
.options button { background: var(--track); color: var(--ink); justify-content: flex-start; text-align: left; font-weight: 500; }
.options button:hover { box-shadow: inset 0 0 0 2px var(--accent); }
.results { list-style: none; margin: 0; padding: 0; display: grid; gap: 8px; }
.result-label { display: flex; justify-content: space-between; align-items: baseline; gap: 12px; }
.result.mine .option { font-weight: 700; }
.share { font-weight: 700; font-variant-numeric: tabular-nums; }
.track { height: 8px; border-radius: 4px; background: var(--track); margin-top: 4px; overflow: hidden; }
.fill { display: block; height: 100%; border-radius: 4px; background: var(--accent); transition: width .4s ease; }
.meta { color: var(--muted); font-size: 13px; margin: 8px 0 0; }
.done { font-weight: 700; margin: 0; }
.description { color: var(--muted); }
ol { list-style: none; margin: 0; padding: 0; display: grid; gap: 2px; }
ol > li { display: flex; gap: 8px; align-items: baseline; padding: 6px 8px; border-radius: 8px; min-height: 32px; }
ol > li.current { background: var(--track); box-shadow: inset 3px 0 0 var(--accent); font-weight: 700; }
.badge { font-size: 11px; font-weight: 700; text-transform: uppercase; background: var(--svc-primary); color: var(--svc-on-primary); padding: 2px 6px; border-radius: 6px; }
.time { color: var(--muted); font-size: 13px; font-variant-numeric: tabular-nums; }
.sponsor_moment { display: flex; flex-wrap: wrap; align-items: center; gap: 8px 10px; padding: 8px 10px; }
.thumb { width: 40px; height: 40px; border-radius: 8px; object-fit: cover; flex: 0 0 auto; display: inline-flex; align-items: center; justify-content: center; }
.tile { background: var(--svc-primary); color: var(--svc-on-primary); font-weight: 700; }
.moment-text { flex: 1 1 150px; min-width: 0; }
.message { margin: 0; font-size: 14px; display: -webkit-box; -webkit-line-clamp: 2; -webkit-box-orient: vertical; overflow: hidden; }
.cta { flex: 0 0 auto; margin-left: auto; }
.product { display: grid; grid-template-columns: 56px minmax(0, 1fr); gap: 8px 10px; align-items: center; }
.product .thumb { width: 56px; height: 56px; }
.product-main { background: none; color: var(--ink); padding: 0 2px; flex-direction: column; align-items: flex-start; text-align: left; width: 100%; min-width: 0; }
.product .add { grid-column: 2; justify-self: end; }
.name { display: -webkit-box; -webkit-line-clamp: 2; -webkit-box-orient: vertical; overflow: hidden; max-width: 100%; }
.price { font-weight: 700; font-variant-numeric: tabular-nums; }
.add-icon { display: none; font-size: 22px; line-height: 1; }
.frame[data-dense] .card { padding: 10px 12px; }
.frame[data-dense] h3 { margin-bottom: 6px; }
.frame[data-dense] .results { gap: 4px; }
.frame[data-dense] .meta { margin-top: 6px; }
.frame[data-dense] .shelf .product { grid-template-columns: 44px minmax(0, 1fr) 44px; padding: 8px 10px; }
.frame[data-dense] .shelf .thumb { width: 44px; height: 44px; }
.frame[data-dense] .shelf .name { -webkit-line-clamp: 1; }
.frame[data-dense] .shelf .add { grid-column: 3; padding: 0; }
.frame[data-dense] .shelf .add-label { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
.frame[data-dense] .shelf .add-icon { display: inline; }
.shelf { display: flex; gap: 10px; overflow-x: auto; scroll-snap-type: x mandatory; overscroll-behavior-x: contain; pointer-events: auto; flex: 0 0 auto; }
.shelf > .card { width: min(290px, 86%); scroll-snap-align: start; }
.util { display: flex; flex-wrap: wrap; gap: 8px; justify-content: flex-end; align-items: flex-start; flex: 0 0 auto; }
.notice { pointer-events: auto; flex: 1 1 150px; max-width: 420px; background: var(--card); color: var(--ink); border: 1px solid var(--edge); border-radius: 10px; padding: 11px 14px; box-shadow: var(--shadow); font-weight: 600; }
.cart { pointer-events: auto; box-shadow: var(--shadow); flex: 0 0 auto; }
.panel { width: 100%; }
.row { display: flex; justify-content: space-between; align-items: center; gap: 8px; margin-bottom: 6px; flex-wrap: wrap; }
.actions { display: flex; gap: 8px; margin-top: 8px; flex-wrap: wrap; }
.sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
/* Last: it overrides rules of the same specificity only when it comes after them. */
@media (prefers-reduced-motion: reduce) { .card { animation: none; } .fill { transition: none; } .shelf { scroll-behavior: auto; } }
`;
