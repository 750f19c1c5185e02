"""Static twins: a live panel's figure for the published page, where no kernel runs.

A twin is precomputed with MuJoCo over a grid of slider positions (:class:`TwinSlider`) and drawn in the browser
by a small script of our own (no CDN): :func:`twin_line`, :func:`twin_markers`, :func:`twin_text` and
:func:`twin_note` describe what one frame of each plot (:class:`TwinAxes`) shows, :func:`static_twin` packs every
frame into one HTML block whose sliders pick the frame. Repeated arrays are stored once, numbers to the digits a
plot can show.
"""

from __future__ import annotations

import dataclasses
import html
import json
import math
import re
from collections.abc import Callable, Sequence

import numpy as np

from physai.interface import plots


# ---------------------------------------------------------------------------------------------
# The static twin


_KEY = re.compile(r'^[a-z0-9][a-z0-9-]*$')


@dataclasses.dataclass(frozen=True, kw_only=True)
class TwinSlider:
    """One control of a static twin: a position per precomputed value.

    Args (keyword or positional): name (keyword passed to the frame function), label (with unit),
    values (the precomputed values, in order), labels (text shown for each value; default
    ``format(value, '.4g')``), default (index of the start position), kind (``'slider'`` or
    ``'select'``, a dropdown, e.g. for integrators).
    """

    name: str
    label: str
    values: tuple
    labels: tuple[str, ...] | None = None
    default: int = 0
    kind: str = 'slider'

    def __init__(self, name: str, label: str, values: Sequence, labels: Sequence[str] | None = None,
                 *, default: int = 0, kind: str = 'slider'):
        values = tuple(values)
        if not values:
            raise ValueError(f'{name}: values must not be empty')
        labels = tuple(str(s) for s in labels) if labels is not None else tuple(
            v if isinstance(v, str) else format(v, '.4g') for v in values)
        if len(labels) != len(values):
            raise ValueError(f'{name}: labels must match values, got {len(labels)} labels for '
                             f'{len(values)} values')
        if not 0 <= default < len(values):
            raise ValueError(f'{name}: default must be an index in [0, {len(values) - 1}], '
                             f'got {default}')
        if kind not in ('slider', 'select'):
            raise ValueError(f"{name}: kind must be one of slider, select, got {kind!r}")
        if not re.match(r'^[A-Za-z_][A-Za-z0-9_]*$', name):
            raise ValueError(f'{name!r}: name must be a Python identifier')
        for field, value in (('name', name), ('label', label), ('values', values),
                             ('labels', labels), ('default', default), ('kind', kind)):
            object.__setattr__(self, field, value)


@dataclasses.dataclass(frozen=True, kw_only=True)
class TwinAxes:
    """One plot of a static twin. Limits left None follow each frame's data."""

    title: str = ''
    xlabel: str = ''
    """With the unit, e.g. ``'time (s)'``."""
    ylabel: str = ''
    xlim: tuple[float, float] | None = None
    ylim: tuple[float, float] | None = None
    xlog: bool = False
    ylog: bool = False
    legend: str | None = 'ur'
    """Show a legend (``'ur'``, ``'ul'``, ``'lr'`` or ``'ll'``, kept for the live panels' corners), or None for none.
    The static twin draws it in a band under its plot, off the data."""


def twin_line(x, y, *, label: str | None = None, color: str = plots.COLORS['response'],
              width: float = 1.6, dash: str | None = None) -> dict:
    """A line of a twin frame. x, y: (n,); non-finite values break the line. dash: SVG dasharray."""
    item = {'k': 'l', 'x': np.asarray(x, dtype=float), 'y': np.asarray(y, dtype=float),
            'c': color, 'w': width}
    if dash:
        item['d'] = dash
    if label:
        item['n'] = label
    return item


def twin_markers(x, y, *, label: str | None = None, color: str = plots.COLORS['current'],
                 size: float = 4.0, symbol: str = 'o', filled: bool = True) -> dict:
    """Markers of a twin frame at (x, y), (n,) each. symbol: ``'o'`` circle, ``'x'``, ``'s'`` square."""
    if symbol not in ('o', 'x', 's'):
        raise ValueError(f"symbol must be one of o, x, s, got {symbol!r}")
    item = {'k': 'm', 'x': np.atleast_1d(np.asarray(x, dtype=float)),
            'y': np.atleast_1d(np.asarray(y, dtype=float)), 'c': color, 's': size, 'p': symbol,
            'f': 1 if filled else 0}
    if label:
        item['n'] = label
    return item


