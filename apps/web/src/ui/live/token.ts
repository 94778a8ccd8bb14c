/**
 * The `numascope serve` token. It arrives in the page URL (`?token=…`, printed by the server)
 * and is only ever sent back to that server: as `Authorization: Bearer` on API requests, and in
 * the WebSocket URL (browsers cannot set headers there; the API documents `?token=` for it).
 * It is never logged, and share links / exported files are built from `withoutToken(…)`.
 */

/** The token in a query string, or null. Any non-empty value is returned: a wrong one gets the server's 401. */
export function tokenFromSearch(search: string): string | null {
  const value = new URLSearchParams(search).get('token');
  return value && value.trim() ? value.trim() : null;
}

/** The page's token (read from the address bar each time, so back/forward see the current one). */
export function pageToken(): string | null {
  return typeof window === 'undefined' ? null : tokenFromSearch(window.location.search);
}

/** `url` (absolute or a query string) with any `token` parameter removed, for share links. */
export function withoutToken(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  const hash = url.indexOf('#', q);
  const base = url.slice(0, q);
  const query = url.slice(q + 1, hash < 0 ? undefined : hash);
  const rest = hash < 0 ? '' : url.slice(hash);
  const p = new URLSearchParams(query);
  if (!p.has('token')) return url;
  p.delete('token');
  const out = p.toString().replace(/%2F/g, '/').replace(/%3A/g, ':');
  return base + (out ? `?${out}` : '') + rest;
}
