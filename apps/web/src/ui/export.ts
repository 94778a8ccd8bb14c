/**
 * Exporting what is on screen: the current view's figures (every element marked
 * `data-export` inside it: SVG charts, canvases and tables) laid out in one SVG or one PNG, each
 * under its title (`data-export-title`) and over its legend, and downloads of text and bytes. In
 * the SVG a canvas (the address-space heatmap) is an <image> holding its pixels as a PNG data URL,
 * and a table is drawn as text (its cells stay selectable and searchable).
 *
 * The timeline under every view is not exported (it is the same strip on every view); a view
 * with no figure of its own (Recommendations) says so instead. A legend is the text of the elements marked
 * `data-export-legend` inside the figure's element, of those marked
 * `data-export-legend-for="<its data-export name>"` anywhere in the view, and the figure's own
 * `data-export-note`; list items are laid out one after another, each with its colour swatch (a
 * `.ns-swatch` child's background). Figures inside one element marked `data-export-row` (Compare's
 * columns) are placed side by side, as on screen. A table cell's text is its `data-export-text`
 * when it has one (a header whose screen text is split over badges and hints), else what it shows.
 */

const STYLE_PROPS = ['fill', 'fill-opacity', 'stroke', 'stroke-width', 'stroke-opacity', 'opacity', 'font-size', 'font-family', 'font-weight', 'text-anchor', 'dominant-baseline'];

/** An SVG element copied with the computed styles it depends on written inline (CSS does not travel with it). */
function inlineSvg(svg: SVGSVGElement): SVGSVGElement {
  const clone = svg.cloneNode(true) as SVGSVGElement;
  const src = [svg, ...svg.querySelectorAll('*')];
  const dst = [clone, ...clone.querySelectorAll('*')];
  src.forEach((el, i) => {
    const cs = getComputedStyle(el);
    const target = dst[i] as SVGElement | undefined;
    if (!target) return;
    const style = STYLE_PROPS.map((p) => `${p}:${cs.getPropertyValue(p)}`).join(';');
    target.setAttribute('style', style);
  });
  clone.removeAttribute('tabindex');
  return clone;
}

interface LegendItem {
  text: string;
  swatch: string | null;
}

/** A legend laid out in rows within the figure's width. */
interface LegendLine {
  items: Array<LegendItem & { x: number }>;
}

/** A table laid out for export: column widths from the screen, text wrapped within them. */
interface TableLayout {
  widths: number[];
  rows: Array<{ height: number; head: boolean; cells: Array<{ lines: string[]; bold: boolean; align: 'left' | 'right' }> }>;
  rule: string;
}

interface Figure {
  el: Element;
  width: number;
  height: number;
  title: string | null;
  legend: LegendLine[];
  /** The element marked `data-export-row` holding it: figures sharing one are placed side by side. */
  row: Element | null;
  table: TableLayout | null;
}

const XLINK = 'http://www.w3.org/1999/xlink';
const GAP = 16;
const TITLE = 28;
const FIG_TITLE = 20;
const LEGEND_LINE = 18;
const LEGEND_FONT_PX = 12;
const SWATCH = 10;
const CELL_FONT_PX = 12;
const CELL_LINE = 16;
const CELL_PAD = 6;

const clean = (s: string | null | undefined) => (s ?? '').replace(/\s+/g, ' ').trim();

function legendItems(container: Element, root: Element): LegendItem[] {
  const name = container.getAttribute('data-export');
  const sources = [
    ...container.querySelectorAll('[data-export-legend]'),
    ...(name ? root.querySelectorAll(`[data-export-legend-for="${CSS.escape(name)}"]`) : []),
  ];
  const out: LegendItem[] = [];
  for (const src of sources) {
    const items = src.querySelectorAll('li');
    const parts = items.length > 0 ? items : src.querySelectorAll(':scope > span');
    for (const part of parts.length > 0 ? [...parts] : [src]) {
      const text = clean(part.textContent);
      if (!text) continue;
      const sw = part.querySelector('.ns-swatch');
      const bg = sw ? getComputedStyle(sw).backgroundColor : '';
      out.push({ text, swatch: bg && bg !== 'rgba(0, 0, 0, 0)' && bg !== 'transparent' ? bg : null });
    }
  }
  const note = clean(container.getAttribute('data-export-note'));
  if (note) out.push({ text: note, swatch: null });
  return out;
}

