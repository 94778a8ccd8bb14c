/** Pieces the engine views share: metric cards with provenance badges, progress, the no-access notice. */
import { useEffect, useState } from 'react';
import { formatTimeUs } from '@numascope/policy-engine';
import { formatCount, formatDurationUs } from '@numascope/viz';
import type { AnalysisView, PolicyView } from '../../worker/analysis';
import type { AnalysisState } from '../hooks/use-analysis';
import { BASELINES, POLICY_DESCRIPTORS, policyLabel } from '@numascope/policy-engine';
import { METRIC_INFO, betterText } from '../selectors/metric-info';
import type { MetricKey } from '../selectors/metric-info';
import { policyMetrics, predictionBadge } from '../selectors/policy';
import type { BadgeStatus, MetricSpec } from '../selectors/policy';

export function Badge({ status, reason }: { status: BadgeStatus; reason: string }) {
  return (
    <span className="ns-badge" data-status={status} data-testid="metric-badge" data-badge={status}>
      <span className="ns-badge__body" tabIndex={0} title={reason}>
        <span className="ns-badge__status">{status}</span>
      </span>
      <span role="tooltip" className="ns-badge__tooltip">
        {reason}
      </span>
    </span>
  );
}

/**
 * A metric's name with what it is: its unit and which direction is better as a caption, and the
 * one-sentence definition for assistive technology and as a tooltip.
 */
export function MetricLabel({ metricKey, label }: { metricKey: string; label: string }) {
  const info = metricKey in METRIC_INFO ? METRIC_INFO[metricKey as MetricKey] : null;
  if (!info) return <span>{label}</span>;
  const better = betterText(info);
  return (
    <span className="metric-label">
      <span className="metric-label__name" title={info.what}>
        {label}
      </span>
      <span className="ns-sr-only">: {info.what}.</span>{' '}
      <span className="metric-label__unit ns-muted" data-testid="metric-unit">
        {info.unit}
        {better ? ` · ${better}` : ''}
      </span>
    </span>
  );
}

export function MetricCards({ analysis, policy, extra = [] }: { analysis: AnalysisView; policy: PolicyView; extra?: MetricSpec[] }) {
  const counterBadge = (key: MetricKey): { status: BadgeStatus; reason: string } =>
    analysis.synthetic
      ? { status: 'synthetic', reason: `counters of a synthetic recording (not measured): ${METRIC_INFO[key].what.toLowerCase()}` }
      : { status: 'measured', reason: `measured: ${METRIC_INFO[key].basis}, for the observed placement only (not predicted)` };
  return (
    <dl className="metric-cards" data-testid="metric-cards" data-policy={policy.policy}>
      {[...policyMetrics(policy), ...extra].map((m) => (
        <div key={m.key} className="metric-card" data-testid={`metric-${m.key}`}>
          <dt>
            <MetricLabel metricKey={m.key} label={m.label} /> <Badge {...predictionBadge(analysis, m.key)} />
          </dt>
          <dd data-value={m.value}>{m.text}</dd>
        </div>
      ))}
      {policy.l3Mpki !== null && (
        <div className="metric-card" data-testid="metric-l3Mpki">
          <dt>
            <MetricLabel metricKey="l3Mpki" label="L3 MPKI" /> <Badge {...counterBadge('l3Mpki')} />
          </dt>
          <dd data-value={policy.l3Mpki}>{policy.l3Mpki.toFixed(2)}</dd>
        </div>
      )}
      {policy.ipc !== null && (
        <div className="metric-card" data-testid="metric-ipc">
          <dt>
            <MetricLabel metricKey="ipc" label="IPC" /> <Badge {...counterBadge('ipc')} />
          </dt>
          <dd data-value={policy.ipc}>{policy.ipc.toFixed(2)}</dd>
        </div>
      )}
    </dl>
  );
}

/**
 * What the predictions are and what they are measured against: the headline (steady state), the
 * recording's real duration, and the baseline, which the user can switch (observed / first-touch).
 */
/** Replay windows offered besides the engine's own choice, ms. */
export const WINDOW_CHOICES_MS = [10, 25, 50, 100, 200, 500, 1000, 2000] as const;

