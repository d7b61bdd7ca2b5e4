// A short guided first look: four steps, each pointing at a part of the
// page. Shown once; closing it (or finishing it) keeps it from coming back.
// The Guide button shows it again.
import { $, el } from './dom.js';

const SEEN_KEY = 'os-placement-playground.tour';

const STEPS = [
  { target: 'object-block', title: 'Your manifest',
    text: 'Paste a Pod, a workload, a List or a Helm render here, open a file, or drop one on the editor. The examples menu above has more.' },
  { target: 'settings-block', title: 'The policy settings',
    text: 'Edit them as a form or as YAML: both views show the same settings, as the cluster would give them to the policy.' },
  { target: 'facts-block', title: 'Your cluster and registry',
    text: 'What a cluster would answer the policy: image platforms, RuntimeClasses, and the node pools as its Nodes. Paste kubectl get runtimeclasses -o yaml output as it is.' },
  { target: 'results', title: 'The verdict',
    text: 'Accepted, changed or rejected, each finding at its line, the patch, and where the pods land. Your work is kept in this browser; share it as a link or export it as a file.' },
];

/** Whether the first look was seen (or storage refuses to say). */
export function seen() {
  try { return localStorage.getItem(SEEN_KEY) === 'seen'; } catch { return true; }
}

function remember() {
  try { localStorage.setItem(SEEN_KEY, 'seen'); } catch { /* not kept */ }
}

/** Shows the first look from its first step. */
export function startTour() {
  $('tour')?.remove();
  let step = 0;
  const box = el('div', { id: 'tour', class: 'tour', role: 'dialog', 'aria-modal': 'false', 'aria-labelledby': 'tour-title', 'aria-describedby': 'tour-text' });
  const close = () => {
    remember();
    document.querySelector('.tour-target')?.classList.remove('tour-target');
    box.remove();
    document.removeEventListener('keydown', onKey);
    $('guide')?.focus();
  };
  const onKey = (e) => { if (e.key === 'Escape') close(); };
  const show = () => {
    const { target, title, text } = STEPS[step];
    document.querySelector('.tour-target')?.classList.remove('tour-target');
    const node = $(target);
    node?.classList.add('tour-target');
    if (node?.tagName === 'DETAILS') node.open = true;
    node?.scrollIntoView({ block: 'center' });
    const last = step === STEPS.length - 1;
    box.replaceChildren(
      el('p', { class: 'tour-step' }, `Step ${step + 1} of ${STEPS.length}`),
      el('h2', { id: 'tour-title' }, title),
      el('p', { id: 'tour-text' }, text),
      el('div', { class: 'tour-actions' },
        step > 0 ? el('button', { type: 'button', id: 'tour-back', onclick: () => { step--; show(); } }, 'Back') : null,
        el('button', { type: 'button', id: 'tour-next', class: 'primary', onclick: () => { if (last) close(); else { step++; show(); } } }, last ? 'Done' : 'Next'),
        el('button', { type: 'button', id: 'tour-close', onclick: close }, 'Close the guide')));
    $('tour-next').focus();
  };
  document.body.append(box);
  document.addEventListener('keydown', onKey);
  show();
}
