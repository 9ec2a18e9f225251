// A small history router: the console's pages live under /console/ (the gateway answers every
// such path with the app). A path change notifies the app, which renders the matching page.

const listeners = new Set<() => void>();

/** The current path with its query (never the fragment: invite tokens stay out of it). */
export const currentPath = (): string => location.pathname + location.search;

export function navigate(path: string, opts: { replace?: boolean } = {}): void {
  if (opts.replace) history.replaceState(null, "", path);
  else history.pushState(null, "", path);
  for (const fn of listeners) fn();
}

export function onNavigate(fn: () => void): () => void {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

addEventListener("popstate", () => {
  for (const fn of listeners) fn();
});

/** A link click inside the app: navigate without a reload (plain clicks only). */
export function linkClick(e: MouseEvent, path: string): void {
  if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  e.preventDefault();
  navigate(path);
}