let measureCtx: CanvasRenderingContext2D | null | undefined;
function textWidth(text: string, font: string): number {
  measureCtx ??= document.createElement('canvas').getContext('2d');
  if (!measureCtx) return text.length * LEGEND_FONT_PX * 0.6;
  measureCtx.font = font;
  return measureCtx.measureText(text).width;
}

/** Words wrapped into lines no wider than `width` (a word wider than that gets a line of its own). */
function wrap(text: string, width: number, font: string): string[] {
  const lines: string[] = [];
  let run = '';
  for (const word of text.split(' ')) {
    const next = run ? `${run} ${word}` : word;
    if (run && textWidth(next, font) > width) {
      lines.push(run);
      run = word;
    } else run = next;
  }
  if (run) lines.push(run);
  return lines;
}

function layoutLegend(items: LegendItem[], width: number, font: string): LegendLine[] {
  const lines: LegendLine[] = [];
  let line: LegendLine = { items: [] };
  let x = 0;
  const place = (item: LegendItem, gap: number) => {
    const w = (item.swatch ? SWATCH + 4 : 0) + textWidth(item.text, font);
    if (x > 0 && x + w > width) {
      lines.push(line);
      line = { items: [] };
      x = 0;
    }
    line.items.push({ ...item, x });
    x += w + gap;
  };
  for (const item of items) {
    const w = (item.swatch ? SWATCH + 4 : 0) + textWidth(item.text, font);
    if (w <= width || item.swatch) {
      place(item, 14);
      continue;
    }
    // A sentence wider than the figure wraps at words; the next item starts on a new line.
    if (x > 0) {
      lines.push(line);
      line = { items: [] };
      x = 0;
    }
    for (const run of wrap(item.text, width, font)) {
      place({ text: run, swatch: null }, 0);
      lines.push(line);
      line = { items: [] };
      x = 0;
    }
  }
  if (line.items.length > 0) lines.push(line);
  return lines;
}

/** A table cell's text: its `data-export-text`, else the text it shows. */
function cellText(cell: Element): string {
  const own = cell.getAttribute('data-export-text');
  if (own !== null) return clean(own);
  return clean(cell instanceof HTMLElement ? cell.innerText : cell.textContent);
}

/** A table's rows of cell texts, header rows first (what the Markdown summary prints for it). */
export function tableRows(table: HTMLTableElement): string[][] {
  return [...table.rows].map((r) => [...r.cells].map(cellText));
}

/** The view's tables marked for export, with their titles and rows. */
export function exportTables(root: Element): Array<{ title: string | null; rows: string[][] }> {
  return [...root.querySelectorAll('table[data-export]')]
    .filter((t): t is HTMLTableElement => t instanceof HTMLTableElement && t.getBoundingClientRect().width > 0)
    .map((t) => ({ title: clean(t.getAttribute('data-export-title')) || null, rows: tableRows(t) }));
}

function layoutTable(table: HTMLTableElement, family: string): TableLayout {
  const widest = [...table.rows].reduce((a, r) => (r.cells.length > a.cells.length ? r : a), table.rows[0]!);
  const widths = [...widest.cells].map((c) => Math.max(40, Math.round(c.getBoundingClientRect().width)));
  const rows = [...table.rows].map((r) => {
    const head = r.parentElement?.tagName === 'THEAD';
    const cells = [...r.cells].map((c, i) => {
      const bold = c.tagName === 'TH';
      const font = `${bold ? '600 ' : ''}${CELL_FONT_PX}px ${family}`;
      const align: 'left' | 'right' = getComputedStyle(c).textAlign === 'right' ? 'right' : 'left';
      return { lines: wrap(cellText(c), (widths[i] ?? 80) - 2 * CELL_PAD, font), bold, align };
    });
    const height = Math.max(1, ...cells.map((c) => c.lines.length)) * CELL_LINE + 2 * CELL_PAD;
    return { height, head, cells };
  });
  const first = table.querySelector('td, th');
  const border = first ? getComputedStyle(first).borderBottomColor : '';
  return { widths, rows, rule: border && border !== 'rgba(0, 0, 0, 0)' ? border : '#c8c8c8' };
}

