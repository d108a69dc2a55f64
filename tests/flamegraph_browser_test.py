#!/usr/bin/env python3
"""stackwalk-flamegraph's SVG and HTML in a real browser (issue 19): Debian's Chromium, headless.

The test writes folded stacks with hostile names (C++ templates with < > &, quotes, a byte that is
not UTF-8) and a page description with a timeline, renders them with stackwalk-flamegraph, and:
  - parses the SVG as XML: every name reads back as written (the bad byte as U+FFFD), one frame
    per distinct stack prefix, each as wide as its value;
  - takes a screenshot of the SVG and checks, at every frame wide enough to sample, that the
    pixel there has the frame's colour (the flame graph is drawn where the file says);
  - opens the SVG at "#search=p" and reads the DOM: the matches counted and the matched share
    (the union of the matches' widths, not their sum: frames matching on a matching caller add
    nothing);
  - runs hover, click-to-zoom, search (through the button and its prompt), reset zoom and reset
    search on the graph inside a page, and checks the details line, the zoomed widths, the frames
    hidden and greyed, the highlighted frames and the restored widths;
  - takes a screenshot of the HTML report and checks the chart: the total's line colour spans
    the plot, its highest point at the timeline's peak (20 s of 30 s), the threads' lines drawn,
    the flame graphs' colours on the page; and its search boxes drive their own graphs;
  - fails on any message the page's scripts leave on the console (Chromium's --enable-logging);
  - bad folded lines: exit 1, each named with its line number, the good lines still drawn.
Every browser run is bounded (90 s). Exits 77 (ctest's skip) with the reason when Chromium is not
installed or cannot start here. STACKWALK_SCREENSHOT_DIR=DIR keeps the screenshots (the README's
picture comes from there).

usage: flamegraph_browser_test.py STACKWALK_FLAMEGRAPH
"""
import html
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
import zlib

TOOL = sys.argv[1]
SKIP = 77
BROWSER_TIMEOUT = 90
SVG_NS = "{http://www.w3.org/2000/svg}"
failures = []

FOLDED = [
    ("main;parse_config;std::vector<Entry, std::allocator<Entry> >::push_back", 4096),
    ("main;parse_config;operator new(unsigned long)", 1024),
    ("main;worker<int&>;say \"hi\" & 'bye'", 8192),
    ("main;worker<int&>;bad\xffutf8", 2048),
    ("start_thread;thread_main;std::map<K, V>::operator[]", 3000),
    ("main;parse_config", 100),
]
TOTAL = sum(value for _, value in FOLDED)


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def folded_bytes(lines):
    # \xff stands for the byte 0xff, not U+00FF.
    return b"".join(stack.encode("utf-8").replace(b"\xc3\xbf", b"\xff") + b" %d\n" % value
                    for stack, value in lines)


def shown_name(frame):
    return frame.replace("\xff", "\ufffd")


def format_bytes(value):
    if value < 1024:
        return "%d B" % value
    units = ["KiB", "MiB", "GiB"]
    scaled, i = float(value), -1
    while scaled >= 1024 and i < len(units) - 1:
        scaled /= 1024
        i += 1
    return "%.*f %s" % (2 if scaled < 10 else 1 if scaled < 100 else 0, scaled, units[i])


