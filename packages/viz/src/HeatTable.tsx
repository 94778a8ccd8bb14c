import { formatCount } from './format.js';

export interface HeatTableProps {
  caption: string;
  rowHeader: string;
  rowLabels: readonly string[];
  columnLabels: readonly string[];
  /** rows × columns, row-major. */
  values: ArrayLike<number>;
  format?: (v: number) => string;
  /** data-testid prefix: cells are `${testId}-${row}-${column}`. */
  testId: string;
  /** Optional keys for the rows' test ids (default: the row index). */
  rowKeys?: readonly (string | number)[];
  /** Optional keys for the columns' test ids (default: the column index). */
  columnKeys?: readonly (string | number)[];
}

/** A matrix of counts as a table, each cell shaded by its share of the largest; the numbers are always written. */
export function HeatTable({ caption, rowHeader, rowLabels, columnLabels, values, format = (v) => formatCount(v), testId, rowKeys, columnKeys }: HeatTableProps) {
  const n = columnLabels.length;
  let max = 0;
  for (let i = 0; i < rowLabels.length * n; i++) max = Math.max(max, values[i]!);
  return (
    <div className="table-scroll">
      <table className="ns-matrix ns-heat-table" data-testid={testId}>
        <caption>{caption}</caption>
        <thead>
          <tr>
            <th scope="col">{rowHeader}</th>
            {columnLabels.map((c) => (
              <th scope="col" key={c}>
                {c}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rowLabels.map((label, r) => (
            <tr key={rowKeys?.[r] ?? r}>
              <th scope="row">{label}</th>
              {columnLabels.map((_, c) => {
                const v = values[r * n + c]!;
                const shade = max > 0 ? (0.55 * v) / max : 0;
                return (
                  <td
                    key={c}
                    data-testid={`${testId}-${rowKeys?.[r] ?? r}-${columnKeys?.[c] ?? c}`}
                    data-value={v}
                    style={{ ['--ns-shade' as string]: shade.toFixed(3) }}
                    className={shade > 0.33 ? 'ns-heat-table__strong' : undefined}
                  >
                    {format(v)}
                  </td>
                );
              })}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