/** The view's own figures (never the timeline shared by every view: it is not what the view shows). */
/**
 * Whether the view under `root` has something PNG and SVG would draw (the cheap test of what
 * `figures` lays out: a chart or a table with rows marked for export, not the timeline strip),
 * so the export bar can show those buttons only where they work.
 */
export function hasFigures(root: Element): boolean {
  for (const c of root.querySelectorAll('[data-export]')) {
    if (c.getAttribute('data-export') === 'timeline') continue;
    if (c instanceof HTMLTableElement ? c.rows.length > 0 : c.querySelector('svg, canvas') !== null || c instanceof SVGSVGElement || c instanceof HTMLCanvasElement) return true;
  }
  return false;
}

export function figures(root: Element): Figure[] {
  const family = getComputedStyle(document.body).fontFamily;
  const font = `${LEGEND_FONT_PX}px ${family}`;
  const all = [...root.querySelectorAll('[data-export]')].flatMap((container): Array<{ name: string | null; fig: Figure }> => {
    const name = container.getAttribute('data-export');
    const title = clean(container.getAttribute('data-export-title')) || null;
    const row = container.parentElement?.closest('[data-export-row]') ?? null;
    if (container instanceof HTMLTableElement) {
      if (container.getBoundingClientRect().width <= 0 || container.rows.length === 0) return [];
      const table = layoutTable(container, family);
      const width = table.widths.reduce((a, b) => a + b, 0);
      const height = table.rows.reduce((a, r) => a + r.height, 0);
      return [{ name, fig: { el: container, width, height, title, row, table, legend: layoutLegend(legendItems(container, root), Math.max(width, 320), font) } }];
    }
    const target = container.querySelector('svg, canvas') ?? container;
    const r = target.getBoundingClientRect();
    const width = Math.round(r.width);
    const height = Math.round(r.height);
    if (!(width > 0 && height > 0 && (target instanceof SVGSVGElement || target instanceof HTMLCanvasElement))) return [];
    const legendWidth = row ? width : Math.max(width, 320);
    return [{ name, fig: { el: target, width, height, title, row, table: null, legend: layoutLegend(legendItems(container, root), legendWidth, font) } }];
  });
  return all.filter((f) => f.name !== 'timeline').map((f) => f.fig);
}

function figureHeight(f: Figure): number {
  return (f.title ? FIG_TITLE : 0) + f.height + f.legend.length * LEGEND_LINE;
}

/** Where each figure goes: top to bottom, figures of one `data-export-row` side by side. */
interface Placed {
  f: Figure;
  x: number;
  y: number;
}

function place(figs: Figure[]): { placed: Placed[]; width: number; height: number } {
  const placed: Placed[] = [];
  let y = TITLE + GAP;
  let width = 320;
  for (let i = 0; i < figs.length; ) {
    const row = figs[i]!.row;
    let j = i + 1;
    while (row && j < figs.length && figs[j]!.row === row) j++;
    let x = GAP;
    let h = 0;
    for (const f of figs.slice(i, j)) {
      placed.push({ f, x, y });
      // A figure alone takes its legend's width (at least 320 px); in a row, its own.
      const w = row ? f.width : Math.max(f.width, 320);
      x += w + GAP;
      h = Math.max(h, figureHeight(f));
    }
    width = Math.max(width, x - GAP);
    y += h + GAP;
    i = j;
  }
  return { placed, width: width + GAP, height: y };
}

/** The drawing calls the SVG and the PNG export share (text, rules, swatches). */
interface Painter {
  text(x: number, y: number, s: string, font: string, anchor?: 'start' | 'end'): void;
  rect(x: number, y: number, w: number, h: number, fill: string): void;
  line(x1: number, y1: number, x2: number, y2: number, stroke: string): void;
}