def decode_png(path):
    """(width, height, rows): rows[y] is bytes of RGB or RGBA pixels, as Chromium writes them."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, header
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if kind == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif kind == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif kind == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 255
        elif kind == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b, c = prev[i], prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[i] = (line[i] + pred) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def pixel(png, x, y):
    _, _, bpp, rows = png
    return tuple(rows[y][x * bpp:x * bpp + 3])


def colour_columns(png, rgb, top=0, bottom=None):
    """The x of every column that has a pixel of exactly `rgb` between rows top and bottom."""
    width, height, bpp, rows = png
    needle = bytes(rgb)
    columns = set()
    for y in range(top, bottom if bottom is not None else height):
        row = rows[y]
        at = row.find(needle)
        while at >= 0:
            if at % bpp == 0:
                columns.add(at // bpp)
            at = row.find(needle, at + 1)
    return columns


def near_colour_columns(png, colours, top, bottom, tolerance=48):
    """For each colour, the x of every column with a pixel within `tolerance` (per channel) of it
    between rows top and bottom: thin lines are antialiased, few of their pixels are exact."""
    width, _, bpp, rows = png
    found = [set() for _ in colours]
    for y in range(top, bottom):
        row = rows[y]
        for x in range(width):
            r, g, b = row[x * bpp], row[x * bpp + 1], row[x * bpp + 2]
            if r > 235 and g > 235 and b > 235:
                continue  # background
            for k, (cr, cg, cb) in enumerate(colours):
                if abs(r - cr) <= tolerance and abs(g - cg) <= tolerance and abs(b - cb) <= tolerance:
                    found[k].add(x)
    return found


def hex_rgb(text):
    return tuple(int(text[i:i + 2], 16) for i in (1, 3, 5))


class Chromium:
    def __init__(self, binary, scratch):
        self.binary = binary
        self.scratch = scratch
        self.runs = 0

    def run(self, url, *args):
        """Runs headless Chromium on url; returns stdout. Console messages fail the test."""
        self.runs += 1
        profile = os.path.join(self.scratch, "profile%d" % self.runs)
        command = [self.binary, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                   "--no-first-run", "--no-default-browser-check", "--force-device-scale-factor=1",
                   "--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0",
                   *args, url]
        result = subprocess.run(command, capture_output=True, timeout=BROWSER_TIMEOUT)
        stderr = result.stderr.decode("utf-8", "replace")
        console = [line for line in stderr.splitlines() if ":CONSOLE" in line]
        check(not console, "%s: the page's scripts left console messages: %s" % (url, console))
        check(result.returncode == 0,
              "chromium on %s exited %d: %s" % (url, result.returncode, stderr[-2000:]))
        return result.stdout.decode("utf-8", "replace")

    def screenshot(self, url, path, width, height):
        self.run(url, "--screenshot=" + path, "--window-size=%d,%d" % (width, height))
        return decode_png(path)


def find_chromium(scratch):
    for name in (os.environ.get("STACKWALK_CHROMIUM"), "chromium", "chromium-browser"):
        if name and shutil.which(name):
            binary = shutil.which(name)
            break
    else:
        print("SKIP: no chromium (Debian's package chromium, installed by scripts/setup.sh)")
        sys.exit(SKIP)
    probe = os.path.join(scratch, "probe.html")
    with open(probe, "w") as f:
        f.write("<!DOCTYPE html><p id=probe>ok</p>")
    try:
        result = subprocess.run([binary, "--headless", "--no-sandbox", "--disable-gpu",
                                 "--user-data-dir=" + os.path.join(scratch, "probe-profile"),
                                 "--dump-dom", "file://" + probe],
                                capture_output=True, timeout=BROWSER_TIMEOUT)
    except subprocess.TimeoutExpired:
        print("SKIP: chromium did not start within %d s" % BROWSER_TIMEOUT)
        sys.exit(SKIP)
    if b"id=\"probe\"" not in result.stdout:
        print("SKIP: chromium cannot run here: exit %d, %s" %
              (result.returncode, result.stderr.decode("utf-8", "replace")[-1000:]))
        sys.exit(SKIP)
    return Chromium(binary, scratch)


def render(*args, stdin=None):
    return subprocess.run([TOOL, *args], input=stdin, capture_output=True, timeout=60)


def svg_frames(root):
    frames = []
    for g in root.iter(SVG_NS + "g"):
        if g.get("class") != "f":
            continue
        rect = g.find(SVG_NS + "rect")
        frames.append({
            "name": g.find(SVG_NS + "title").text.split("\n")[0],
            "x": int(g.get("data-x")), "v": int(g.get("data-v")), "d": int(g.get("data-d")),
            "rx": float(rect.get("x")), "ry": float(rect.get("y")),
            "w": float(rect.get("width")), "fill": rect.get("fill"),
        })
    return frames


def test_svg(browser, scratch, keep):
    folded = os.path.join(scratch, "in.folded")
    with open(folded, "wb") as f:
        f.write(folded_bytes(FOLDED))
    svg_path = os.path.join(scratch, "graph.svg")
    result = render("--title", "Live bytes <by stack> & more", "-o", svg_path, folded)
    check(result.returncode == 0, "stackwalk-flamegraph exited %d: %s" % (result.returncode, result.stderr))
    with open(svg_path, "rb") as f:
        svg_bytes = f.read()
    check(b"http://" not in svg_bytes.replace(b"http://www.w3.org/2000/svg", b""),
          "the SVG names nothing to fetch")
    root = ET.fromstring(svg_bytes)  # well-formed XML, or this raises
    frames = svg_frames(root)

    prefixes = {(): TOTAL}
    for stack, value in FOLDED:
        names = tuple(shown_name(f) for f in stack.split(";"))
        for depth in range(1, len(names) + 1):
            prefixes[names[:depth]] = prefixes.get(names[:depth], 0) + value
    prefixes[()] = TOTAL
    check(len(frames) == len(prefixes), "%d frames drawn, %d distinct prefixes" % (len(frames), len(prefixes)))
    check(int(root.get("data-total")) == TOTAL, "total %s, wanted %d" % (root.get("data-total"), TOTAL))
    drawn = {(f["d"], f["name"]): f for f in frames}
    for path, value in prefixes.items():
        name = path[-1] if path else "all"
        frame = drawn.get((len(path), name))
        check(frame is not None and frame["v"] == value,
              "frame %r: %s, wanted value %d" % (path, frame and frame["v"], value))
        if frame:
            check(abs(frame["w"] - value / TOTAL * 1180) < 0.01, "frame %r width %s" % (name, frame["w"]))
    title = next(t for t in root.iter(SVG_NS + "text") if t.get("class") == "fg-title")
    check(title.text == "Live bytes <by stack> & more", "title read back as %r" % title.text)

    height = int(float(root.get("height")))
    png_path = os.path.join(scratch, "graph.png")
    png = browser.screenshot("file://" + svg_path, png_path, 1200, height)
    check(png[0] == 1200 and png[1] == height, "screenshot is %dx%d" % (png[0], png[1]))
    sampled, wrong = 0, []
    for f in frames:
        if f["w"] < 4:
            continue
        x, y = int(f["rx"] + f["w"] / 2), int(f["ry"] + 2)
        sampled += 1
        got, want = pixel(png, x, y), hex_rgb(f["fill"])
        if max(abs(a - b) for a, b in zip(got, want)) > 2:
            wrong.append((f["name"], got, want))
    check(sampled == len(frames), "every frame is wide enough to sample (%d of %d)" % (sampled, len(frames)))
    check(not wrong, "frames not drawn in their colour at their place: %s" % wrong)
    flame_top = int(min(f["ry"] for f in frames))
    flame_bottom = int(max(f["ry"] for f in frames)) + 15
    colours = {pixel(png, x, y) for y in range(flame_top, flame_bottom) for x in range(10, 1190)}
    fills = {hex_rgb(f["fill"]) for f in frames}
    check(fills <= colours, "all %d bar colours on screen" % len(fills))
    if keep:
        shutil.copy(png_path, os.path.join(keep, "flamegraph.png"))

    # Search from the address: 'p' matches parse_config and, on it, push_back and operator new,
    # and std::map<K, V>::operator[]: the share counts parse_config's width once.
    term = "p"
    matched = [f for f in frames if term in f["name"]]
    spans, covered, end = sorted((f["x"], f["x"] + f["v"]) for f in matched), 0, 0
    for start, stop in spans:
        if stop > end:
            covered += stop - max(start, end)
            end = stop
    check(len(matched) == 4 and covered == 4096 + 1024 + 100 + 3000, "the test's own union: %d" % covered)
    dom = browser.run("file://" + svg_path + "#search=" + term, "--dump-dom")
    matches = re.search(r'data-matches="(\d+)"', dom)
    share = re.search(r'data-matched-share="([0-9.e-]+)"', dom)
    check(matches and int(matches.group(1)) == len(matched),
          "search %r: %s matches, wanted %d" % (term, matches and matches.group(1), len(matched)))
    check(share and abs(float(share.group(1)) - covered / TOTAL) < 1e-9,
          "search %r: share %s, wanted %f" % (term, share and share.group(1), covered / TOTAL))
    check(dom.count('class="f fg-match"') == len(matched), "search %r: the matches highlighted" % term)
    check("Matched: %.2f%% (%d frames)" % (100 * covered / TOTAL, len(matched)) in dom,
          "search %r: the matched line" % term)
    return svg_bytes, frames


HARNESS_HEAD = """<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>
<script>var harnessErrors = [];
window.addEventListener('error', function (e) { harnessErrors.push(String(e.message)); });</script>
"""

HARNESS_SCRIPT = """
<pre id="result"></pre>
<script>
var out = {};
(function () {
try {
  var svg = document.querySelector('svg.fg-root');
  var frames = Array.from(svg.querySelectorAll('g.f'));
  var frameName = function (g) { return g.querySelector('title').textContent.split('\\n')[0]; };
  var named = function (n) { return frames.find(function (g) { return frameName(g) === n; }); };
  var fire = function (el, type) { el.dispatchEvent(new MouseEvent(type, {bubbles: true})); };
  var worker = named('worker<int&>');
  fire(worker.querySelector('rect'), 'mouseover');
  out.details = svg.querySelector('.fg-details').textContent;
  fire(worker.querySelector('rect'), 'click');
  out.zoomedWidth = worker.querySelector('rect').getAttribute('width');
  out.zoomedX = worker.querySelector('rect').getAttribute('x');
  out.zoomedAttr = svg.getAttribute('data-zoomed');
  out.hidden = frames.filter(function (g) { return g.style.display === 'none'; }).map(frameName).sort();
  out.parents = frames.filter(function (g) { return g.classList.contains('fg-parent'); }).map(frameName).sort();
  out.widths = {};
  frames.filter(function (g) { return g.style.display !== 'none'; }).forEach(function (g) {
    out.widths[frameName(g)] = g.querySelector('rect').getAttribute('width');
  });
  out.resetVisible = svg.querySelector('.fg-reset').style.visibility;
  window.prompt = function () { return 'std::'; };
  fire(svg.querySelector('.fg-search'), 'click');
  out.matches = svg.getAttribute('data-matches');
  out.matchedText = svg.querySelector('.fg-matched').textContent;
  out.highlighted = frames.filter(function (g) { return g.classList.contains('fg-match'); }).map(frameName).sort();
  out.highlightFill = svg.querySelector('g.fg-match rect').getAttribute('fill');
  fire(svg.querySelector('.fg-reset'), 'click');
  out.afterResetWidth = worker.querySelector('rect').getAttribute('width');
  out.afterResetHidden = frames.filter(function (g) { return g.style.display === 'none'; }).length;
  out.afterResetZoomAttr = svg.getAttribute('data-zoomed');
  fire(svg.querySelector('.fg-search'), 'click');
  out.afterSearchReset = svg.getAttribute('data-matches');
  out.fillsRestored = frames.every(function (g) { return g.querySelector('rect').getAttribute('fill') !== 'rgb(230,0,230)'; });
} catch (e) { harnessErrors.push('harness: ' + e); }
})();
out.errors = harnessErrors;
document.getElementById('result').textContent = JSON.stringify(out);
</script></body></html>
"""


def read_result(dom):
    match = re.search(r'<pre id="result">(.*?)</pre>', dom, re.S)
    check(match is not None, "the harness wrote its result")
    return json.loads(html.unescape(match.group(1))) if match else {}


def test_interaction(browser, scratch, svg_bytes, frames):
    page = os.path.join(scratch, "interact.html")
    svg_text = svg_bytes.decode("utf-8")
    svg_text = svg_text[svg_text.index("<svg"):]
    with open(page, "w", encoding="utf-8") as f:
        f.write(HARNESS_HEAD + svg_text + HARNESS_SCRIPT)
    out = read_result(browser.run("file://" + page, "--dump-dom"))
    worker_value = 8192 + 2048
    check(out.get("errors") == [], "script errors: %s" % out.get("errors"))
    check(out.get("details") == "worker<int&> \u2014 %s (%.2f%%)" % (format_bytes(worker_value), 100 * worker_value / TOTAL),
          "hover details: %r" % out.get("details"))
    check(out.get("zoomedWidth") == "1180.00" and out.get("zoomedX") == "10.00",
          "zoomed frame at %s, %s wide" % (out.get("zoomedX"), out.get("zoomedWidth")))
    check(out.get("zoomedAttr") == "worker<int&>", "zoomed: %r" % out.get("zoomedAttr"))
    inside = {"all", "main", "worker<int&>", "say \"hi\" & 'bye'", "bad\ufffdutf8"}
    check(out.get("hidden") == sorted(f["name"] for f in frames if f["name"] not in inside),
          "hidden while zoomed: %s" % out.get("hidden"))
    check(out.get("parents") == ["all", "main"], "greyed callers: %s" % out.get("parents"))
    widths = out.get("widths", {})
    check(widths.get("say \"hi\" & 'bye'") == "%.2f" % (8192 / worker_value * 1180) and
          widths.get("bad\ufffdutf8") == "%.2f" % (2048 / worker_value * 1180),
          "callees rescaled to the zoomed frame: %s" % widths)
    check(out.get("resetVisible") == "visible", "reset shown while zoomed")
    check(out.get("matches") == "2", "search 'std::' through the button: %s matches" % out.get("matches"))
    check(out.get("highlighted") == sorted(["std::vector<Entry, std::allocator<Entry> >::push_back",
                                             "std::map<K, V>::operator[]"]),
          "highlighted: %s" % out.get("highlighted"))
    check(out.get("highlightFill") == "rgb(230,0,230)", "highlight colour %s" % out.get("highlightFill"))
    check(out.get("matchedText") == "Matched: %.2f%% (2 frames)" % (100 * (4096 + 3000) / TOTAL),
          "matched line %r" % out.get("matchedText"))
    check(out.get("afterResetWidth") == "%.2f" % (worker_value / TOTAL * 1180) and
          out.get("afterResetHidden") == 0 and out.get("afterResetZoomAttr") is None,
          "reset zoom: width %s, %s hidden" % (out.get("afterResetWidth"), out.get("afterResetHidden")))
    check(out.get("afterSearchReset") == "0" and out.get("fillsRestored") is True,
          "reset search: %s matches, colours restored %s" % (out.get("afterSearchReset"), out.get("fillsRestored")))


def timeline():
    """30 s sampled every 0.1 s: main grows to 3 MiB at 20 s and falls; a worker holds 512 KiB."""
    points = []
    for i in range(301):
        t = i / 10
        main = int((3 << 20) * (t / 20 if t <= 20 else 1 - 0.5 * (t - 20) / 10))
        worker = (512 << 10) if 5 <= t <= 25 else 0
        points.append([t, main + worker, [main, worker]])
    return points


def test_html(browser, scratch, keep):
    page = {
        "title": "stackwalk profile: ./server <demo>",
        "summary": [["program", "./server --port 80 & more"], ["peak live bytes", "3.50 MiB at 20.0 s"],
                    ["allocations", 123456]],
        "timeline": {"threads": ["main", "worker<1>"], "points": timeline()},
        "tables": [{"title": "Top stacks at the peak", "columns": ["bytes", "allocations", "function"],
                    "rows": [["8,192", 2, "say \"hi\" & 'bye'"], ["4,096", 1, "std::vector<Entry>::push_back"]]}],
        "flamegraphs": [
            {"title": "Live bytes at the peak", "unit": "bytes",
             "folded": folded_bytes(FOLDED).decode("utf-8", "replace")},
            {"title": "Allocations", "unit": "count", "folded": "main;worker<int&> 12\nmain;parse_config 30\n"},
        ],
    }
    page_path = os.path.join(scratch, "page.json")
    with open(page_path, "w", encoding="utf-8") as f:
        json.dump(page, f)
    html_path = os.path.join(scratch, "report.html")
    result = render("--html", page_path, "-o", html_path)
    check(result.returncode == 0, "--html exited %d: %s" % (result.returncode, result.stderr))
    with open(html_path, encoding="utf-8") as f:
        report = f.read()
    check("http://" not in report.replace("http://www.w3.org/2000/svg", ""), "the page names nothing to fetch")
    check("<title>stackwalk profile: ./server &lt;demo&gt;</title>" in report, "the page's title escaped")

    # The search boxes (and where the parts are): typing in the second graph's box highlights only in that graph.
    harness = os.path.join(scratch, "report-search.html")
    with open(harness, "w", encoding="utf-8") as f:
        f.write(report.replace("</body>", """<pre id="result"></pre><script>
