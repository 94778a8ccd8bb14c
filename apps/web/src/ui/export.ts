/**
 * Exporting what is on screen: the current view's figures (every element marked
 * `data-export` inside it: SVG charts and canvases) stacked into one SVG or one PNG, each under
 * its title (`data-export-title`) and over its legend, and downloads of text and bytes. In the
 * SVG a canvas (the address-space heatmap) is an <image> holding its pixels as a PNG data URL.
 *
 * The timeline under every view is not exported (it is the same strip on every view); a view
 * with no figure of its own (Recommendations) says so instead. A legend is the text of the elements marked
 * `data-export-legend` inside the figure's element, and of those marked
 * `data-export-legend-for="<its data-export name>"` anywhere in the view; list items are laid out
 * one after another, each with its colour swatch (a `.ns-swatch` child's background).
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

interface Figure {
  el: Element;
  width: number;
  height: number;
  title: string | null;
  legend: LegendLine[];
}

const XLINK = 'http://www.w3.org/1999/xlink';
const GAP = 16;
const TITLE = 28;
const FIG_TITLE = 20;
const LEGEND_LINE = 18;
const LEGEND_FONT_PX = 12;
const SWATCH = 10;

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
  return out;
}

let measureCtx: CanvasRenderingContext2D | null | undefined;
function textWidth(text: string, font: string): number {
  measureCtx ??= document.createElement('canvas').getContext('2d');
  if (!measureCtx) return text.length * LEGEND_FONT_PX * 0.6;
  measureCtx.font = font;
  return measureCtx.measureText(text).width;
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
    let run = '';
    for (const word of item.text.split(' ')) {
      const next = run ? `${run} ${word}` : word;
      if (run && textWidth(next, font) > width) {
        place({ text: run, swatch: null }, 0);
        lines.push(line);
        line = { items: [] };
        x = 0;
        run = word;
      } else run = next;
    }
    if (run) place({ text: run, swatch: null }, 14);
    lines.push(line);
    line = { items: [] };
    x = 0;
  }
  if (line.items.length > 0) lines.push(line);
  return lines;
}

function figureHeight(f: Figure): number {
  return (f.title ? FIG_TITLE : 0) + f.height + f.legend.length * LEGEND_LINE;
}

/** The view's own figures (never the timeline shared by every view: it is not what the view shows). */
export function figures(root: Element): Figure[] {
  const font = `${LEGEND_FONT_PX}px ${getComputedStyle(document.body).fontFamily}`;
  const all = [...root.querySelectorAll('[data-export]')].flatMap((container) => {
    const target = container.querySelector('svg, canvas') ?? container;
    const r = target.getBoundingClientRect();
    const width = Math.round(r.width);
    const height = Math.round(r.height);
    if (!(width > 0 && height > 0 && (target instanceof SVGSVGElement || target instanceof HTMLCanvasElement))) return [];
    const title = clean(container.getAttribute('data-export-title')) || null;
    return [{ name: container.getAttribute('data-export'), fig: { el: target, width, height, title, legend: layoutLegend(legendItems(container, root), Math.max(width, 320), font) } }];
  });
  return all.filter((f) => f.name !== 'timeline').map((f) => f.fig);
}

