// In-flight attempts per destination, so that one slow or dead destination holds a bounded share
// of the worker's attempts and every other destination keeps the rest.

export interface Slots {
  /** Takes a slot of `key`, waiting up to `waitMs` for one to free; false when none did. */
  take(key: string, waitMs: number): Promise<boolean>;
  release(key: string): void;
}

export function createSlots(perKey: number): Slots {
  const busy = new Map<string, number>();
  const waiters = new Map<string, (() => void)[]>();

  const tryTake = (key: string) => {
    const n = busy.get(key) ?? 0;
    if (n >= perKey) return false;
    busy.set(key, n + 1);
    return true;
  };

  return {
    async take(key, waitMs) {
      const deadline = Date.now() + waitMs;
      for (;;) {
        if (tryTake(key)) return true;
        const left = deadline - Date.now();
        if (left <= 0) return false;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left);
          const list = waiters.get(key) ?? [];
          list.push(() => {
            clearTimeout(timer);
            resolve();
          });
          waiters.set(key, list);
        });
      }
    },
    release(key) {
      const n = (busy.get(key) ?? 1) - 1;
      if (n > 0) busy.set(key, n);
      else busy.delete(key);
      const list = waiters.get(key);
      const next = list?.shift();
      if (list && list.length === 0) waiters.delete(key);
      next?.();
    },
  };
}