/** A figure's title, its table (when it is one) and its legend; its graph is drawn by the caller. */
function paintFigure(p: Painter, { f, x, y }: Placed, family: string): number {
  if (f.title) {
    p.text(x, y + 13, f.title, `600 13px ${family}`);
    y += FIG_TITLE;
  }
  const top = y;
  if (f.table) {
    const t = f.table;
    for (const r of t.rows) {
      let cx = x;
      r.cells.forEach((c, i) => {
        const w = t.widths[i] ?? 0;
        const font = `${c.bold ? '600 ' : ''}${CELL_FONT_PX}px ${family}`;
        c.lines.forEach((l, k) => {
          const ly = y + CELL_PAD + (k + 1) * CELL_LINE - 4;
          if (c.align === 'right') p.text(cx + w - CELL_PAD, ly, l, font, 'end');
          else p.text(cx + CELL_PAD, ly, l, font);
        });
        cx += w;
      });
      y += r.height;
      p.line(x, y, x + f.width, y, t.rule);
    }
  }
  y = top + f.height;
  for (const line of f.legend) {
    for (const item of line.items) {
      let lx = x + item.x;
      if (item.swatch) {
        p.rect(lx, y + 4, SWATCH, SWATCH, item.swatch);
        lx += SWATCH + 4;
      }
      p.text(lx, y + 13, item.text, `${LEGEND_FONT_PX}px ${family}`);
    }
    y += LEGEND_LINE;
  }
  return top;
}

/** One SVG document holding the view's figures under a title. */
export function exportSvg(root: Element, title: string): { svg: string; width: number; height: number } {
  const figs = figures(root);
  if (figs.length === 0) throw new Error('this view has no figure to export: use the Markdown summary');
  const { placed, width, height } = place(figs);
  const ns = 'http://www.w3.org/2000/svg';
  const doc = document.implementation.createDocument(ns, 'svg', null);
  const svg = doc.documentElement;
  svg.setAttribute('xmlns', ns);
  svg.setAttribute('width', String(width));
  svg.setAttribute('height', String(height));
  svg.setAttribute('viewBox', `0 0 ${width} ${height}`);
  const body = getComputedStyle(document.body);
  const bg = doc.createElementNS(ns, 'rect');
  bg.setAttribute('width', '100%');
  bg.setAttribute('height', '100%');
  bg.setAttribute('fill', body.backgroundColor || '#ffffff');
  svg.appendChild(bg);
  const painter: Painter = {
    text(x, y, s, font, anchor) {
      const el = doc.createElementNS(ns, 'text');
      el.setAttribute('x', String(x));
      el.setAttribute('y', String(y));
      if (anchor === 'end') el.setAttribute('text-anchor', 'end');
      el.setAttribute('style', `font: ${font}; fill: ${body.color}`);
      el.textContent = s;
      svg.appendChild(el);
    },
    rect(x, y, w, h, fill) {
      const r = doc.createElementNS(ns, 'rect');
      r.setAttribute('x', String(x));
      r.setAttribute('y', String(y));
      r.setAttribute('width', String(w));
      r.setAttribute('height', String(h));
      r.setAttribute('fill', fill);
      svg.appendChild(r);
    },
    line(x1, y1, x2, y2, stroke) {
      const l = doc.createElementNS(ns, 'line');
      l.setAttribute('x1', String(x1));
      l.setAttribute('y1', String(y1));
      l.setAttribute('x2', String(x2));
      l.setAttribute('y2', String(y2));
      l.setAttribute('stroke', stroke);
      svg.appendChild(l);
    },
  };
  painter.text(GAP, GAP + 8, title, `600 15px ${body.fontFamily}`);
  for (const at of placed) {
    const { f, x } = at;
    const y = paintFigure(painter, at, body.fontFamily);
    if (f.el instanceof SVGSVGElement) {
      const c = inlineSvg(f.el);
      c.setAttribute('x', String(x));
      c.setAttribute('y', String(y));
      c.setAttribute('width', String(f.width));
      c.setAttribute('height', String(f.height));
      svg.appendChild(doc.importNode(c, true));
    } else if (f.el instanceof HTMLCanvasElement) {
      const img = doc.createElementNS(ns, 'image');
      img.setAttribute('x', String(x));
      img.setAttribute('y', String(y));
      img.setAttribute('width', String(f.width));
      img.setAttribute('height', String(f.height));
      // The canvas's pixels as a PNG data URL, under both names: SVG 2 readers (browsers) use
      // href, SVG 1.1 ones (librsvg before 2.52, Inkscape 0.92, many converters) only xlink:href.
      const png = f.el.toDataURL('image/png');
      img.setAttribute('href', png);
      img.setAttributeNS(XLINK, 'xlink:href', png);
      img.setAttribute('preserveAspectRatio', 'none');
      svg.appendChild(img);
    }
  }
  return { svg: new XMLSerializer().serializeToString(doc), width, height };
}