/** One SVG document holding the view's figures, top to bottom, under a title. */
export function exportSvg(root: Element, title: string): { svg: string; width: number; height: number } {
  const figs = figures(root);
  if (figs.length === 0) throw new Error('this view has no figure to export: use the Markdown summary');
  const width = Math.max(320, ...figs.map((f) => f.width)) + 2 * GAP;
  const height = TITLE + figs.reduce((h, f) => h + figureHeight(f) + GAP, GAP);
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
  const t = doc.createElementNS(ns, 'text');
  t.setAttribute('x', String(GAP));
  t.setAttribute('y', String(GAP + 8));
  t.setAttribute('style', `font: 600 15px ${body.fontFamily}; fill: ${body.color}`);
  t.textContent = title;
  svg.appendChild(t);
  const text = (x: number, y: number, s: string, style: string) => {
    const el = doc.createElementNS(ns, 'text');
    el.setAttribute('x', String(x));
    el.setAttribute('y', String(y));
    el.setAttribute('style', style);
    el.textContent = s;
    svg.appendChild(el);
  };
  let y = TITLE + GAP;
  for (const f of figs) {
    if (f.title) {
      text(GAP, y + 13, f.title, `font: 600 13px ${body.fontFamily}; fill: ${body.color}`);
      y += FIG_TITLE;
    }
    if (f.el instanceof SVGSVGElement) {
      const c = inlineSvg(f.el);
      c.setAttribute('x', String(GAP));
      c.setAttribute('y', String(y));
      c.setAttribute('width', String(f.width));
      c.setAttribute('height', String(f.height));
      svg.appendChild(doc.importNode(c, true));
    } else if (f.el instanceof HTMLCanvasElement) {
      const img = doc.createElementNS(ns, 'image');
      img.setAttribute('x', String(GAP));
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
    y += f.height;
    for (const line of f.legend) {
      for (const item of line.items) {
        let x = GAP + item.x;
        if (item.swatch) {
          const r = doc.createElementNS(ns, 'rect');
          r.setAttribute('x', String(x));
          r.setAttribute('y', String(y + 4));
          r.setAttribute('width', String(SWATCH));
          r.setAttribute('height', String(SWATCH));
          r.setAttribute('fill', item.swatch);
          svg.appendChild(r);
          x += SWATCH + 4;
        }
        text(x, y + 13, item.text, `font: ${LEGEND_FONT_PX}px ${body.fontFamily}; fill: ${body.color}`);
      }
      y += LEGEND_LINE;
    }
    y += GAP;
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
 * canvas stays exportable) and canvases are copied pixel for pixel.
 */
export async function exportPng(root: Element, title: string, scale = globalThis.devicePixelRatio || 1): Promise<Blob> {
  const figs = figures(root);
  if (figs.length === 0) throw new Error('this view has no figure to export: use the Markdown summary');
  const width = Math.max(320, ...figs.map((f) => f.width)) + 2 * GAP;
  const height = TITLE + figs.reduce((h, f) => h + figureHeight(f) + GAP, GAP);
  const canvas = document.createElement('canvas');
  canvas.width = Math.round(width * scale);
  canvas.height = Math.round(height * scale);
  const ctx = canvas.getContext('2d');
  if (!ctx) throw new Error('this browser cannot draw on a canvas');
  ctx.scale(scale, scale);
  const body = getComputedStyle(document.body);
  ctx.fillStyle = body.backgroundColor || '#ffffff';
  ctx.fillRect(0, 0, width, height);
  ctx.fillStyle = body.color || '#000';
  ctx.font = `600 15px ${body.fontFamily}`;
  ctx.fillText(title, GAP, GAP + 8);
  let y = TITLE + GAP;
  for (const f of figs) {
    if (f.title) {
      ctx.fillStyle = body.color || '#000';
      ctx.font = `600 13px ${body.fontFamily}`;
      ctx.fillText(f.title, GAP, y + 13);
      y += FIG_TITLE;
    }
    if (f.el instanceof SVGSVGElement) {
      const c = inlineSvg(f.el);
      c.setAttribute('xmlns', 'http://www.w3.org/2000/svg');
      c.setAttribute('width', String(f.width));
      c.setAttribute('height', String(f.height));
      const url = URL.createObjectURL(new Blob([new XMLSerializer().serializeToString(c)], { type: 'image/svg+xml' }));
      try {
        ctx.drawImage(await loadImage(url), GAP, y, f.width, f.height);
      } finally {
        URL.revokeObjectURL(url);
      }
    } else if (f.el instanceof HTMLCanvasElement) {
      ctx.drawImage(f.el, GAP, y, f.width, f.height);
    }
    y += f.height;
    ctx.font = `${LEGEND_FONT_PX}px ${body.fontFamily}`;
    for (const line of f.legend) {
      for (const item of line.items) {
        let x = GAP + item.x;
        if (item.swatch) {
          ctx.fillStyle = item.swatch;
          ctx.fillRect(x, y + 4, SWATCH, SWATCH);
          x += SWATCH + 4;
        }
        ctx.fillStyle = body.color || '#000';
        ctx.fillText(item.text, x, y + 13);
      }
      y += LEGEND_LINE;
    }
    y += GAP;
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
