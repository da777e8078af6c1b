import { h } from '../dom';

/**
 * Shows a secret in a modal dialog with a Copy button; nothing of it stays in the page once
 * the dialog closes. Resolves when it is closed.
 */
export function showSecretDialog(title: string, secret: string, note: string): Promise<void> {
  const code = h('code', { 'data-testid': 'secret-value' }, secret);
  const status = h('p', { role: 'status', class: 'muted' });
  const copy = h('button', { type: 'button' }, 'Copy');
  const close = h('button', { type: 'button', class: 'secondary' }, 'Close');
  const heading = h('h2', { id: 'secret-dialog-title' }, title);
  const dialog = h('dialog', { class: 'secret', 'aria-labelledby': 'secret-dialog-title' }, heading, h('p', {}, note), code, h('div', { class: 'actions' }, copy, close), status);
  copy.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(secret);
      status.textContent = 'Copied to the clipboard.';
    } catch {
      // Without clipboard access the text is selected, ready for the keyboard's copy.
      getSelection()?.selectAllChildren(code);
      status.textContent = 'Selected: press Ctrl+C (⌘C) to copy.';
    }
  });
  document.body.append(dialog);
  dialog.showModal();
  copy.focus();
  return new Promise((resolve) => {
    close.addEventListener('click', () => dialog.close());
    dialog.addEventListener('close', () => {
      dialog.remove();
      resolve();
    });
  });
}
