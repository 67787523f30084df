"""Pieces of the self-contained HTML report: escaping, number cells, tables, an SVG scatter, and
the page's inline CSS and JavaScript (no file, font or script is fetched from anywhere)."""

from __future__ import annotations

import base64
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

from replay_cli import catalogue as C
from replay_cli.catalogue.units import fmt


def cell(value: Any, css: str = "", title: str = "", shown: str | None = None) -> str:
    """A <td> whose data-v holds the exact value, so sorting is numeric where the value is;
    `shown` is the text the reader sees (default: `fmt(value)`)."""
    sort_key = "" if value is None else repr(value) if isinstance(value, float | int) else value
    attrs = f' data-v="{escape(str(sort_key))}"'
    if css:
        attrs += f' class="{css}"'
    if title:
        attrs += f' title="{escape(title)}"'
    return f"<td{attrs}>{escape(fmt(value) if shown is None else shown)}</td>"


INDEX = "index.html"


def section(anchor: str, title: str, body: str) -> str:
    """A titled section of the page, reachable from the navigation bar by `anchor`."""
    return f'<section id="{anchor}"><h2>{escape(title)}</h2>{body}</section>'


def table(
    headers: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    css: str = "",
    row_ids: Sequence[str] = (),
    text_headers: Sequence[str] = (),
    head_css: Sequence[str] = (),
) -> str:
    """A plain HTML table of raw values or ready <td> cells; text_headers are left-aligned;
    `head_css` gives each header cell a class (a column group's)."""

    def th(i: int, h: str) -> str:
        classes = " ".join(
            c for c in ("text" if h in text_headers else "", head_css[i] if head_css else "") if c
        )
        return f'<th class="{classes}">{escape(h)}</th>' if classes else f"<th>{escape(h)}</th>"

    head = "".join(th(i, h) for i, h in enumerate(headers))
    body = []
    for i, row in enumerate(rows):
        rid = f' id="{escape(row_ids[i])}"' if row_ids else ""
        cells = "".join(c if isinstance(c, str) and c.startswith("<td") else cell(c) for c in row)
        body.append(f"<tr{rid}>{cells}</tr>")
    cls = f' class="{css}"' if css else ""
    return f"<table{cls}><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def png_image(path: Path, alt: str) -> str:
    """A PNG inlined as a data: URI (opening the report reads nothing else from disk or network)."""
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img class="chart" alt="{escape(alt)}" src="data:image/png;base64,{data}">'


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """Round tick values covering [lo, hi]."""
    if hi <= lo:
        hi = lo + 1.0
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = min((m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw), default=raw)
    first = math.floor(lo / step) * step
    ticks = (first + i * step for i in range(int((hi - first) / step) + 2))
    return [t for t in ticks if lo - 1e-12 <= t <= hi + 1e-12]


def _numbers(numbers: Sequence[int]) -> str:
    """A point's label: its config numbers, the first two and a count beyond three."""
    if len(numbers) <= 3:
        return ",".join(map(str, numbers))
    return f"{numbers[0]},{numbers[1]}+{len(numbers) - 2}"


def _label_spot(
    text: str,
    cx: float,
    cy: float,
    taken: list[tuple[float, float, float, float]],
    bounds: tuple[float, float, float],
) -> tuple[float, float]:
    """The top-left corner of a label of `text` beside the point (cx, cy) that overlaps no box
    in `taken` and stays inside the plot (`bounds`: left, right, top); the box is then taken."""
    w, h = 6.2 * len(text) + 2, 11.0
    lo, hi, top = bounds
    tries = [(9, -h / 2), (-9 - w, -h / 2), (-w / 2, -h - 8), (-w / 2, 8)]
    tries += [
        (dx, dy + sign * k * h) for k in range(1, 6) for sign in (-1, 1) for dx, dy in tries[:2]
    ]

    def free(bx: float, by: float) -> bool:
        inside = lo <= bx and bx + w <= hi and by >= top
        return inside and not any(
            bx < tx + tw and tx < bx + w and by < ty + th and ty < by + h
            for tx, ty, tw, th in taken
        )

    spots = [(cx + dx, cy + dy) for dx, dy in tries]
    bx, by = next((s for s in spots if free(*s)), spots[0])
    taken.append((bx, by, w, h))
    return bx, by