export function PredictionBasis({
  analysis,
  onBaseline,
  windowMs = null,
  onWindow,
  accessRates = null,
  onAccessRates,
}: {
  analysis: AnalysisView;
  onBaseline?: (base: (typeof BASELINES)[number]) => void;
  /** The window asked for (the URL's `win`), null = the engine's default. */
  windowMs?: number | null;
  onWindow?: (ms: number | null) => void;
  /** Access rates asked for (the URL's `rates`), null = the engine's default (typical). */
  accessRates?: 'bandwidth-bound' | null;
  onAccessRates?: (rates: 'bandwidth-bound' | null) => void;
}) {
  const a = analysis;
  const choices = [...new Set([...WINDOW_CHOICES_MS, ...(windowMs !== null ? [windowMs] : [])])].sort((x, y) => x - y);
  return (
    <div className="prediction-basis" data-testid="prediction-basis" data-baseline={a.baseline} data-headline={a.headline} data-recorded-us={a.recordedUs}>
      <div className="prediction-basis__row">
        <label>
          Speedups against{' '}
          <select
            data-testid="baseline-select"
            value={a.baseline}
            disabled={!onBaseline}
            onChange={(e) => onBaseline?.(e.target.value as (typeof BASELINES)[number])}
          >
            {BASELINES.map((b) => (
              <option key={b} value={b}>
                {b === 'observed' ? 'Observed (what actually ran)' : 'First-touch (Linux default)'}
              </option>
            ))}
          </select>
        </label>
        <label>
          Replay window{' '}
          <select
            data-testid="window-select"
            value={windowMs === null ? 'auto' : String(windowMs)}
            disabled={!onWindow}
            onChange={(e) => onWindow?.(e.target.value === 'auto' ? null : Number(e.target.value))}
          >
            <option value="auto">engine default ({formatTimeUs(a.windowMs * 1000)})</option>
            {choices.map((ms) => (
              <option key={ms} value={String(ms)}>
                {formatTimeUs(ms * 1000)}
              </option>
            ))}
          </select>
        </label>
        {/* Hinting faults say which thread touched which page, not how often: the rate is assumed, and the user may say the program streams. */}
        {a.accessRates !== null && (
          <label>
            Access rates{' '}
            <select
              data-testid="access-rates-select"
              value={accessRates ?? 'typical'}
              disabled={!onAccessRates}
              onChange={(e) => onAccessRates?.(e.target.value === 'bandwidth-bound' ? 'bandwidth-bound' : null)}
            >
              <option value="typical">typical (memory-bound code)</option>
              <option value="bandwidth-bound">bandwidth-bound (streaming code: you say so)</option>
            </select>
          </label>
        )}
        <span className="ns-muted small">
          {a.headline === 'steady-state' ? 'steady state' : 'replay'} · {a.windowCount} windows · the recording took{' '}
          <strong data-testid="recorded-duration" data-value={a.recordedUs}>{formatTimeUs(a.recordedUs)}</strong>
          {a.range ? ' (the replayed time range)' : ''}
        </span>
        {a.accessRates === 'bandwidth-bound' && (
          <span className="notice notice--estimate small" data-testid="access-rates-note">
            <strong>Assumed bandwidth-bound: your statement, not a measurement.</strong> Each thread is taken to stream with its core&rsquo;s
            outstanding-miss limit in flight (engine <code>accessRates: bandwidth-bound</code>); NUMA hinting faults give no access rate.
          </span>
        )}
        {a.baselineNote && (
          <span className="ns-muted small" data-testid="baseline-note">
            {a.baselineNote}
          </span>
        )}
        <details className="prediction-basis__more" data-testid="prediction-basis-more">
          <summary>How to read these predictions</summary>
          <p className="ns-muted small">
            {a.headline === 'steady-state' ? (
              <>
                <strong>Steady state:</strong> each policy&rsquo;s converged placement held over the whole recording (&ldquo;had it been in force from
                the start&rdquo;); the window-by-window replay is shown as the transient.
              </>
            ) : (
              <>
                <strong>Replay:</strong> each policy window by window, with its moves and their migration cost.
              </>
            )}{' '}
            Predicted times are anchored on the recording&rsquo;s duration (what actually ran takes that long). Speedup = the baseline&rsquo;s
            predicted time / the policy&rsquo;s.
          </p>
          <p className="ns-muted small" data-testid="window-note" data-window-ms={a.windowMs} data-windows={a.windowCount}>
            {a.windowCount} window{a.windowCount === 1 ? '' : 's'} of {formatTimeUs(a.windowMs * 1000)}: policies decide once per window (Carrefour&rsquo;s rounds, AsymSched&rsquo;s
            placements, AutoNUMA&rsquo;s scans), so their predictions depend on it; a shorter window reacts faster, a longer one sees more accesses per
            decision.
          </p>
        </details>
      </div>
    </div>
  );
}

export function Progress({ state }: { state: Extract<AnalysisState, { status: 'running' }> }) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 250);
    return () => clearInterval(t);
  }, []);
  const p = state.progress;
  return (
    <div className="engine-progress" role="status" data-testid="engine-progress" data-done={p?.done ?? ''} data-total={p?.total ?? ''}>
      {p ? <progress aria-label="Replaying policies" value={p.done} max={p.total} /> : <progress aria-label="Replaying policies" />} {state.label}{' '}
      <span data-testid="engine-progress-text">
        {p ? `window ${formatCount(p.done)} of ${formatCount(p.total)} (${Math.floor((p.done / Math.max(1, p.total)) * 100)}%)` : 'waiting for the engine'}
      </span>{' '}
      <span className="ns-muted">{((now - state.startedAt) / 1000).toFixed(1)} s</span>
    </div>
  );
}