def twin_text(text: str, *, x: float = 0.5, y: float = 0.5, color: str = '#222222',
              size: float = 12.0, bold: bool = False, anchor: str = 'middle') -> dict:
    """Text at (x, y) in axes fractions (0, 0 bottom left). anchor: ``start``, ``middle``, ``end``."""
    if anchor not in ('start', 'middle', 'end'):
        raise ValueError(f"anchor must be one of start, middle, end, got {anchor!r}")
    return {'k': 't', 's': str(text), 'x': float(x), 'y': float(y), 'c': color, 'z': size,
            'b': 1 if bold else 0, 'a': anchor}


MARGIN_TOP, MARGIN_BOTTOM, MARGIN_LEFT, MARGIN_RIGHT = 24, 42, 62, 14
"""The plot frame's margins in px inside each SVG (the script's ``M``): tick labels, axis labels, the title."""

NOTE_CENTRE_PX = 12
"""Height of a note's middle under the SVG's top edge, px: in the top margin, where a title would sit."""

NOTE_INSET_PX = 8
"""A note starts this far from the SVG's left edge (over the y label's margin) and must end as far from its right."""


def twin_note(text: str, *, color: str = '#222222', size: float = 11.0) -> dict:
    """A one-line note above the plot frame, in the title's place, so it never covers data.

    The plot's :class:`TwinAxes` must have no title (:func:`twin_html` refuses one). The note starts near the SVG's
    left edge; its place in axes fractions is set by :func:`twin_html`, which knows the plot's size.
    """
    return {'k': 't', 's': str(text), 'x': 0.0, 'y': None, 'c': color, 'z': float(size), 'b': 0, 'a': 'start'}


def _place_note(item: dict, axes: 'TwinAxes', index: int, width: int, height: int) -> dict:
    """A :func:`twin_note` item with its height in axes fractions (0 bottom, 1 top of the frame)."""
    if axes.title:
        raise ValueError(f'a note takes the title\'s place: axes {index} has the title {axes.title!r}; '
                         'leave it out and say what the plot shows in the caption')
    room = width - 2 * NOTE_INSET_PX
    if len(item['s']) * 0.62 * item['z'] > room:  # an average sans-serif character is about 0.6 em wide
        raise ValueError(f'note {item["s"]!r} is too long for a {width} px plot: at most '
                         f'{int(room / (0.62 * item["z"]))} characters at {item["z"]:g} px')
    frame_w, frame_h = width - MARGIN_LEFT - MARGIN_RIGHT, height - MARGIN_TOP - MARGIN_BOTTOM
    return {**item, 'x': (NOTE_INSET_PX - MARGIN_LEFT) / frame_w,
            'y': (frame_h + MARGIN_TOP - NOTE_CENTRE_PX) / frame_h}


def _compact_numbers(values: np.ndarray, digits: int) -> str:
    """A JSON array of ``values``, each rounded to ``digits`` significant digits.

    No value is resolved finer than ``digits + 3`` decades below the array's largest |value|, so a trajectory settling towards 0 does not spend characters on noise, while a quantity
    drawn on a log axis (kp 1 … 30000, sag 10 … 0.001) keeps its relative precision.
    """
    values = np.asarray(values, dtype=float).ravel()
    finite = np.isfinite(values)
    if not finite.any():
        return '[' + ','.join('null' for _ in values) + ']'
    biggest = float(np.max(np.abs(values[finite])))
    top = math.floor(math.log10(biggest)) if biggest > 0 else 0
    out = []
    for v in values:
        if not math.isfinite(v):
            out.append('null')
            continue
        own = math.floor(math.log10(abs(v))) if v != 0 else top
        decimals = min(digits - 1 - own, digits + 3 - top)
        if decimals > 0:
            s = f'{v:.{decimals}f}'.rstrip('0').rstrip('.')
        else:
            s = str(int(round(v, decimals)))
        out.append('0' if s in ('-0', '', '-') else s)
    return '[' + ','.join(out) + ']'