function loadImage(url: string): Promise<HTMLImageElement> {
  return new Promise((resolve, reject) => {
    const img = new Image();
    img.onload = () => resolve(img);
    img.onerror = () => reject(new Error('could not rasterise a chart'));
    img.src = url;
  });
}

/**
 * The same figures as a PNG. Each SVG is rasterised on its own (it holds no images, so the
 * canvas stays exportable), canvases are copied pixel for pixel and tables drawn as text.
 */
export async function exportPng(root: Element, title: string, scale = globalThis.devicePixelRatio || 1): Promise<Blob> {
  const figs = figures(root);
  if (figs.length === 0) throw new Error('this view has no figure to export: use the Markdown summary');
  const { placed, width, height } = place(figs);
  const canvas = document.createElement('canvas');
  canvas.width = Math.round(width * scale);
  canvas.height = Math.round(height * scale);
  const ctx = canvas.getContext('2d');
  if (!ctx) throw new Error('this browser cannot draw on a canvas');
  ctx.scale(scale, scale);
  const body = getComputedStyle(document.body);
  ctx.fillStyle = body.backgroundColor || '#ffffff';
  ctx.fillRect(0, 0, width, height);
  const painter: Painter = {
    text(x, y, s, font, anchor) {
      ctx.fillStyle = body.color || '#000';
      ctx.font = font;
      ctx.textAlign = anchor === 'end' ? 'right' : 'left';
      ctx.fillText(s, x, y);
      ctx.textAlign = 'left';
    },
    rect(x, y, w, h, fill) {
      ctx.fillStyle = fill;
      ctx.fillRect(x, y, w, h);
    },
    line(x1, y1, x2, y2, stroke) {
      ctx.strokeStyle = stroke;
      ctx.lineWidth = 1;
      ctx.beginPath();
      ctx.moveTo(x1, y1 + 0.5);
      ctx.lineTo(x2, y2 + 0.5);
      ctx.stroke();
    },
  };
  painter.text(GAP, GAP + 8, title, `600 15px ${body.fontFamily}`);
  for (const at of placed) {
    const { f, x } = at;
    const y = paintFigure(painter, at, body.fontFamily);
    if (f.el instanceof SVGSVGElement) {
      const c = inlineSvg(f.el);
      c.setAttribute('xmlns', 'http://www.w3.org/2000/svg');
      c.setAttribute('width', String(f.width));
      c.setAttribute('height', String(f.height));
      const url = URL.createObjectURL(new Blob([new XMLSerializer().serializeToString(c)], { type: 'image/svg+xml' }));
      try {
        ctx.drawImage(await loadImage(url), x, y, f.width, f.height);
      } finally {
        URL.revokeObjectURL(url);
      }
    } else if (f.el instanceof HTMLCanvasElement) {
      ctx.drawImage(f.el, x, y, f.width, f.height);
    }
  }
  return new Promise((resolve, reject) => canvas.toBlob((b) => (b ? resolve(b) : reject(new Error('PNG encoding failed'))), 'image/png'));
}

/** Saves a Blob under a file name (the browser's download). */
export function download(blob: Blob, fileName: string) {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = fileName;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/** A file name from a trace source ("samples/x.numascope" -> "x"), safe for downloads. */
export function baseName(source: string): string {
  const last = source.split(/[?#]/)[0]!.split('/').pop() || 'trace';
  return last.replace(/\.numascope$/i, '').replace(/[^A-Za-z0-9._-]+/g, '_') || 'trace';
}
