/** Styles of the overlay's shadow root; `--svc-primary` comes from the theme. */
export const OVERLAY_CSS = `
:host { position: absolute; inset: 0; pointer-events: none; font: 15px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #14121f; --svc-primary: #5b3df5; z-index: 10; }
* { box-sizing: border-box; }
.stack { position: absolute; left: 16px; bottom: 16px; display: flex; flex-direction: column; gap: 12px; max-width: min(360px, calc(100% - 32px)); }
.side { position: absolute; right: 16px; top: 16px; max-width: min(280px, 40%); display: flex; flex-direction: column; gap: 12px; }
.shelf { position: absolute; right: 16px; bottom: 16px; display: flex; gap: 12px; max-width: calc(100% - 400px); overflow-x: auto; }
.card { pointer-events: auto; background: rgba(255,255,255,0.96); border-radius: 14px; padding: 14px 16px; box-shadow: 0 8px 28px rgba(0,0,0,.28); animation: in .25s ease-out; }
@keyframes in { from { opacity: 0; transform: translateY(8px); } to { opacity: 1; transform: none; } }
h3 { margin: 0 0 10px; font-size: 16px; }
p { margin: 0 0 10px; }
.label { font-size: 11px; text-transform: uppercase; letter-spacing: .06em; color: #666; margin-bottom: 4px; }
button, a.cta { font: inherit; border: 0; border-radius: 10px; padding: 9px 12px; cursor: pointer; background: var(--svc-primary); color: #fff; text-decoration: none; display: inline-block; }
button.secondary { background: #ecebf3; color: #14121f; }
button:focus-visible, a:focus-visible { outline: 3px solid #ffbf47; outline-offset: 2px; }
.options { display: grid; gap: 8px; }
.options button { text-align: left; background: #f1eefe; color: #14121f; }
.options button:hover { background: #e3dcfd; }
.bar { position: relative; background: #f1eefe; border-radius: 8px; overflow: hidden; margin-bottom: 6px; }
.bar span { position: absolute; inset: 0 auto 0 0; background: var(--svc-primary); opacity: .25; transition: width .4s ease; }
.bar div { position: relative; display: flex; justify-content: space-between; padding: 7px 10px; }
.bar.mine div { font-weight: 600; }
.muted { color: #666; font-size: 13px; }
ol { margin: 0; padding-left: 18px; }
.product { width: 200px; }
.product img, .moment img { width: 100%; border-radius: 8px; margin-bottom: 8px; display: block; }
.product .name { background: none; color: inherit; padding: 0; text-align: left; font-weight: 600; }
.price { font-weight: 600; margin: 4px 0 8px; }
.banner { position: absolute; left: 16px; right: 16px; top: 16px; display: flex; align-items: center; gap: 12px; width: auto; max-width: none; }
.cart { position: absolute; right: 16px; top: 16px; pointer-events: auto; }
.panel { position: absolute; right: 16px; top: 64px; width: min(320px, calc(100% - 32px)); }
.row { display: flex; justify-content: space-between; align-items: center; gap: 8px; margin-bottom: 6px; }
.actions { display: flex; gap: 8px; margin-top: 8px; }
.sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
/* Last: it overrides rules of the same specificity only when it comes after them. */
@media (prefers-reduced-motion: reduce) { .card { animation: none; } .bar span { transition: none; } }
`;