def _scalar(v: float, digits: int) -> str:
    return _compact_numbers(np.array([v]), digits)[1:-1]


def _json_text(value) -> str:
    """Deterministic JSON safe inside a <script> element."""
    text = json.dumps(value, sort_keys=True, separators=(',', ':'), ensure_ascii=True)
    return text.replace('<', '\\u003c').replace('>', '\\u003e').replace('&', '\\u0026')


def _unit(label: str) -> str:
    """The unit in a slider's label, ``'kp (N·m/rad)'`` -> ``'N·m/rad'``; empty when the label names none."""
    found = re.search(r'\(([^()]*)\)\s*$', label)
    return found.group(1) if found and not any(ch.isdigit() for ch in found.group(1)) else ''


def _describe(axes: 'TwinAxes') -> str:
    """A one-line text description of a plot for screen readers: its title, then what it plots against what."""
    what = f'{axes.ylabel} against {axes.xlabel}' if axes.ylabel and axes.xlabel else ''
    return ': '.join(part for part in (axes.title, what) if part) or 'plot'


def twin_html(key: str, sliders: Sequence[TwinSlider], axes: Sequence[TwinAxes],
              frame: Callable[..., Sequence[Sequence[dict]]], *, title: str | None = None,
              caption: str | None = None, digits: int = 4, width: int = 400,
              height: int = 280) -> str:
    """The HTML text of a static twin (see :func:`static_twin`)."""
    if not _KEY.match(key):
        raise ValueError(f'key must be lowercase letters, digits and hyphens, got {key!r}')
    if not sliders:
        raise ValueError('sliders must not be empty')
    if not axes:
        raise ValueError('axes must not be empty')
    root = f'physai-twin-{key}'
    arrays: dict[str, int] = {}
    items: dict[str, int] = {}

    def array_id(values: np.ndarray) -> int:
        text = _compact_numbers(values, digits)
        return arrays.setdefault(text, len(arrays))

    def item_id(item: dict) -> int:
        entry = {}
        for name, value in item.items():
            if name in ('x', 'y') and item['k'] != 't':
                entry[name] = array_id(value)
            elif isinstance(value, float):
                entry[name] = float(_scalar(value, digits))
            else:
                entry[name] = value
        text = _json_text(entry)
        return items.setdefault(text, len(items))

    frames = []
    for combination in np.ndindex(*[len(s.values) for s in sliders]):
        kwargs = {s.name: s.values[i] for s, i in zip(sliders, combination)}
        content = frame(**kwargs)
        if len(content) != len(axes):
            raise ValueError(f'frame must return one item list per axes ({len(axes)}), '
                             f'got {len(content)} for {kwargs}')
        placed = [[_place_note(it, a, i, width, height) if it['k'] == 't' and it['y'] is None else it
                   for it in per_axes] for i, (a, per_axes) in enumerate(zip(axes, content))]
        frames.append([[item_id(it) for it in per_axes] for per_axes in placed])

    def limits(lim):
        return None if lim is None else [float(_scalar(v, 6)) for v in lim]

    spec = {
        'width': width, 'height': height,
        'sliders': [{'name': s.name, 'label': s.label, 'labels': list(s.labels), 'unit': _unit(s.label),
                     'init': s.default, 'kind': s.kind} for s in sliders],
        'axes': [{'title': a.title, 'xlabel': a.xlabel, 'ylabel': a.ylabel,
                  'xlim': limits(a.xlim), 'ylim': limits(a.ylim), 'xlog': a.xlog,
                  'ylog': a.ylog, 'legend': a.legend} for a in axes],
    }
    data = ('{"spec":' + _json_text(spec)
            + ',"arrays":[' + ','.join(arrays) + ']'
            + ',"items":[' + ','.join(items) + ']'
            + ',"frames":' + _json_text(frames) + '}')
    controls = []
    for s in sliders:
        cid = f'{root}-{s.name}'
        if s.kind == 'select':
            options = ''.join(f'<option value="{i}"{" selected" if i == s.default else ""}>'
                              f'{html.escape(lab)}</option>' for i, lab in enumerate(s.labels))
            widget = f'<select id="{cid}" style="font-size:13px">{options}</select>'
        else:
            valuetext = f'{s.labels[s.default]} {_unit(s.label)}'.strip()
            widget = (f'<span style="white-space:nowrap">'
                      f'<input type="range" id="{cid}" min="0" max="{len(s.values) - 1}" step="1" '
                      f'value="{s.default}" aria-valuetext="{html.escape(valuetext)}" '
                      f'style="width:160px;max-width:55vw;vertical-align:middle">'
                      f' <span id="{cid}-value" style="display:inline-block;min-width:64px;'
                      f'font-family:monospace">{html.escape(s.labels[s.default])}</span></span>')
        # a control wraps inside its own line on a narrow screen (label, then slider and value), never past the box
        controls.append(f'<label style="display:inline-block;max-width:100%;margin-right:18px">'
                        f'{html.escape(s.label)} {widget}</label>')
    svgs = ''.join(f'<svg id="{root}-plot-{i}" xmlns="http://www.w3.org/2000/svg" role="img" '
                   f'aria-label="{html.escape(_describe(a))}" '
                   f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
                   f'style="max-width:100%;height:auto;background:#ffffff"></svg>'
                   for i, a in enumerate(axes))
    heading = (f'<div style="font-weight:bold;margin-bottom:4px">{html.escape(title)}</div>'
               if title else '')
    note = (f'<div style="font-size:12px;color:#444444;margin-top:4px">{html.escape(caption)}</div>'
            if caption else '')
    return (
        f'<div id="{root}" class="physai-twin" style="background:#ffffff;color:#222222;'
        f'border:1px solid #cccccc;border-radius:4px;padding:8px;font-family:sans-serif;'
        f'font-size:13px;max-width:100%;overflow-x:auto">'
        f'{heading}<div id="{root}-controls" style="margin-bottom:6px">{"".join(controls)}</div>'
        f'<div id="{root}-plots" style="display:flex;flex-wrap:wrap;gap:4px">{svgs}</div>{note}'
        f'<script type="application/json" id="{root}-data">{data}</script>'
        f'<script>(function(){{var ROOT="{root}";{_TWIN_JS}}})();</script></div>')


