import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import '@numascope/viz/viz.css';
import './ui/styles.css';
import { App } from './ui/App';
import { installIdleSignal } from './ui/idle';

installIdleSignal();
const root = document.getElementById('root');
if (!root) throw new Error('index.html has no #root element');
createRoot(root).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