/**
 * Says that an analysis replayed only part of the recording (the brushed time range, widened to
 * whole engine windows), with a way back to the whole trace.
 */
export function EngineRange({ analysis, onClear }: { analysis: AnalysisView; onClear?: () => void }) {
  const r = analysis.range;
  if (!r) return null;
  const last = r.firstWindow + r.windows - 1;
  return (
    <p className="notice notice--range" data-testid="engine-range" data-from={r.fromUs} data-to={r.toUs} data-first-window={r.firstWindow} data-windows={r.windows} data-total-windows={r.totalWindows}>
      <strong>Time range only:</strong> these predictions replay {formatDurationUs(r.fromUs)} – {formatDurationUs(r.toUs)} of the recording
      (windows {r.firstWindow}–{last} of {r.totalWindows}: the {analysis.windowMs} ms windows that overlap the selected {formatDurationUs(r.requestedFromUs)} –{' '}
      {formatDurationUs(r.requestedToUs)}).
      {onClear && (
        <>
          {' '}
          <button type="button" className="link-button" onClick={onClear} data-testid="engine-range-clear">
            Analyse the whole trace
          </button>
        </>
      )}
    </p>
  );
}

/** The engine refused: for page-fault-only traces, say why and offer the placement-only estimate. */
export function EngineRefusal({ error, onEstimate }: { error: { code: string; message: string }; onEstimate: () => void }) {
  if (error.code === 'no-access-data') {
    return (
      <div className="notice notice--warn" role="alert" data-testid="no-access-data">
        <p>
          <strong>This recording has no memory-access samples:</strong> it was made without IBS or PEBS, so it says where pages were first
          touched but not how often they are accessed. The engine cannot predict traffic from it.
        </p>
        <p className="ns-muted">{error.message}</p>
        <p>
          <button type="button" onClick={onEstimate} data-testid="use-estimate">
            Use the placement-only estimate
          </button>{' '}
          assumes every thread accesses every page equally (engine option <code>access-estimate: uniform</code>). Everything it shows is
          labelled ESTIMATED; {POLICY_DESCRIPTORS.filter((d) => d.needsMeasuredAccesses).map((d) => d.label).join(', ')} need measured access rates and are not
          replayed on it.
        </p>
      </div>
    );
  }
  return (
    <div className="notice notice--error" role="alert" data-testid="engine-error" data-code={error.code}>
      <p>
        <strong>The policy engine refused this analysis</strong> ({error.code}): {error.message}
      </p>
    </div>
  );
}

export function EstimateBanner({ analysis, onExit }: { analysis: AnalysisView; onExit?: () => void }) {
  if (analysis.accessSource === 'hinting-faults') {
    return (
      <div className="notice notice--estimate" data-testid="hinting-banner">
        <strong>NUMA HINTING FAULTS</strong> — this recording has no PMU samples; its access samples are the kernel&rsquo;s NUMA hinting
        faults (automatic NUMA balancing was on). They say which thread touched which page, about once per page per scan pass, not how
        often: node shares, local access ratio and imbalance follow from them; rates, latencies and speedups are relative. Windows of{' '}
        {analysis.windowMs} ms span several scan passes.
      </div>
    );
  }
  if (!analysis.estimate) return null;
  return (
    <div className="notice notice--estimate" data-testid="estimate-banner" data-auto={analysis.estimateAuto ? 'true' : 'false'}>
      <strong>ESTIMATED</strong> — placement-only estimate{analysis.estimateAuto ? ', the analysis this recording allows' : ''}: this recording has no
      memory-access samples, so accesses were assumed uniform (every thread reads every page equally). Page and thread placement are measured; traffic split follows from the assumption; rates and
      latencies are not meaningful. Policies that can run on it: {POLICY_DESCRIPTORS.filter((d) => d.inDefaultSet && !d.needsMeasuredAccesses).map((d) => d.label).join(', ')}.
      {onExit && !analysis.estimateAuto && (
        <>
          {' '}
          <button type="button" className="link-button" onClick={onExit}>
            Turn the estimate off
          </button>
        </>
      )}
    </div>
  );
}

export function UnavailableList({ analysis }: { analysis: AnalysisView }) {
  if (analysis.unavailable.length === 0) return null;
  return (
    <ul className="unavailable-list" data-testid="unavailable-policies">
      {analysis.unavailable.map((u) => (
        <li key={u.policy} data-policy={u.policy}>
          <span className="ns-badge" data-status="unavailable">
            <span className="ns-badge__body">
              <span className="ns-badge__status">unavailable</span>
            </span>
          </span>{' '}
          <strong>{policyLabel(u.policy)}</strong>: {u.reason}
        </li>
      ))}
    </ul>
  );
}