def static_twin(key: str, sliders: Sequence[TwinSlider], axes: Sequence[TwinAxes],
                frame: Callable[..., Sequence[Sequence[dict]]], *, title: str | None = None,
                caption: str | None = None, digits: int = 4, width: int = 400,
                height: int = 280):
    """A kernel-free twin of a live panel: precomputed frames, HTML sliders, inline SVG plots.

    Args:
      key: lowercase letters, digits, hyphens; unique on the page. Ids: ``physai-twin-<key>``
        (root), ``physai-twin-<key>-<slider name>`` (inputs), ``physai-twin-<key>-plot-<i>`` (SVGs),
        ``physai-twin-<key>-data`` (the JSON).
      sliders: the controls; every combination of their values is one frame.
      axes: one :class:`TwinAxes` per plot, side by side.
      frame: ``frame(**{slider.name: value}) -> [items of plot 0, items of plot 1, ...]`` built
        with :func:`twin_line`, :func:`twin_markers`, :func:`twin_text`, :func:`twin_note` (a note above the
        plot, off the data). Items with a label go into the legend. Equal arrays and items are stored once, so
        shared curves cost nothing extra.
      title: heading above the controls.
      caption: a line of text under the plots.
      digits: significant digits kept in each array (relative to its largest value).
      width, height: size of each plot, px.

    Returns:
      ``IPython.display.HTML``; its ``.data`` is the text (byte-stable for equal inputs).
    """
    from IPython.display import HTML
    return HTML(twin_html(key, sliders, axes, frame, title=title, caption=caption,
                          digits=digits, width=width, height=height))