LABEL_ALL_MAX = 40
"""Up to this many configs every frontier point is numbered; beyond, only the verdict's points."""


@dataclass(frozen=True)
class _Plane:
    """The frontier's drawing area: its size, margins and the data ranges its axes span."""

    width: int
    height: int
    x: tuple[float, float]
    y: tuple[float, float]
    left: int = 62
    right: int = 16
    top: int = 30
    bottom: int = 48

    @classmethod
    def of(cls, xs: list[float], ys: list[float], many: bool) -> _Plane:
        """x: the data's own range (a 0% resolve rate is no config's), y: from 0 (shaping off)."""
        x_lo, x_hi = min(xs), max(xs)
        if x_hi - x_lo < 1e-3:
            x_lo, x_hi = x_lo - 0.01, x_hi + 0.01
        y_lo, y_hi = min(0.0, min(ys)), max(max(ys), 1e-3)
        pad_x, pad_y = (x_hi - x_lo) * 0.06, (y_hi - y_lo) * 0.08
        width, height = (680, 420) if many else (460, 320)
        return cls(width, height, (x_lo - pad_x, x_hi + pad_x), (y_lo - pad_y, y_hi + pad_y))

    def px(self, v: float) -> float:
        lo, hi = self.x
        return self.left + (v - lo) / (hi - lo) * (self.width - self.left - self.right)

    def py(self, v: float) -> float:
        lo, hi = self.y
        span = self.height - self.top - self.bottom
        return self.height - self.bottom - (v - lo) / (hi - lo) * span


def _frontier_axes(
    f: _Plane, title: str, xlabel: str, ylabel: str, vline: float | None, shown: Callable
) -> list[str]:
    """The SVG's opening, title, grid with ticks, the rule's line and the axis labels."""
    w, h, top, bottom, left, right = f.width, f.height, f.top, f.bottom, f.left, f.right
    parts = [
        (
            f'<svg class="scatter" id="frontier-svg" role="img" viewBox="0 0 {w} {h}" '
            f'width="{w}" height="{h}" xmlns="http://www.w3.org/2000/svg">'
            f"<title>{escape(title)}</title>"
        ),
        f'<text x="{w / 2}" y="18" class="svg-title">{escape(title)}</text>',
    ]
    for t in _ticks(*f.x):
        parts.append(
            f'<line x1="{f.px(t):.1f}" x2="{f.px(t):.1f}" y1="{top}" y2="{h - bottom}" class="grid"/>'
            f'<text x="{f.px(t):.1f}" y="{h - bottom + 16}" class="tick">'
            f"{shown('x', round(t, 10))}</text>"
        )
    for t in _ticks(*f.y):
        parts.append(
            f'<line x1="{left}" x2="{w - right}" y1="{f.py(t):.1f}" y2="{f.py(t):.1f}" class="grid"/>'
            f'<text x="{left - 6}" y="{f.py(t) + 4:.1f}" class="tick" text-anchor="end">'
            f"{shown('y', round(t, 10))}</text>"
        )
    if vline is not None:
        parts.append(
            f'<line x1="{f.px(vline):.1f}" x2="{f.px(vline):.1f}" y1="{top}" y2="{h - bottom}" '
            f'class="rule-line"/><text x="{f.px(vline) + 3:.1f}" y="{top + 10}" class="tick">'
            f"rule {shown('rule', vline)}</text>"
        )
    parts.append(
        f'<text x="{(left + w - right) / 2}" y="{h - 10}" class="axis">{escape(xlabel)}</text>'
        f'<text transform="translate(14 {(top + h - bottom) / 2}) rotate(-90)" class="axis">'
        f"{escape(ylabel)}</text>"
    )
    return parts


