#include "leakcheck/profile/flame_svg_script.h"

namespace stackwalk::profile {

const std::string_view kFlameSvgStyle = R"CSS(
svg.fg-root text { font-family: 'DejaVu Sans Mono', monospace; font-size: 11px; fill: #000; }
svg.fg-root text.fg-title { font-size: 16px; }
svg.fg-root .fg-button { cursor: pointer; fill: #1f4e9a; text-decoration: underline; }
svg.fg-root g.f { cursor: pointer; }
svg.fg-root g.f:hover rect { stroke: #000; stroke-width: 0.6; }
svg.fg-root g.f text { pointer-events: none; }
svg.fg-root g.fg-parent rect { opacity: 0.55; }
)CSS";

const std::string_view kFlameSvgScript = R"JS(
(function () {
  'use strict';
  var script = document.currentScript;
  var svg = script && script.closest ? script.closest('svg.fg-root') : null;
  if (!svg) {
    var roots = document.querySelectorAll('svg.fg-root');
    svg = roots[roots.length - 1];
  }
  var svgNs = 'http://www.w3.org/2000/svg';
  var total = Number(svg.getAttribute('data-total'));
  var unit = svg.getAttribute('data-unit');
  var width = Number(svg.getAttribute('data-width'));
  var pad = Number(svg.getAttribute('data-pad'));
  var charPx = Number(svg.getAttribute('data-char-px'));
  var frames = Array.prototype.slice.call(svg.querySelectorAll('g.f'));
  var details = svg.querySelector('.fg-details');
  var idleDetails = details.textContent;
  var matched = svg.querySelector('.fg-matched');
  var resetButton = svg.querySelector('.fg-reset');
  var searchButton = svg.querySelector('.fg-search');
  var zoomed = null;
  var term = '';

  function info(g) {
    if (!g.fgInfo) {
      g.fgInfo = {
        name: g.querySelector('title').textContent.split('\n')[0],
        x: Number(g.getAttribute('data-x')),
        v: Number(g.getAttribute('data-v')),
        d: Number(g.getAttribute('data-d'))
      };
    }
    return g.fgInfo;
  }
  function formatValue(v) {
    if (unit !== 'bytes') return v.toLocaleString('en-US');
    if (v < 1024) return v + ' B';
    var units = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB'];
    var scaled = v, i = -1;
    while (scaled >= 1024 && i < units.length - 1) { scaled /= 1024; i++; }
    return scaled.toFixed(scaled < 10 ? 2 : scaled < 100 ? 1 : 0) + ' ' + units[i];
  }
  function share(v, of) { return (of > 0 ? 100 * v / of : 0).toFixed(2) + '%'; }

  // The frame's label clipped to its width (code points, not UTF-16 units).
  function label(g, x, w) {
    var text = g.querySelector('text');
    var name = Array.from(info(g).name);
    var chars = Math.floor((w - 6) / charPx);
    var content = '';
    if (chars >= 3) content = name.length <= chars ? name.join('') : name.slice(0, chars - 2).join('') + '..';
    if (!text) {
      if (!content) return;
      text = document.createElementNS(svgNs, 'text');
      text.setAttribute('y', (Number(g.querySelector('rect').getAttribute('y')) + 11.5).toFixed(2));
      g.appendChild(text);
    }
    text.textContent = content;
    text.setAttribute('x', (x + 3).toFixed(2));
  }

  function zoom(g) {
    var z = info(g);
    var scale = (width - 2 * pad) / z.v;
    frames.forEach(function (f) {
      var i = info(f), x, w;
      if (i.d < z.d && i.x <= z.x && i.x + i.v >= z.x + z.v) {
        x = pad; w = width - 2 * pad;
        f.classList.add('fg-parent');
      } else if (i.d >= z.d && i.x >= z.x && i.x + i.v <= z.x + z.v) {
        x = pad + (i.x - z.x) * scale; w = i.v * scale;
        f.classList.remove('fg-parent');
      } else {
        f.style.display = 'none';
        return;
      }
      f.style.display = '';
      var rect = f.querySelector('rect');
      rect.setAttribute('x', x.toFixed(2));
      rect.setAttribute('width', w.toFixed(2));
      label(f, x, w);
    });
    zoomed = z.d === 0 ? null : g;
    resetButton.style.visibility = zoomed ? 'visible' : 'hidden';
    if (zoomed) svg.setAttribute('data-zoomed', z.name); else svg.removeAttribute('data-zoomed');
  }
  function reset() { zoom(frames[0]); }

  // Highlights the frames whose name contains `wanted`; the matched share counts each stretch
  // of the total once, however many matching frames stand on it.
  function search(wanted) {
    term = wanted || '';
    var count = 0, spans = [];
    frames.forEach(function (f) {
      var i = info(f), rect = f.querySelector('rect');
      if (term && i.name.indexOf(term) >= 0) {
        if (!f.hasAttribute('data-fill')) f.setAttribute('data-fill', rect.getAttribute('fill'));
        rect.setAttribute('fill', 'rgb(230,0,230)');
        f.classList.add('fg-match');
        count++;
        spans.push([i.x, i.x + i.v]);
      } else if (f.hasAttribute('data-fill')) {
        rect.setAttribute('fill', f.getAttribute('data-fill'));
        f.removeAttribute('data-fill');
        f.classList.remove('fg-match');
      }
    });
    spans.sort(function (a, b) { return a[0] - b[0]; });
    var covered = 0, end = -Infinity;
    spans.forEach(function (s) {
      if (s[1] <= end) return;
      covered += s[1] - Math.max(s[0], end);
      end = s[1];
    });
    svg.setAttribute('data-matches', String(count));
    svg.setAttribute('data-matched-share', String(total > 0 ? covered / total : 0));
    matched.textContent = term ? 'Matched: ' + share(covered, total) + ' (' + count + ' frames)' : '';
    searchButton.textContent = term ? 'Reset search' : 'Search';
    return count;
  }
  function askAndSearch() {
    var wanted = window.prompt('Highlight frames whose name contains:', term);
    if (wanted !== null) search(wanted);
  }

  var group = svg.querySelector('.fg-frames');
  group.addEventListener('click', function (e) {
    var g = e.target.closest('g.f');
    if (g) zoom(g);
  });
  group.addEventListener('mouseover', function (e) {
    var g = e.target.closest('g.f');
    if (!g) return;
    var i = info(g);
    var text = i.name + ' \u2014 ' + formatValue(i.v) + ' (' + share(i.v, total);
    if (zoomed) text += ', ' + share(i.v, info(zoomed).v) + ' of the zoomed frame';
    details.textContent = text + ')';
  });
  group.addEventListener('mouseout', function () { details.textContent = idleDetails; });
  resetButton.addEventListener('click', reset);
  searchButton.addEventListener('click', function () {
    if (term) search(''); else askAndSearch();
  });
  svg.stackwalkFlame = { search: search, zoom: zoom, reset: reset };

  if (svg === document.documentElement) {
    window.addEventListener('keydown', function (e) {
      if ((e.key === 'f' && (e.ctrlKey || e.metaKey)) || e.key === 'F3') {
        e.preventDefault();
        askAndSearch();
      }
    });
    var wanted = /^#search=(.*)$/.exec(window.location.hash);
    if (wanted) search(decodeURIComponent(wanted[1]));
  }
})();
)JS";

}  // namespace stackwalk::profile
