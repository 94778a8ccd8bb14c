/**
 * Long tables list every row (issue 32): a small table renders every row as it is; a long one
 * scrolls in its own box and renders only the rows in view, with spacers for the rest, and a
 * scroll reaches the last row. jsdom has no layout: the box's size is given here.
 */
import { act, cleanup, fireEvent, render, screen } from '@testing-library/react';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { VirtualTable } from '../src/ui/views/VirtualRows';

const box = { height: 560, width: 800 };
const restore: Array<() => void> = [];
beforeAll(() => {
  for (const prop of ['offsetHeight', 'clientHeight'] as const) {
    const d = Object.getOwnPropertyDescriptor(HTMLElement.prototype, prop);
    Object.defineProperty(HTMLElement.prototype, prop, { configurable: true, get: () => box.height });
    restore.push(() => d && Object.defineProperty(HTMLElement.prototype, prop, d));
  }
  const d = Object.getOwnPropertyDescriptor(HTMLElement.prototype, 'offsetWidth');
  Object.defineProperty(HTMLElement.prototype, 'offsetWidth', { configurable: true, get: () => box.width });
  restore.push(() => d && Object.defineProperty(HTMLElement.prototype, 'offsetWidth', d));
});
afterAll(() => restore.forEach((r) => r()));
afterEach(cleanup);

const table = (n: number) => (
  <VirtualTable
    testId="t"
    rows={Array.from({ length: n }, (_, i) => i)}
    columns={1}
    head={
      <thead>
        <tr>
          <th>row</th>
        </tr>
      </thead>
    }
    row={(i) => (
      <tr key={i} data-testid={`row-${i}`}>
        <td>{i}</td>
      </tr>
    )}
  />
);

describe('VirtualTable', () => {
  it('a small table renders every row', () => {
    render(table(50));
    expect(screen.getByTestId('t').getAttribute('data-rows')).toBe('50');
    expect(screen.getByTestId('t').hasAttribute('data-virtual')).toBe(false);
    expect(screen.getAllByTestId(/^row-/)).toHaveLength(50);
  });

  it('a long table renders the rows in view, and a scroll reaches the last one', async () => {
    render(table(5000));
    const t = screen.getByTestId('t');
    expect(t.getAttribute('data-rows')).toBe('5000');
    expect(t.getAttribute('data-virtual')).toBe('true');
    const shown = screen.getAllByTestId(/^row-/);
    expect(shown.length).toBeGreaterThan(10);
    expect(shown.length).toBeLessThan(200);
    expect(screen.getByTestId('row-0')).toBeTruthy();
    const scroll = screen.getByTestId('t-scroll');
    await act(async () => {
      scroll.scrollTop = 5000 * 28;
      fireEvent.scroll(scroll);
      await new Promise((r) => setTimeout(r, 50));
    });
    expect(screen.getByTestId('row-4999')).toBeTruthy();
    expect(screen.queryByTestId('row-0')).toBeNull();
  });

  it('a measured table hands each row its index and the measuring ref, and still reaches the last row', async () => {
    render(
      <VirtualTable
        testId="m"
        rows={Array.from({ length: 2000 }, (_, i) => i)}
        columns={1}
        eager={30}
        rowPx={56}
        measure
        head={
          <thead>
            <tr>
              <th>row</th>
            </tr>
          </thead>
        }
        row={(i, _index, m) => (
          <tr key={i} {...m} data-testid={`mrow-${i}`}>
            <td>{i}</td>
          </tr>
        )}
      />,
    );
    const shown = screen.getAllByTestId(/^mrow-/);
    expect(shown.length).toBeGreaterThan(5);
    expect(shown.length).toBeLessThan(100);
    expect(shown.map((r) => Number(r.dataset.index))).toEqual(shown.map((_, i) => i));
    const scroll = screen.getByTestId('m-scroll');
    await act(async () => {
      scroll.scrollTop = 2000 * 560;
      fireEvent.scroll(scroll);
      await new Promise((r) => setTimeout(r, 50));
    });
    expect(screen.getByTestId('mrow-1999').dataset.index).toBe('1999');
  });
});