_TWIN_JS = r"""
var root=document.getElementById(ROOT);if(!root||root.getAttribute('data-ready'))return;
root.setAttribute('data-ready','1');
var D=JSON.parse(document.getElementById(ROOT+'-data').textContent),S=D.spec,NS='http://www.w3.org/2000/svg';
var W=S.width,H=S.height,M={l:62,r:14,t:24,b:42};
function el(tag,a,p,txt){var e=document.createElementNS(NS,tag);for(var k in a)e.setAttribute(k,a[k]);
if(txt!==undefined)e.textContent=txt;if(p)p.appendChild(e);return e;}
function fin(v){return v!==null&&isFinite(v);}
function lg(v){return Math.log(v)/Math.LN10;}
function num(v){var a=Math.abs(v);if(a===0)return '0';if(a>=1e5||a<1e-3)return v.toExponential(0).replace('+','');
return String(parseFloat(v.toPrecision(4)));}
function lims(ax,items,c,log){var L=ax[c+'lim'];if(L)return L;var lo=Infinity,hi=-Infinity;
items.forEach(function(it){if(it.k==='t')return;D.arrays[it[c]].forEach(function(v){
if(fin(v)&&(!log||v>0)){if(v<lo)lo=v;if(v>hi)hi=v;}});});
if(!(lo<=hi))return log?[1,10]:[0,1];
if(log){lo=Math.pow(10,Math.floor(lg(lo)));hi=Math.pow(10,Math.ceil(lg(hi)));if(lo===hi)hi*=10;return[lo,hi];}
if(lo===hi){lo-=1;hi+=1;}var p=0.05*(hi-lo);return[lo-p,hi+p];}
function ticks(lo,hi,log){var t=[],i;if(log){var a=Math.ceil(lg(lo)-1e-9),b=Math.floor(lg(hi)+1e-9),
s=Math.max(1,Math.ceil((b-a+1)/7));for(i=a;i<=b;i+=s)t.push(Math.pow(10,i));return t;}
var raw=(hi-lo)/6,m=Math.pow(10,Math.floor(lg(raw))),st=[1,2,2.5,5,10].map(function(f){return f*m;})
.filter(function(x){return x>=raw;})[0];for(i=Math.ceil(lo/st-1e-9);i*st<=hi+1e-9*st;i++)t.push(i*st);return t;}
function sc(lim,log,a,b){var lo=log?lg(lim[0]):lim[0],hi=log?lg(lim[1]):lim[1];
return function(v){if(!fin(v)||(log&&v<=0))return NaN;v=log?lg(v):v;return a+(v-lo)/(hi-lo)*(b-a);};}
var svgs=S.axes.map(function(_,i){return document.getElementById(ROOT+'-plot-'+i);});
function plot(i,items){var ax=S.axes[i],svg=svgs[i];while(svg.firstChild)svg.removeChild(svg.firstChild);
var leg=items.filter(function(it){return it.n&&it.k!=='t';}),rows=[],row=[],rw=0;
if(ax.legend&&leg.length){leg.forEach(function(it){var w=it.n.length*6.4+32;if(rw+w>W-8&&row.length){rows.push(row);row=[];rw=0;}
row.push([it,rw]);rw+=w;});rows.push(row);}
var HB=H+(rows.length?rows.length*16+6:0);svg.setAttribute('viewBox','0 0 '+W+' '+HB);svg.setAttribute('height',HB);
var x0=M.l,x1=W-M.r,y0=H-M.b,y1=M.t,xl=lims(ax,items,'x',ax.xlog),yl=lims(ax,items,'y',ax.ylog),
X=sc(xl,ax.xlog,x0,x1),Y=sc(yl,ax.ylog,y0,y1);
el('rect',{x:0,y:0,width:W,height:HB,fill:'#ffffff'},svg);
var cid=ROOT+'-clip-'+i,defs=el('defs',{},svg),cp=el('clipPath',{id:cid},defs);
el('rect',{x:x0,y:y1,width:x1-x0,height:y0-y1},cp);
ticks(xl[0],xl[1],ax.xlog).forEach(function(t){var x=X(t);el('line',{x1:x,x2:x,y1:y0,y2:y1,stroke:'#e3e3e3'},svg);
el('line',{x1:x,x2:x,y1:y0,y2:y0+4,stroke:'#333'},svg);
el('text',{x:x,y:y0+15,'text-anchor':'middle','font-size':10,fill:'#333'},svg,num(t));});
ticks(yl[0],yl[1],ax.ylog).forEach(function(t){var y=Y(t);el('line',{x1:x0,x2:x1,y1:y,y2:y,stroke:'#e3e3e3'},svg);
el('line',{x1:x0-4,x2:x0,y1:y,y2:y,stroke:'#333'},svg);
el('text',{x:x0-6,y:y+3.5,'text-anchor':'end','font-size':10,fill:'#333'},svg,num(t));});
el('rect',{x:x0,y:y1,width:x1-x0,height:y0-y1,fill:'none',stroke:'#333'},svg);
el('text',{x:(x0+x1)/2,y:H-8,'text-anchor':'middle','font-size':12,fill:'#222'},svg,ax.xlabel);
el('text',{x:14,y:(y0+y1)/2,'text-anchor':'middle','font-size':12,fill:'#222',
transform:'rotate(-90 14 '+(y0+y1)/2+')'},svg,ax.ylabel);
if(ax.title)el('text',{x:(x0+x1)/2,y:16,'text-anchor':'middle','font-size':13,fill:'#222'},svg,ax.title);
var g=el('g',{'clip-path':'url(#'+cid+')'},svg);
items.forEach(function(it){if(it.k==='l'){var xs=D.arrays[it.x],ys=D.arrays[it.y],d='',pen=false;
for(var j=0;j<xs.length;j++){var px=X(xs[j]),py=Y(ys[j]);
if(isFinite(px)&&isFinite(py)){py=Math.max(-1e4,Math.min(1e4,py));d+=(pen?'L':'M')+px.toFixed(1)+' '+py.toFixed(1);pen=true;}
else pen=false;}
var a={d:d||'M0 0',fill:'none',stroke:it.c,'stroke-width':it.w,'stroke-linejoin':'round'};if(it.d)a['stroke-dasharray']=it.d;
el('path',a,g);}
else if(it.k==='m'){var mx=D.arrays[it.x],my=D.arrays[it.y];for(var j=0;j<mx.length;j++){
var px=X(mx[j]),py=Y(my[j]);if(!isFinite(px)||!isFinite(py))continue;mark(g,it,px,py);}}
});
items.forEach(function(it){if(it.k!=='t')return;el('text',{x:x0+it.x*(x1-x0),y:y0-it.y*(y0-y1),
'text-anchor':it.a,'font-size':it.z,'font-weight':it.b?'bold':'normal',fill:it.c,'dominant-baseline':'middle'},svg,it.s);});
rows.forEach(function(r,k){var yy=H+14+k*16;r.forEach(function(p){var it=p[0],lx=8+p[1];
if(it.k==='l'){var a={x1:lx,x2:lx+20,y1:yy-4,y2:yy-4,stroke:it.c,'stroke-width':it.w};if(it.d)a['stroke-dasharray']=it.d;
el('line',a,svg);}else mark(svg,it,lx+10,yy-4);el('text',{x:lx+24,y:yy,'font-size':11,fill:'#222'},svg,it.n);});});}
function mark(p,it,x,y){var s=it.s;if(it.p==='x'){el('path',{d:'M'+(x-s)+' '+(y-s)+'L'+(x+s)+' '+(y+s)+'M'+(x-s)+' '+(y+s)+'L'+(x+s)+' '+(y-s),
stroke:it.c,'stroke-width':1.8},p);}else if(it.p==='s'){el('rect',{x:x-s,y:y-s,width:2*s,height:2*s,fill:it.f?it.c:'none',stroke:it.c,'stroke-width':1.5},p);}
else el('circle',{cx:x,cy:y,r:s,fill:it.f?it.c:'none',stroke:it.c,'stroke-width':it.f?1:2},p);}
var inputs=S.sliders.map(function(s){return document.getElementById(ROOT+'-'+s.name);});
function draw(){var idx=0;S.sliders.forEach(function(s,k){var v=parseInt(inputs[k].value,10);idx=idx*s.labels.length+v;
var out=document.getElementById(ROOT+'-'+s.name+'-value');if(out)out.textContent=s.labels[v];
if(s.kind!=='select')inputs[k].setAttribute('aria-valuetext',(s.labels[v]+' '+(s.unit||'')).trim());});
var f=D.frames[idx];root.setAttribute('data-frame',idx);
f.forEach(function(ids,i){plot(i,ids.map(function(j){return D.items[j];}));});}
inputs.forEach(function(e){e.addEventListener('input',draw);e.addEventListener('change',draw);});
draw();
"""
