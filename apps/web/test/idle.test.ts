import { describe, expect, it } from 'vitest';
import { installIdleSignal, publishState } from '../src/ui/idle';

describe('idle signal', () => {
  it('publishes the state on the body and resolves waiters when idle', async () => {
    installIdleSignal();
    publishState('loading');
    expect(window.__numascopeIdle).toBe(false);
    const waiting = window.__numascopeWhenIdle!();
    publishState('ready');
    await expect(waiting).resolves.toBe('ready');
    expect(document.body.dataset.state).toBe('ready');
    expect(window.__numascopeIdle).toBe(true);
    expect(document.body.dataset.loads).toBe('1');

    publishState('loading');
    publishState('error');
    expect(document.body.dataset.loads).toBe('2');
    publishState('empty'); // not a finished load
    expect(document.body.dataset.loads).toBe('2');
    await expect(window.__numascopeWhenIdle!()).resolves.toBe('empty');
  });
});