var boxes = document.querySelectorAll('input.flame-search');
boxes[1].value = 'worker';
boxes[1].dispatchEvent(new Event('input'));
var svgs = document.querySelectorAll('svg.fg-root');
var box = function (el) {
  var r = el.getBoundingClientRect();
  return [Math.round(r.left), Math.round(r.top), Math.round(r.right), Math.round(r.bottom)];
};
document.getElementById('result').textContent = JSON.stringify(
  {first: svgs[0].getAttribute('data-matches'), second: svgs[1].getAttribute('data-matches'),
   share: svgs[1].getAttribute('data-matched-share'),
   chart: box(document.querySelector('svg.timeline')),
   flames: Array.from(svgs).map(box)});
</script></body>"""))
    out = read_result(browser.run("file://" + harness, "--dump-dom"))
    chart, flames = out.get("chart"), out.get("flames")
    check(out.get("first") is None and out.get("second") == "1" and
          abs(float(out.get("share") or 0) - 12 / 42) < 1e-9, "search boxes: %s" % out)

    png_path = os.path.join(scratch, "report.png")
    # Where the chart and the flame graphs are on the page: the harness measured them (the same
    # layout: it only adds an empty <pre> after them).
    check(chart and flames, "the harness measured the chart and the flame graphs: %s" % out)
    if not chart or not flames:
        return
    height = max(box[3] for box in flames) + 20
    png = browser.screenshot("file://" + html_path, png_path, 1250, height)
    chart_top, chart_bottom = chart[1], chart[3]
    total_line = colour_columns(png, hex_rgb("#1f4e9a"), chart_top, chart_bottom)
    main_line, worker_line = near_colour_columns(png, [hex_rgb("#d62728"), hex_rgb("#2ca02c")], chart_top, chart_bottom)
    check(len(total_line) > 900, "the total's line spans the plot: %d columns" % len(total_line))
    check(len(main_line) > 700 and len(worker_line) > 300,
          "the threads' lines: %d and %d columns" % (len(main_line), len(worker_line)))
    if total_line:
        # The line's highest pixel: the peak, 20 s into the 30 s plot.
        _, _, bpp, rows = png
        needle = bytes(hex_rgb("#1f4e9a"))
        top = next(y for y in range(chart_top, chart_bottom) if rows[y].find(needle) >= 0)
        xs = [x for x in range(png[0]) if rows[top][x * bpp:x * bpp + 3] == needle]
        # The plot's ends: the x labels "0 s" and "30 s" are at the plot's edges, which the line
        # reaches (its first and last samples).
        line_columns = sorted(total_line)
        left, right = line_columns[0], line_columns[-1]
        where = (sum(xs) / len(xs) - left) / (right - left)
        check(abs(where - 20 / 30) < 0.02, "the total's peak drawn at %.3f of the time axis, wanted 0.667" % where)
    colours = set()
    _, _, bpp, rows = png
    for y in range(flames[0][1], png[1]):
        row = rows[y]
        colours.update(row[i:i + 3] for i in range(0, len(row), bpp * 2))
    svg_fills = {bytes(hex_rgb(m)) for m in re.findall(r'fill="(#[0-9a-f]{6})" rx="2"', report)}
    check(svg_fills <= colours,
          "the flame graphs' colours on the page: %d of %d" % (len(svg_fills & colours), len(svg_fills)))
    if keep:
        shutil.copy(png_path, os.path.join(keep, "report.png"))


def test_bad_input(scratch):
    folded = os.path.join(scratch, "bad.folded")
    with open(folded, "wb") as f:
        f.write(b"a;b 5\nno value here\nc 1.5\n\na 7\n")
    result = render(folded)
    stderr = result.stderr.decode()
    check(result.returncode == 1, "bad lines: exit %d, wanted 1" % result.returncode)
    check(stderr == "%s:2: the value 'here' is not a non-negative integer\n"
                    "%s:3: the value '1.5' is not a non-negative integer\n" % (folded, folded),
          "bad lines named: %r" % stderr)
    root = ET.fromstring(result.stdout)
    check(root.get("data-total") == "12", "the good lines still drawn: total %s" % root.get("data-total"))
    result = render(os.path.join(scratch, "missing.folded"))
    check(result.returncode == 1 and b"cannot read" in result.stderr, "a missing file: %r" % result.stderr)
    result = render("--unit", "pages")
    check(result.returncode == 2, "a bad option: exit %d" % result.returncode)
    result = render(stdin=b"x;y 3\n")
    check(result.returncode == 0 and b'data-total="3"' in result.stdout, "stdin read")


def main():
    keep = os.environ.get("STACKWALK_SCREENSHOT_DIR")
    scratch = tempfile.mkdtemp(prefix="flamegraph-browser-")
    try:
        test_bad_input(scratch)
        browser = find_chromium(scratch)
        svg_bytes, frames = test_svg(browser, scratch, keep)
        test_interaction(browser, scratch, svg_bytes, frames)
        test_html(browser, scratch, keep)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if failures:
        print("%d checks failed" % len(failures))
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
