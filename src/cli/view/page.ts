import { VIEW_SCRIPT } from './page-script.js';

/** The viewer's page styles: readable text, one colour per role, tokens tinted by probability. */
const STYLE = `
*{box-sizing:border-box}body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{display:flex;gap:1rem;align-items:center;flex-wrap:wrap;padding:.6rem 1rem;background:#1d2330;color:#fff}
header h1{font-size:1.05rem;margin:0}header a{color:#9cf}header select,header button{font:inherit}
#origin{color:#bcc3d0;font-size:.85rem}
form#filters{display:flex;gap:.9rem;flex-wrap:wrap;align-items:center;padding:.5rem 1rem;background:#fff;border-bottom:1px solid #dde}
form#filters input[type=number]{width:5.5rem}form#filters input[type=search]{width:16rem}
fieldset{border:0;padding:0;margin:0;display:inline-flex;gap:.5rem}
#summary{margin:.5rem 1rem;color:#444}#notices{margin:.25rem 1rem;color:#8a5a00;font-size:.85rem}
main{display:grid;grid-template-columns:minmax(24rem,38%) 1fr;gap:1rem;padding:0 1rem 1rem;align-items:start}
@media (max-width:900px){main{grid-template-columns:1fr}}
#groups{display:flex;flex-direction:column;gap:.5rem;max-height:calc(100vh - 9rem);overflow:auto}
.group{background:#fff;border:1px solid #dde;border-radius:6px}
.group>summary{cursor:pointer;padding:.45rem .6rem;display:flex;flex-direction:column;gap:.1rem}
.group .label{font-weight:600}.group .prompt{color:#555;font-size:.85rem;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.group .note{color:#a33;font-size:.85rem}
.spread{display:flex;align-items:center;gap:.4rem;font-size:.8rem;color:#555}
.status{font-size:.75rem;padding:0 .4rem;border-radius:8px;background:#e4e7ee}
.status.scored{background:#dcf2e0}.status.dropped{background:#eee3c8}.status.failed{background:#f6d5d5}.status.running{background:#d9e7fb}
.rollout{display:grid;grid-template-columns:auto auto 1fr;gap:.6rem;padding:.3rem .6rem;border-top:1px solid #eef;cursor:pointer;font-size:.85rem}
.rollout:hover,.rollout.selected{background:#eef4ff}.rollout .preview{color:#666;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.score{font-variant-numeric:tabular-nums;font-weight:600}.pos{color:#17702b}.neg{color:#b22}.zero{color:#666}
#rollout{background:#fff;border:1px solid #dde;border-radius:6px;padding:.75rem 1rem;min-height:10rem}
#rollout h2{font-size:1.05rem;margin:.1rem 0 .5rem}dl.facts{display:grid;grid-template-columns:auto 1fr;gap:.2rem .8rem;margin:.4rem 0 .8rem}
dl.facts dt{color:#666}dl.facts dd{margin:0}.missing{color:#888;font-style:italic}
.msg{border-left:4px solid #ccd;padding:.2rem .7rem;margin:.5rem 0;background:#fafbfc}
.msg.system{border-color:#999}.msg.user{border-color:#4a7bd0}.msg.assistant{border-color:#2e9d55}.msg.tool{border-color:#d08a1a;background:#fffaf0}
.msg h3{font-size:.8rem;margin:.1rem 0;color:#445;font-weight:600}.msg pre{white-space:pre-wrap;word-break:break-word;margin:.2rem 0;font:13px/1.4 ui-monospace,monospace}
.tool-call{font:13px ui-monospace,monospace;color:#0b4f8a;background:#eef4ff;padding:.15rem .4rem;border-radius:4px;margin:.2rem 0;white-space:pre-wrap;word-break:break-word}
.msg img{max-width:12rem;max-height:8rem;border:1px solid #ccd}
h3.section{font-size:.95rem;margin:1rem 0 .3rem}
.legend{display:flex;gap:.6rem;align-items:center;font-size:.8rem;color:#555;flex-wrap:wrap}
.gradient{width:8rem;height:.7rem;background:linear-gradient(90deg,hsl(0,75%,82%),hsl(60,75%,82%),hsl(120,75%,82%));border:1px solid #ccd}
.seg{margin:.35rem 0;padding:.3rem .4rem;border-radius:4px;font:12px/1.7 ui-monospace,monospace;white-space:pre-wrap;word-break:break-all}
.seg.masked{background:#eceef2;color:#777;border:1px dashed #bbc}.seg.trained{background:#fff;border:1px solid #cde}
.seg .caption{display:block;font:11px system-ui,sans-serif;color:#667;margin-bottom:.1rem}
.swatch-masked{background:#eceef2;color:#777;border:1px dashed #bbc;padding:0 .3rem}
.harness ul{margin:0;padding-left:1rem}.calls{padding-left:0;list-style:none;margin:.3rem 0}.call{border-left:4px solid #2e9d55;padding:.2rem .6rem;margin:.3rem 0;background:#fafbfc;font-size:.85rem}
.call[data-mark=replayed]{border-color:#8a6fd0}.call[data-mark=recorded]{border-color:#bbc}
.mark{font-size:.75rem;padding:0 .4rem;border-radius:8px;background:#dcf2e0}.mark.replayed{background:#e6ddf8}.mark.recorded{background:#e4e7ee}
.call-summary,.call-reply{font:12px/1.4 ui-monospace,monospace;white-space:pre-wrap;word-break:break-word;color:#445}.call-reply{color:#0b4f8a}
.tok{border-radius:2px;padding:0 1px}.seg.masked .tok{background:none}.ids .tok{margin-right:3px}
`;

/** The whole page: styles, the frame the script fills, and the script. No dependencies, no build step. */
export const VIEW_PAGE = `<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1"><title>clotho view</title><style>${STYLE}</style></head>
<body>
<header><h1>clotho view</h1><label>run <select id="run"></select></label><span id="origin"></span>
<a id="run-workflows" target="_blank" rel="noopener" hidden>all of its workflows in Temporal</a>
<button id="reload" type="button">Reload</button></header>
<form id="filters" autocomplete="off">
<label>environment <select name="env"><option value="">all</option></select></label>
<label>score ≥ <input name="min" type="number" step="any"></label><label>≤ <input name="max" type="number" step="any"></label>
<fieldset id="statuses"><legend hidden>status</legend></fieldset>
<label>search <input name="q" type="search" placeholder="text in messages, tool calls, answers"></label>
</form>
<p id="summary" data-query="">loading…</p><ul id="notices"></ul>
<main><section id="groups" aria-label="groups"></section>
<section id="rollout" aria-label="rollout"><p class="missing">Choose a rollout on the left.</p></section></main>
<script>${VIEW_SCRIPT}</script>
</body></html>`;