def frontier_svg(
    points: Sequence[dict[str, Any]],
    *,
    x: str,
    y: str,
    xlabel: str,
    ylabel: str,
    title: str,
    vline: float | None = None,
    hollow: frozenset[str] = frozenset(),
    shown: Callable[[str, float], str] = lambda axis, v: fmt(v),
) -> str:
    """The frontier as inline SVG: one marker per `roles.point_groups` group, coloured by role
    (hollow where all its configs are in `hollow`), numbered, linked to the first one's detail;
    `vline`: the rule's line; `shown(axis, value)` writes a value of axis 'x', 'y' or 'rule'."""
    from replay_cli.report.roles import STYLES

    many = sum(len(p["n"]) for p in points) > LABEL_ALL_MAX
    xs = [p[x] for p in points] or [0.0]
    f = _Plane.of(xs if vline is None else [*xs, vline], [p[y] for p in points] or [0.0], many)
    parts = _frontier_axes(f, title, xlabel, ylabel, vline, shown)
    # Every marker first, so no label is placed over one; then each label at the first free
    # place around its point (right, left, above, below, then further out).
    taken = [(f.px(p[x]) - 8, f.py(p[y]) - 8, 16.0, 16.0) for p in points]
    for p in points:  # in drawing order: the recommended point last, on top
        cx, cy = f.px(p[x]), f.py(p[y])
        name, colour = STYLES[p[C.ROLE]]
        labels = "; ".join(f"#{n} {label}" for n, label in zip(p["n"], p["labels"], strict=True))
        big = p[C.ROLE] in ("recommended", "runner-up")
        # Beyond LABEL_ALL_MAX configs only the verdict's points and shaping off are numbered
        # (every point still names its configs on hover).
        label = ""
        if not many or big or p[C.ROLE] == "off":
            spot = _label_spot(_numbers(p["n"]), cx, cy, taken, (f.left, f.width - f.right, f.top))
            label = (
                f'<text x="{spot[0]:.1f}" y="{spot[1] + 9:.1f}" class="pt-label">'
                f"{_numbers(p['n'])}</text>"
            )
        empty = p[C.ROLE] == "avoid" and all(i in hollow for i in p["ids"])
        # Inline style: the stylesheet's white outline would hide a hollow point's ring.
        fill = f'style="fill:#fff;stroke:{colour};stroke-width:2"' if empty else f'fill="{colour}"'
        parts.append(
            f'<a href="#cfg-{escape(p["ids"][0])}" class="pt-link" '
            f'data-ids="{escape(" ".join(p["ids"]))}"><g class="pt {p[C.ROLE]}">'
            f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{8 if big else 6}" {fill}/>'
            f"{label}"
            f"<title>{escape(name)}: {escape(labels)} — {escape(ylabel)} {shown('y', p[y])}, "
            f"{escape(xlabel)} {shown('x', p[x])}</title></g></a>"
        )
    parts.append("</svg>")
    return "".join(parts)


CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{background:#1d2330;color:#fff;padding:14px 28px}header h1{font-size:20px;margin:0}
header p{margin:4px 0 0;color:#c7ccd6;font-size:12px;word-break:break-all}
nav{padding:6px 28px;background:#e9ecf1;font-size:13px}nav a{margin-right:14px;color:#2450a6}
main{padding:8px 28px 40px;max-width:1500px}
section{background:#fff;border:1px solid #dfe3ea;border-radius:6px;padding:10px 18px 16px;margin:16px 0}
h2{font-size:17px;margin:6px 0 10px}h3{font-size:15px;margin:14px 0 6px}
table{border-collapse:collapse;font-size:12.5px;margin:4px 0}
th,td{border-bottom:1px solid #e6e9ef;padding:3px 8px;text-align:right;white-space:nowrap}
th:first-child,td:first-child,td.text,th.text{text-align:left}
thead th{background:#f0f2f6;position:sticky;top:0}
table.sortable th{cursor:pointer;user-select:none}table.sortable th:hover{background:#e2e6ee}
th[aria-sort=ascending]::after{content:" \\25B2"}th[aria-sort=descending]::after{content:" \\25BC"}
td.hazard{background:#fde2e1;color:#8a1c14;font-weight:600}td.warn{background:#fff3d6;color:#7a5200}
.scroll{overflow-x:auto;max-height:640px;overflow-y:auto}
ul.findings{list-style:none;padding:0;margin:0}main p,main li,main dd{overflow-wrap:anywhere}ul.findings li{padding:5px 8px;margin:4px 0;border-left:4px solid #999;background:#fafbfc}
li.decision{border-color:#2e7d32!important}.badge.decision{background:#2e7d32}li.hazard{border-color:#c62828!important}li.warning{border-color:#e6a100!important}li.ok{border-color:#2e7d32!important}li.info{border-color:#5c7cfa!important}
.badge{display:inline-block;font-size:11px;font-weight:700;text-transform:uppercase;padding:0 6px;border-radius:3px;margin-right:6px;color:#fff;background:#777}
.badge.hazard{background:#c62828}.badge.warning{background:#b07800}.badge.ok{background:#2e7d32}.badge.info{background:#4263c9}
.filters{display:flex;flex-wrap:wrap;gap:10px;margin:6px 0}.filters label{font-size:12px}
.charts figure{margin:10px 0 18px}.charts figcaption{font-size:12.5px;color:#4a5263;margin-bottom:4px}
img.chart{max-width:100%;height:auto;border:1px solid #e6e9ef}
.rule-line{stroke:#555;stroke-dasharray:4 3}.grid{stroke:#e6e9ef}.tick{font-size:10px;fill:#556;text-anchor:middle}.axis{font-size:11.5px;fill:#334;text-anchor:middle}
.svg-title{font-size:13px;font-weight:600;text-anchor:middle}.pt circle{stroke:#fff}.pt-label{font-size:10px;fill:#334}
.frontier{display:flex;flex-wrap:wrap;gap:16px}svg.scatter{max-width:100%;height:auto}
td.config,th:nth-child(2){position:sticky;left:0;background:#fff;z-index:1}thead th:nth-child(2){z-index:2;background:#f0f2f6}
.key{display:inline-block;margin-right:10px;white-space:nowrap}.key i{display:inline-block;width:10px;height:10px;border-radius:5px;margin-right:4px}
p.verdict{font-size:15px;margin:6px 0}.launch{position:relative}button.copy{position:absolute;right:6px;top:6px;font-size:11.5px;padding:2px 8px;border:1px solid #b8c0cc;border-radius:3px;background:#fff;cursor:pointer}pre.overrides{background:#f0f2f6;padding:8px 10px;border-radius:4px;white-space:pre-wrap;overflow-wrap:normal;word-break:normal;overflow-x:auto;font-size:12.5px}
td.role-recommended{color:#2e7d32;font-weight:700}td.role-runner-up{color:#558b2f;font-weight:600}td.role-avoid{color:#8a1c14}
@media (max-width:600px){main{padding:4px 8px 24px}header,nav{padding-left:10px;padding-right:10px}section{padding:8px 10px 12px}dl.facts{grid-template-columns:1fr}}.muted{color:#667085;font-size:12.5px}
details{border-top:1px solid #eef0f4;padding:4px 0}summary{cursor:pointer;font-weight:600}
dl.facts{display:grid;grid-template-columns:max-content auto;gap:2px 14px;margin:6px 0}dt{color:#556}dd{margin:0}
table.summary thead tr:last-child th{white-space:normal;min-width:48px;max-width:116px;vertical-align:bottom}
tr.groups th{position:static;text-align:left;font-weight:600;color:#4a5263;border-bottom:2px solid #c9d0dc}
.filters input{vertical-align:middle}
#summary:has(#show-rule:not(:checked)) .g-rule,#summary:has(#show-hazards:not(:checked)) .g-hazards,
#summary:has(#show-context:not(:checked)) .g-context,#summary:has(#show-params:not(:checked)) .g-params{display:none}
ul.avoid{margin:2px 0 8px;padding-left:20px}ul.avoid li{margin:2px 0}
.chart-box{overflow-x:auto}
@media (max-width:600px){.chart-box img.chart{max-width:none;width:760px}}
"""

JS = """
(function(){
  function key(td){var v=td.getAttribute('data-v');var n=parseFloat(v);
    return (v!==null&&v!==''&&!isNaN(n)&&isFinite(v))?n:(v===null||v===''?null:v.toLowerCase());}
  document.querySelectorAll('table.sortable').forEach(function(t){
    var heads=t.querySelectorAll('thead tr:last-child th');
    heads.forEach(function(th,i){th.addEventListener('click',function(){
      var asc=th.getAttribute('aria-sort')!=='ascending';
      heads.forEach(function(h){h.removeAttribute('aria-sort');});
      th.setAttribute('aria-sort',asc?'ascending':'descending');
      var body=t.tBodies[0];var rows=Array.prototype.slice.call(body.rows);
      rows.sort(function(a,b){var x=key(a.cells[i]),y=key(b.cells[i]);
        if(x===y)return 0;if(x===null)return 1;if(y===null)return -1;
        if(typeof x!==typeof y){x=String(x);y=String(y);}
        return (x<y?-1:1)*(asc?1:-1);});
      rows.forEach(function(r){body.appendChild(r);});
    });});
  });
  var filters=document.querySelectorAll('select[data-filter]');
  function apply(){
    var t=document.getElementById('summary-table');if(!t)return;var shown=0;
    Array.prototype.forEach.call(t.tBodies[0].rows,function(r){
      var ok=true;filters.forEach(function(f){var c=parseInt(f.getAttribute('data-filter'),10);
        if(f.value!=='*'&&r.cells[c].textContent!==f.value)ok=false;});
      r.style.display=ok?'':'none';if(ok)shown++;});
    var n=document.getElementById('shown-count');if(n)n.textContent=String(shown);
    document.querySelectorAll('a.pt-link').forEach(function(a){
      var any=a.getAttribute('data-ids').split(' ').some(function(id){
        var r=document.getElementById('row-'+id);return r&&r.style.display!=='none';});
      a.style.display=any?'':'none';});
  }
  function openTarget(){var id=decodeURIComponent(location.hash.slice(1));if(!id)return;
    var el=document.getElementById(id);if(el&&el.tagName==='DETAILS'){el.open=true;el.scrollIntoView();}}
  window.addEventListener('hashchange',openTarget);openTarget();
  filters.forEach(function(f){f.addEventListener('change',apply);});
  document.querySelectorAll('button.copy').forEach(function(b){b.addEventListener('click',function(){
    var code=b.parentNode.querySelector('code');var text=code?code.textContent:'';
    function done(){b.textContent='copied';setTimeout(function(){b.textContent='copy';},1500);}
    if(navigator.clipboard&&navigator.clipboard.writeText){navigator.clipboard.writeText(text).then(done,function(){});}
    else{var r=document.createRange();r.selectNodeContents(code);var sel=getSelection();sel.removeAllRanges();sel.addRange(r);document.execCommand('copy');done();}
  });});
})();
"""


def breakable(text: str) -> str:
    """Escaped text that may wrap after each `=` besides its spaces (a <wbr>, which a copy does
    not take), never inside a number (`0.016666666666666666`) or a name."""
    return "=<wbr>".join(escape(part) for part in text.split("="))


def launch_block(text: str, what: str) -> str:
    """A block of text to paste (overrides, a YAML block) with a copy button; it wraps at spaces
    and after `=`, never inside a number."""
    return (
        f'<div class="launch"><button type="button" class="copy" aria-label="copy the {escape(what)}">'
        f'copy</button><pre class="overrides"><code>{breakable(text)}</code></pre></div>'
    )


def page(title: str, subtitle: str, nav: Sequence[tuple[str, str]], sections: Sequence[str]) -> str:
    """The whole document: inline CSS and script, a navigation bar and the sections."""
    links = "".join(f'<a href="#{a}">{escape(t)}</a>' for a, t in nav)
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'\">"
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body>"
        f"<header><h1>{escape(title)}</h1><p>{escape(subtitle)}</p></header>"
        f"<nav>{links}</nav><main>{''.join(sections)}</main>"
        f"<script>{JS}</script></body></html>\n"
    )
