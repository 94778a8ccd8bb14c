import { Component } from 'react';
import type { ErrorInfo, ReactNode } from 'react';

interface Props {
  /** What was being shown, for the message. */
  source: string;
  fallback: (message: string) => ReactNode;
  children: ReactNode;
}

/**
 * If a view throws while rendering a trace, show a readable error instead of unmounting the
 * whole page. Keyed by the load in App, so opening another trace starts clean.
 */
export class RenderErrorBoundary extends Component<Props, { message: string | null }> {
  override state = { message: null as string | null };

  static getDerivedStateFromError(e: unknown) {
    return { message: e instanceof Error ? e.message : String(e) };
  }

  override componentDidCatch(error: Error, info: ErrorInfo) {
    console.error('numascope: a view failed to render', error, info.componentStack);
  }

  override render() {
    if (this.state.message !== null) {
      return this.props.fallback(
        `numascope could not draw ${this.props.source} (${this.state.message}). This is a bug in numascope; please report it with the file attached.`,
      );
    }
    return this.props.children;
  }
}
