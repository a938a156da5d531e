// SPDX-License-Identifier: GPL-2.0
//
// Runs the script embedded in an `nmiprof export --format svg` flame
// graph (the golden fixture's) against a minimal DOM stand-in and checks
// what a user would see: zoom widths, ancestors kept, others hidden,
// reset, search highlighting and the matched share (nested matches are
// counted once).
//
//   node svg_js.js FILE.svg
'use strict';
const fs = require('fs');
const svg = fs.readFileSync(process.argv[2], 'utf8');
let failures = 0;
function check(cond, what) {
  if (!cond) { console.log('FAIL: ' + what); failures++; }
}
const unxml = (s) => s.replace(/&lt;/g, '<').replace(/&gt;/g, '>')
  .replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&amp;/g, '&');

function element(attrs) {
  return {
    attrs: Object.assign({}, attrs), style: {}, textContent: '', listeners: {},
    getAttribute(n) { return this.attrs[n]; },
    setAttribute(n, v) { this.attrs[n] = String(v); },
    addEventListener(t, f) { this.listeners[t] = f; },
  };
}
function attrsOf(tag) {
  const a = {};
  for (const m of tag.matchAll(/([a-z-]+)="([^"]*)"/g)) a[m[1]] = m[2];
  return a;
}

const root = element(attrsOf(svg.match(/<svg [^>]*>/)[0]));
const frames = [];
const re = /<g class="f"([^>]*)><title>(.*?)<\/title><rect([^>]*)\/><text([^>]*)>(.*?)<\/text><\/g>/g;
for (const m of svg.matchAll(re)) {
  const g = element(attrsOf(m[1]));
  const title = element({}); title.textContent = unxml(m[2]);
  const rect = element(attrsOf(m[3]));
  const text = element(attrsOf(m[4])); text.textContent = unxml(m[5]);
  g.querySelector = (sel) => ({ title, rect, text })[sel];
  frames.push(g);
}
check(frames.length > 0, 'frames parsed from the svg');
const byId = {};
for (const id of ['details', 'matched', 'reset', 'search']) byId[id] = element({});
const document = {
  documentElement: root,
  querySelectorAll: (sel) => (sel === 'g.f' ? frames : []),
  getElementById: (id) => byId[id],
};
const window = { addEventListener() {} };
let promptAnswer = null;
const prompt = () => promptAnswer;

const script = svg.match(/<!\[CDATA\[([\s\S]*?)\]\]>/)[1];
const api = new Function('document', 'window', 'prompt',
  script + '\nreturn { init, zoom, reset, search, clearSearch, askSearch };')(
  document, window, prompt);

api.init();
const width = (g) => +g.querySelector('rect').getAttribute('width');
const find = (name, depth) => frames.find((g) => g.name === name && g.fd === depth);
const full = +root.getAttribute('data-width') - 2 * +root.getAttribute('data-pad');
const near = (a, b) => Math.abs(a - b) < 0.05;

const all = find('all', 0);
const work = find('work', 4);		// all;app;__libc_start_main;main;work
// compute is reached from work (110) and from parse (6): take work's
const compute = frames.find((g) => g.name === 'compute' && work &&
  g.fx >= work.fx && g.fx < work.fx + work.fw);
const writer = find('db_writer', 1);
check(all && work && compute && writer, 'expected frames present');
check(near(width(all), full), 'root spans the width');
check(near(width(work), full * 125 / 191), 'work is 125/191 wide');

// Click on work: it fills the width, its children scale with it, its
// ancestors stay full width (dimmed), everything else is hidden.
work.listeners.click();
check(near(width(work), full), 'zoomed frame fills the width');
check(near(width(compute), full * 110 / 125), 'child scaled: compute 110/125');
check(near(width(find('main', 3)), full) && find('main', 3).style.opacity === '0.6',
  'ancestor main kept full width, dimmed');
check(writer.style.display === 'none', 'unrelated db_writer hidden');
check(byId.reset.style.opacity === 1, 'Reset Zoom shown');

api.reset();
check(near(width(work), full * 125 / 191) && writer.style.display === '',
  'reset restores the layout');
check(byId.reset.style.opacity === 0, 'Reset Zoom hidden again');

api.search('^compute$');
check(byId.matched.textContent === 'Matched: 60.73%', 'both computes matched 116/191, got ' +
  byId.matched.textContent);
check(compute.querySelector('rect').getAttribute('fill') === 'rgb(230,0,230)',
  'match highlighted');
// "main" also matches __libc_start_main, which contains main: count once.
api.search('main');
check(byId.matched.textContent === 'Matched: 93.72%', 'nested matches once (179/191), got ' +
  byId.matched.textContent);
api.clearSearch();
check(compute.querySelector('rect').getAttribute('fill') !== 'rgb(230,0,230)',
  'clear search restores colours');
promptAnswer = 'std::vector<int>';
api.askSearch();
check(byId.matched.textContent === 'Matched: 13.09%', 'search via prompt, xml-escaped name');

// Hovering shows the frame's details line.
compute.listeners.mouseover();
check(byId.details.textContent.startsWith('compute (110 samples, 57.59%)'),
  'details on hover');

if (failures) process.exit(1);
console.log('ok   svg script: zoom, reset, search, details (' + frames.length + ' frames)');
