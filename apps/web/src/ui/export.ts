/**
 * Exporting what is on screen: the current view's figures (every element marked
 * `data-export` inside it: SVG charts and canvases) stacked into one SVG or one PNG, and
 * downloads of text and bytes. In the SVG a canvas (the address-space heatmap) is an <image>
 * holding its pixels as a PNG data URL.
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

interface Figure {
  el: Element;
  width: number;
  height: number;
}

function figures(root: Element): Figure[] {
  return [...root.querySelectorAll('[data-export]')]
    .map((el) => {
      const target = el.querySelector('svg, canvas') ?? el;
      const r = target.getBoundingClientRect();
      return { el: target, width: Math.round(r.width), height: Math.round(r.height) };
    })
    .filter((f) => f.width > 0 && f.height > 0 && (f.el instanceof SVGSVGElement || f.el instanceof HTMLCanvasElement));
}

const XLINK = 'http://www.w3.org/1999/xlink';
const GAP = 16;
const TITLE = 28;

/** One SVG document holding the view's figures, top to bottom, under a title. */
export function exportSvg(root: Element, title: string): { svg: string; width: number; height: number } {
  const figs = figures(root);
  const width = Math.max(320, ...figs.map((f) => f.width)) + 2 * GAP;
  const height = TITLE + figs.reduce((h, f) => h + f.height + GAP, GAP);
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
  let y = TITLE + GAP;
  for (const f of figs) {
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
    y += f.height + GAP;
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
  const width = Math.max(320, ...figs.map((f) => f.width)) + 2 * GAP;
  const height = TITLE + figs.reduce((h, f) => h + f.height + GAP, GAP);
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
    y += f.height + GAP;
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
