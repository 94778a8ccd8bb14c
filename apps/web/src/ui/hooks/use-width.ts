import { useLayoutEffect, useState } from 'react';
import type { RefObject } from 'react';

/** The element's content width in CSS pixels, kept current; `fallback` where layout is unknown (tests). */
export function useWidth(ref: RefObject<HTMLElement | null>, fallback = 960): number {
  const [width, setWidth] = useState(fallback);
  useLayoutEffect(() => {
    const el = ref.current;
    if (!el) return;
    const measure = () => {
      const w = Math.floor(el.getBoundingClientRect().width);
      if (w > 0) setWidth(w);
    };
    measure();
    if (typeof ResizeObserver !== 'function') return;
    const ro = new ResizeObserver(measure);
    ro.observe(el);
    return () => ro.disconnect();
  }, [ref]);
  return width;
}
